// Ordered (live/UI) subscriptions: start positions, a server restart mid-stream, filter
// changes that keep the position, close(), and the catch-up seam.
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ConnectionClosedError,
  connect,
  createEvent,
  newId,
  OptionsError,
  type Delivery,
  type Jetloop,
  type JetloopEvent,
  type Subscription,
} from "../../src/index.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";
import { startServer } from "../harness/server.js";
import { sleep, waitFor } from "../harness/async.js";
import { Reader, TIMEOUT } from "../harness/reader.js";


/** A loop's StepDone: small, enduring, easy to tell apart by eventId. */
function step(sessionId: string, loopId: string): JetloopEvent {
  return createEvent("StepDone", { sessionId, loopId, turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: "x" }] }] });
}

async function publishSteps(bus: Jetloop, sessionId: string, loopId: string, n: number): Promise<number[]> {
  const seqs: number[] = [];
  for (let i = 0; i < n; i++) seqs.push((await bus.publish(step(sessionId, loopId))).journalSeq);
  return seqs;
}

const seqsOf = (ds: readonly Delivery<JetloopEvent>[]) => ds.map((d) => d.journalSeq);

/**
 * Publishes a sentinel (a step of the session and loop, which the subscriptions select)
 * and returns a check for a reader: what came before it, which must be nothing.
 */
async function sentinel(bus: Jetloop, sessionId: string, loopId: string): Promise<(d: Delivery<JetloopEvent>) => boolean> {
  const e = step(sessionId, loopId);
  await bus.publish(e);
  return (d) => d.event.eventId === e.eventId;
}

describe("ordered subscriptions on the shared server", () => {
  let bus: Jetloop;
  const subs: Subscription<JetloopEvent>[] = [];
  const open = async (...args: Parameters<Jetloop["subscribeEvents"]>) => {
    const sub = await bus.subscribeEvents(...args);
    subs.push(sub);
    return sub;
  };

  beforeAll(async () => {
    bus = await connect({ servers: natsServers(), namespace: uniqueNamespace() });
    await bus.provision();
  });

  afterAll(async () => {
    for (const s of subs) await s.close();
    // This file's stream goes with it.
    await (await bus?.jetstreamManager())?.streams.delete(bus.stream).catch(() => undefined);
    await bus?.close();
  });

  describe("start positions", () => {
    const session = newId();
    const loop = newId();
    let before: number[];
    let after: number[];
    let time: Date;
    let subNew: Subscription<JetloopEvent>;
    let subDefault: Subscription<JetloopEvent>;

    beforeAll(async () => {
      before = await publishSteps(bus, session, loop, 3);
      // The server's stored times must differ either side of `time` (the claim is about time).
      await sleep(50);
      time = new Date();
      await sleep(50);
      const middle = await publishSteps(bus, session, loop, 2);
      before.push(...middle);
      subNew = await open({ sessions: [session], enduring: "all" }, { start: "new" });
      subDefault = await open({ sessions: [session], enduring: "all" });
      after = await publishSteps(bus, session, loop, 2);
    });

    /**
     * Nothing further came before a sentinel: one more event of the selection, published
     * now, is the next each reader hands over (an ordered read is in journal order). It
     * joins `after`, so the tests that follow count it.
     */
    const nothingBeforeSentinel = async (...readers: Reader<Delivery<JetloopEvent>>[]) => {
      const [sentinel] = await publishSteps(bus, session, loop, 1);
      after.push(sentinel!);
      for (const r of readers) expect((await r.one()).journalSeq, "nothing further before the sentinel").toBe(sentinel);
    };

    it('"new" (and the default) delivers only what is published after the subscription', async () => {
      const readers = [subNew, subDefault].map((sub) => new Reader(sub));
      for (const r of readers) expect(seqsOf(await r.take(2))).toEqual(after);
      await nothingBeforeSentinel(...readers);
    });

    it('"all" delivers the whole journal of the selection, then what follows', async () => {
      const r = new Reader(await open({ sessions: [session], enduring: "all" }, { start: "all" }));
      expect(seqsOf(await r.take(before.length + after.length))).toEqual([...before, ...after]);
      await nothingBeforeSentinel(r);
    });

    it("{ seq } starts at that journal sequence", async () => {
      const from = before[2]!;
      const r = new Reader(await open({ sessions: [session], enduring: "all" }, { start: { seq: from } }));
      expect(seqsOf(await r.take(before.length - 2 + after.length))).toEqual([...before.slice(2), ...after]);
      await nothingBeforeSentinel(r);
    });

    it("{ seq } beyond the end waits for that sequence", async () => {
      const next = after.at(-1)! + 2;
      const r = new Reader(await open({ sessions: [session], enduring: "all" }, { start: { seq: next } }));
      const more = await publishSteps(bus, session, loop, 3);
      expect(more[1]).toBe(next);
      expect(seqsOf(await r.take(2))).toEqual(more.slice(1));
      after.push(...more);
    });

    it("{ time } starts at the first event stored at or after that time", async () => {
      const r = new Reader(await open({ sessions: [session], enduring: "all" }, { start: { time } }));
      expect(seqsOf(await r.take(2 + after.length))).toEqual([...before.slice(3), ...after]);
      await nothingBeforeSentinel(r);
    });

    it("refuses invalid start positions", async () => {
      for (const start of [{ seq: 0 }, { seq: 1.5 }, { seq: -1 }, "first", { time: "yesterday" }]) {
        // Checked before anything reaches the server (thrown or rejected: either fails the await).
        await expect((async () => bus.subscribeEvents({ enduring: "all" }, { start: start as never }))()).rejects.toBeInstanceOf(OptionsError);
      }
    });
  });

  it('subscriptions opened together at "new" share one read of the journal position, and each starts after its open', async () => {
    const session = newId();
    const loop = newId();
    await publishSteps(bus, session, loop, 2);
    // The bus's own connection sees its JetStream API requests (same account, echo on).
    const infos: string[] = [];
    const watch = bus.nc.subscribe(`$JS.API.STREAM.INFO.${bus.stream}`, { callback: (_e, m) => void infos.push(m.subject) });
    await bus.nc.flush();
    const opened = await Promise.all(Array.from({ length: 10 }, () => open({ sessions: [session], enduring: "all" }, { start: "new" })));
    await bus.nc.flush();
    watch.unsubscribe();
    // One read for all ten, and no consumer: "new" has no history to read.
    expect(infos).toHaveLength(1);
    const after = await publishSteps(bus, session, loop, 2);
    const isLast = await sentinel(bus, session, loop);
    for (const sub of opened) {
      const r = new Reader(sub);
      expect(seqsOf(await r.take(2))).toEqual(after);
      expect(await r.before(isLast)).toEqual([]);
    }
  });

  describe("updateFilter", () => {
    it("adding and removing a loop keeps the position: nothing earlier again, the new loop's later events arrive", async () => {
      const session = newId();
      const a = newId();
      const b = newId();
      const sub = await open({ sessions: [session], enduring: { loops: [a] }, ephemeral: { loops: [a] } }, { start: "all" });
      const r = new Reader(sub);
      const coords = (loopId: string) => ({ sessionId: session, loopId, turnId: newId(), stepId: newId(), toolExecutionId: newId() });

      const a1 = await bus.publish(step(session, a));
      const b1 = await bus.publish(step(session, b));
      const a2 = await bus.publish(step(session, a));
      await bus.publish(createEvent("ToolCallStarted", { ...coords(b), toolName: "ignored" }));
      expect(seqsOf(await r.take(2))).toEqual([a1.journalSeq, a2.journalSeq]);
      expect(await r.before(await sentinel(bus, session, a)), "b1 and b's preview: not selected").toEqual([]);

      // Add loop b.
      await sub.updateFilter({ sessions: [session], enduring: { loops: [a, b] }, ephemeral: { loops: [a, b] } });
      expect(sub.filter.enduring).toEqual({ loops: [a, b] });
      const b2 = await bus.publish(step(session, b));
      const a3 = await bus.publish(step(session, a));
      const live = createEvent("ToolCallStarted", { ...coords(b), toolName: "bash" });
      await bus.publish(live);
      const got = await r.take(3);
      expect(seqsOf(got.filter((d) => d.journalSeq > 0))).toEqual([b2.journalSeq, a3.journalSeq]);
      expect(got.filter((d) => d.journalSeq === 0).map((d) => d.event.eventId)).toEqual([live.eventId]);
      expect(await r.before(await sentinel(bus, session, b)), "b1 (before the position) is not delivered").toEqual([]);
      expect(b1.journalSeq).toBeLessThan(a2.journalSeq);

      // Remove loop a.
      await sub.updateFilter({ sessions: [session], enduring: { loops: [b] }, ephemeral: { loops: [b] } });
      await bus.publish(step(session, a));
      await bus.publish(createEvent("ToolCallStarted", { ...coords(a), toolName: "ignored" }));
      const b3 = await bus.publish(step(session, b));
      expect(seqsOf(await r.take(1))).toEqual([b3.journalSeq]);
      expect(await r.before(await sentinel(bus, session, b)), "loop a's step and preview: no longer selected").toEqual([]);

      // Session-scoped events pass throughout.
      const stop = await bus.publish(createEvent("SessionStopped", { sessionId: session }));
      expect(seqsOf(await r.take(1))).toEqual([stop.journalSeq]);
      expect(sub.err()).toBeUndefined();
    });

    it("a change resumes after the last delivered event, including the new loop's events published in between", async () => {
      const session = newId();
      const a = newId();
      const b = newId();
      const sub = await open({ sessions: [session], enduring: { loops: [a] } }, { start: "all" });
      const r = new Reader(sub);
      const [a1] = await publishSteps(bus, session, a, 1);
      expect(seqsOf(await r.take(1))).toEqual([a1]);
      const [b1] = await publishSteps(bus, session, b, 1);
      await sub.updateFilter({ sessions: [session], enduring: { loops: [a, b] } });
      expect(seqsOf(await r.take(1))).toEqual([b1]);
      expect(await r.before(await sentinel(bus, session, a))).toEqual([]);
    });

    it("refuses a change that adds or removes the enduring or the ephemeral part, and keeps running", async () => {
      const session = newId();
      const a = newId();
      const sub = await open({ sessions: [session], enduring: { loops: [a] } }, { start: "all" });
      await expect(sub.updateFilter({ sessions: [session], enduring: { loops: [a] }, ephemeral: { loops: [a] } })).rejects.toBeInstanceOf(OptionsError);
      await expect(sub.updateFilter({ sessions: [session], ephemeral: { loops: [a] } })).rejects.toBeInstanceOf(OptionsError);
      await expect(sub.updateFilter({ sessions: [session], enduring: { loops: ["nope"] } })).rejects.toBeInstanceOf(OptionsError);
      const [a1] = await publishSteps(bus, session, a, 1);
      expect(seqsOf(await new Reader(sub).take(1))).toEqual([a1]);
    });
  });

  describe("close() and err()", () => {
    it("close() is idempotent, ends the iteration, and leaves err() undefined", async () => {
      const session = newId();
      const loop = newId();
      const sub = await open({ sessions: [session], enduring: "all", ephemeral: "all" }, { start: "all" });
      await publishSteps(bus, session, loop, 3);
      const r = new Reader(sub);
      expect(await r.take(1)).toHaveLength(1);
      await Promise.all([sub.close(), sub.close()]);
      await sub.close();
      expect(sub.closed).toBe(true);
      expect(sub.err()).toBeUndefined();
      // Buffered deliveries are dropped on an intentional close: the iteration just ends.
      expect(await r.next(2000)).toEqual({ done: true, value: undefined });
      for await (const _d of sub) expect.fail("a closed subscription yields nothing");
      // Nothing arrives after close, not even a live preview.
      await bus.publish(createEvent("ToolCallStarted", { sessionId: session, loopId: loop, turnId: newId(), stepId: newId(), toolExecutionId: newId(), toolName: "x" }));
      await publishSteps(bus, session, loop, 1);
      expect(await r.next(150)).toEqual({ done: true, value: undefined });
      expect(sub.err()).toBeUndefined();
    });

    it("breaking out of a for-await loop closes the subscription", async () => {
      const session = newId();
      const sub = await open({ sessions: [session], enduring: "all" }, { start: "all" });
      await publishSteps(bus, session, newId(), 2);
      let n = 0;
      for await (const _d of sub) {
        n++;
        break;
      }
      expect(n).toBe(1);
      expect(sub.closed).toBe(true);
      expect(sub.err()).toBeUndefined();
    });

    it("a connection closed under the subscription rejects its iteration with ConnectionClosedError, after what was buffered", async () => {
      const own = await connect({ servers: natsServers(), namespace: bus.namespace });
      const session = newId();
      const sub = await own.subscribeEvents({ sessions: [session], enduring: "all" }, { start: "all" });
      const seqs = await publishSteps(bus, session, newId(), 3);
      // The source has all three buffered, the reader has taken none: the server republished
      // each to the feed before acknowledging its publish, so a flush of this connection,
      // answered after what the server sent it before, returns once they are in the process.
      await own.nc.flush();
      const got: number[] = [];
      let failure: unknown;
      let polled = false;
      try {
        for await (const d of sub) {
          // The connection goes once the first delivery is in hand; the rest is buffered.
          if (!polled) {
            polled = true;
            await own.nc.close();
          }
          got.push(d.journalSeq);
        }
      } catch (e) {
        failure = e;
      }
      expect(got).toEqual(seqs);
      expect(failure).toBeInstanceOf(ConnectionClosedError);
      expect(sub.err(), "err() is the error the loop rejected with").toBe(failure);
      await sub.close();
      expect(sub.err(), "close() keeps the reason it had").toBe(failure);
      // After close() the iteration just ends.
      expect(await sub[Symbol.asyncIterator]().next()).toEqual({ done: true, value: undefined });
      await own.close();
    });

    it("closing the bus closes its subscriptions: their loops end quietly", async () => {
      const own = await connect({ servers: natsServers(), namespace: bus.namespace });
      const session = newId();
      const sub = await own.subscribeEvents({ sessions: [session], enduring: "all", ephemeral: "all" }, { start: "all" });
      const [s1] = await publishSteps(bus, session, newId(), 1);
      const got: number[] = [];
      const reading = (async () => {
        for await (const d of sub) {
          got.push(d.journalSeq);
          await own.close();
        }
      })();
      await expect(reading).resolves.toBeUndefined();
      expect(got).toEqual([s1]);
      expect(sub.closed).toBe(true);
      expect(sub.err()).toBeUndefined();
      await expect(own.subscribeEvents({ enduring: "all" })).rejects.toBeInstanceOf(ConnectionClosedError);
    });
  });

  describe("catch-up", () => {
    it("a subscription from { seq: 1 } while a producer keeps publishing sees every event exactly once, in order", async () => {
      const session = newId();
      const loops = [newId(), newId()];
      const published: number[] = [];
      const other = newId();
      // History first, then a producer that keeps going while the subscriber catches up.
      for (let i = 0; i < 150; i++) published.push((await bus.publish(step(session, loops[i % 2]!))).journalSeq);
      const total = 150 + 300;
      const producer = (async () => {
        for (let i = 0; i < 300; i++) {
          // Another session's traffic in between: it must not show up.
          if (i % 10 === 0) await bus.publish(step(other, loops[0]!));
          published.push((await bus.publish(step(session, loops[i % 2]!))).journalSeq);
          if (i % 25 === 0) await sleep(5);
        }
      })();
      const sub = await open({ sessions: [session], enduring: "all" }, { start: { seq: 1 }, batch: 16, enduringBuffer: 8 });
      const r = new Reader(sub);
      const got: number[] = [];
      while (got.length < total) {
        const d = await r.next(10_000);
        if (d === TIMEOUT || d.done) throw new Error(`stalled after ${got.length} of ${total}`);
        got.push(d.value.journalSeq);
      }
      await producer;
      expect(await r.before(await sentinel(bus, session, loops[0]!))).toEqual([]);
      expect(got).toEqual(published);
      expect(new Set(got).size).toBe(got.length);
      for (let i = 1; i < got.length; i++) expect(got[i]!).toBeGreaterThan(got[i - 1]!);
    });
  });
});

describe("ordered subscription across a server restart", () => {
  it("delivers all N+M events once each, in order, when the server restarts mid-stream", { timeout: 90_000 }, async () => {
    const server = await startServer();
    const ns = uniqueNamespace();
    const pub = await connect({ servers: server.url, namespace: ns, natsOptions: { reconnectTimeWait: 200 } });
    const subBus = await connect({ servers: server.url, namespace: ns, natsOptions: { reconnectTimeWait: 200 } });
    try {
      await pub.provision();
      const session = newId();
      const loop = newId();
      const N = 60;
      const M = 40;
      const first = await publishSteps(pub, session, loop, N);
      expect(first).toEqual(Array.from({ length: N }, (_, i) => i + 1));

      const reports: string[] = [];
      const sub = await subBus.subscribeEvents(
        { sessions: [session], enduring: { loops: [loop] } },
        { start: "all", batch: 8, enduringBuffer: 4, onReport: (rep) => reports.push(rep.kind) },
      );
      const got: number[] = [];
      const ids: string[] = [];
      const reading = (async () => {
        for await (const d of sub) {
          got.push(d.journalSeq);
          ids.push(d.event.eventId);
          // A slow reader: the consumer is mid-stream, with a backlog, when the server goes away.
          if (got.length < N) await sleep(15);
          if (got.length === N + M) break;
        }
      })();

      await waitFor("the reader to be mid-stream", () => got.length >= 10, 10_000, 5);
      expect(got.length).toBeLessThan(N);
      await server.restart();
      // Publish M more once the server is back; a retried publish reuses its event (same
      // message id), so a retry never stores an event twice.
      const second: number[] = [];
      for (let i = 0; i < M; i++) {
        const event = step(session, loop);
        second.push(await waitFor("publishing after the restart", async () => (await pub.publish(event)).journalSeq, 30_000, 200));
      }
      const published = Date.now();
      expect(second).toEqual(Array.from({ length: M }, (_, i) => N + i + 1));

      await Promise.race([
        reading,
        sleep(60_000).then(() => {
          throw new Error(`reader stalled at ${got.length} of ${N + M}`);
        }),
      ]);
      expect(got).toEqual(Array.from({ length: N + M }, (_, i) => i + 1));
      expect(new Set(ids).size).toBe(N + M);
      // Recovery is bounded well below NATS.js's default 30 s pull expiry (two missed heartbeats).
      expect(Date.now() - published).toBeLessThan(20_000);
      expect(sub.err()).toBeUndefined();
      expect(reports.filter((k) => k === "poison")).toEqual([]);
      // The subscription survived the restart rather than being replaced.
      const jsm = await jetstreamManager(pub.nc);
      expect((await jsm.streams.info(pub.stream)).state.last_seq).toBe(N + M);
    } finally {
      await subBus.close();
      await pub.close();
      await server.close();
    }
  });
});
