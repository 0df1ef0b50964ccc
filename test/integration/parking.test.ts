// Parking: durable deliveries that fail their last attempt, are terminated with a reason or
// are poison are kept in the parked store before they are terminated, and come back to
// that durable's handlers on `replay`, each once, in journal order.
import { jetstream, type JetStreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import {
  connect,
  createEvent,
  eventSubject,
  newId,
  ParkingError,
  type DurableDelivery,
  type DurableSubscription,
  type Jetloop,
  type JetloopEvent,
  type DurableSubscribeOptions,
  type SubscriptionReport,
} from "../../src/index.js";
import { natsServers, provisionedBus, uniqueNamespace } from "../harness/context.js";
import { sleep, waitFor } from "../harness/async.js";
import { Reader } from "../harness/reader.js";

type D = DurableDelivery<JetloopEvent>;

let bus: Jetloop;
let jsm: JetStreamManager;
const cleanup = provisionedBus((b, j) => void ([bus, jsm] = [b, j]));

/** A fresh session and durable per test, so tests never share a consumer or parked entries. */
function fixture() {
  const session = newId();
  const loop = newId();
  const durable = `p-${newId().slice(-12)}`;
  const reports: SubscriptionReport[] = [];
  const event = () => createEvent("PermissionDecided", { sessionId: session, loopId: loop, turnId: newId(), stepId: newId(), toolExecutionId: newId(), effect: "approve" });
  const publish = async (n: number) => {
    const seqs: number[] = [];
    for (let i = 0; i < n; i++) seqs.push((await bus.publish(event())).journalSeq);
    return seqs;
  };
  const subscribe = async (options: Omit<DurableSubscribeOptions, "durable"> = {}, on: Jetloop = bus, name = durable): Promise<DurableSubscription<JetloopEvent>> => {
    const sub = await on.subscribeEvents({ sessions: [session], enduring: "all" }, { onReport: (r) => reports.push(r), ...options, durable: name });
    cleanup.push(() => sub.close());
    return sub;
  };
  const parked = () => bus.parked.list(durable);
  const info = () => jsm.consumers.info(bus.stream, durable);
  cleanup.push(() => jsm.consumers.delete(bus.stream, durable), () => jsm.consumers.delete(bus.parked.stream, durable));
  return { session, loop, durable, reports, publish, subscribe, parked, info };
}

const seqsOf = (ds: readonly D[]) => ds.map((d) => d.journalSeq);

/**
 * A consumer once nothing is outstanding: nothing pending, nothing delivered and
 * unacknowledged. From then on the server has nothing to deliver (again), so "not again" is
 * this state, not a quiet window; `delivered.consumer_seq` counts every delivery, a
 * redelivery too. The durable's own consumer is on the journal; its replays come through a
 * consumer of the same name on the parked store.
 */
function settledOn(stream: string, durable: string) {
  return waitFor(
    `the consumer ${durable} on ${stream} settled`,
    async () => {
      const info = await jsm.consumers.info(stream, durable);
      return info.num_ack_pending === 0 && info.num_pending === 0 && info;
    },
    15_000,
    50,
  );
}
const parkedReports = (rs: readonly SubscriptionReport[]) => rs.filter((r) => r.kind === "parked");

describe.concurrent("parking", () => {
  it("a handler that fails every attempt: redelivered with backoff, parked with its error, gone from the durable; replay hands it back exactly once", async () => {
    const f = fixture();
    const [seq] = await f.publish(1);
    const r = new Reader(await f.subscribe({ maxDeliver: 3, backoffMs: [200, 400] }));
    const attempts: { count: number; at: number }[] = [];
    for (let i = 0; i < 3; i++) {
      const d = await r.one(5000);
      expect(d.journalSeq).toBe(seq);
      attempts.push({ count: d.deliveryCount, at: Date.now() });
      await d.fail(Object.assign(new Error("billing backend unavailable"), { code: "BACKEND_DOWN" }));
    }
    expect(attempts.map((a) => a.count)).toEqual([1, 2, 3]);
    // The backoff spaced the attempts: 200 ms, then 400 ms (a plain nak comes back within
    // milliseconds). The bounds leave the server's redelivery timer its slack: under load it
    // handed the second attempt back 139 ms after the first.
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(100);
    expect(attempts[2]!.at - attempts[1]!.at).toBeGreaterThanOrEqual(250);
    // Not handed a fourth time: one yielded would stay unacknowledged, and the consumer never
    // settle (the server may deliver it again before the park's term reaches it; jetloop
    // does not yield that one).
    await settledOn(bus.stream, f.durable);

    const [entry, ...more] = await f.parked();
    expect(more).toEqual([]);
    expect(entry).toMatchObject({
      durable: f.durable,
      journalSeq: seq,
      subject: eventSubject(bus.namespace, "journal", { sessionId: f.session, loopId: f.loop, family: "tool", type: "PermissionDecided" }),
      state: "held",
      reason: "max_deliver",
      errorCode: "BACKEND_DOWN",
      deliveryCount: 3,
    });
    expect(entry!.errorMessage).toBe("billing backend unavailable (delivery 3 of 3)");
    expect(Date.now() - entry!.parkedAt.getTime()).toBeLessThan(60_000);
    expect(entry!.data).toEqual((await jsm.streams.getMessage(bus.stream, { seq: seq! }))!.data);
    expect(parkedReports(f.reports)).toEqual([{ kind: "parked", journalSeq: seq, reason: "max_deliver", code: "BACKEND_DOWN" }]);
    const ci = await f.info();
    expect([ci.num_pending, ci.num_ack_pending]).toEqual([0, 0]);

    // The bug is fixed: replay brings it back to this durable, once.
    expect((await bus.parked.replay(f.durable, "all")).map((e) => e.journalSeq)).toEqual([seq]);
    const back = await r.one(5000);
    expect([back.journalSeq, back.replayed, back.deliveryCount]).toEqual([seq, true, 1]);
    await back.ack();
    expect(await f.parked()).toEqual([]);
    // Acknowledged: not again (one yielded again would stay unacknowledged; nothing is outstanding).
    await settledOn(bus.parked.stream, f.durable);
  });

  it("a replayed delivery its handler holds past the replay's ack wait is extended, not handed again", async () => {
    const f = fixture();
    const [seq] = await f.publish(1);
    // backoffMs [1000]: the durable's ack wait, and so the replay consumer's, is 1 s, longer
    // than a loaded machine's pauses, so that only a missing extension lets it expire.
    const ackWaitMs = 1000;
    const r = new Reader(await f.subscribe({ maxDeliver: 3, backoffMs: [ackWaitMs] }));
    (await r.one()).term("bug 42");
    await waitFor("parked", async () => (await f.parked()).length === 1, 10_000);
    await bus.parked.replay(f.durable, "all");
    const back = await r.one(5000);
    expect([back.journalSeq, back.replayed]).toEqual([seq, true]);
    // The "handler" works on it for four ack waits: the claim is about time passing. The
    // replay consumer's own count proves the extension: one delivery, none redelivered,
    // still outstanding.
    await sleep(4 * ackWaitMs);
    const held = await jsm.consumers.info(bus.parked.stream, f.durable);
    expect([held.delivered.consumer_seq, held.num_redelivered, held.num_ack_pending], "held past four ack waits: not handed again").toEqual([1, 0, 1]);
    await back.ack();
    expect(await f.parked()).toEqual([]);
    expect((await settledOn(bus.parked.stream, f.durable)).delivered.consumer_seq, "one delivery of the replay: extended, never handed again").toBe(1);
  });

  it("replays in journal order, only to the durable that parked them; --seq picks one", async () => {
    const f = fixture();
    const seqs = await f.publish(4);
    const other = await f.subscribe({}, bus, `${f.durable}-other`);
    cleanup.push(() => jsm.consumers.delete(bus.stream, `${f.durable}-other`), () => jsm.consumers.delete(bus.parked.stream, `${f.durable}-other`));
    const otherReader = new Reader(other);
    for (const d of await otherReader.take(4)) await d.ack();

    const r = new Reader(await f.subscribe({ maxDeliver: 1 }));
    for (const d of await r.take(4)) d.nak(); // maxDeliver 1: the first nak parks
    await waitFor("four parked", async () => (await f.parked()).length === 4, 10_000);
    expect((await f.parked()).map((e) => [e.journalSeq, e.reason, e.errorCode])).toEqual(seqs.map((s) => [s, "max_deliver", "NAK"]));

    expect((await bus.parked.replay(f.durable, { seq: seqs[2]! })).map((e) => e.journalSeq)).toEqual([seqs[2]]);
    const one = await r.one(5000);
    expect([one.journalSeq, one.replayed]).toEqual([seqs[2], true]);
    await one.ack();
    expect((await f.parked()).map((e) => e.journalSeq)).toEqual([seqs[0], seqs[1], seqs[3]]);

    await bus.parked.replay(f.durable, "all");
    const rest = await r.take(3);
    expect(seqsOf(rest)).toEqual([seqs[0], seqs[1], seqs[3]]);
    for (const d of rest) await d.ack();
    expect(await f.parked()).toEqual([]);
    expect((await settledOn(bus.parked.stream, f.durable)).delivered.consumer_seq, "one, then three, none again").toBe(4);
    // Another durable never sees a replay: its journal consumer delivered its four and has
    // nothing outstanding, and no replay is pending or was delivered for it.
    expect((await settledOn(bus.stream, `${f.durable}-other`)).delivered.consumer_seq).toBe(4);
    const otherReplays = await jsm.consumers.info(bus.parked.stream, `${f.durable}-other`).catch(() => undefined);
    expect([otherReplays?.num_pending ?? 0, otherReplays?.delivered.consumer_seq ?? 0], "another durable never sees a replay").toEqual([0, 0]);
  });

  it("term(reason) parks with the reason; a replayed event that fails again is parked again", async () => {
    const f = fixture();
    const [seq] = await f.publish(1);
    // A 1 s ack wait: the parking's round trips are extended, but a loaded machine's pause
    // longer than a 200 ms one let the server hand the journal copy again before the term.
    const r = new Reader(await f.subscribe({ maxDeliver: 2, backoffMs: [1000] }));
    (await r.one()).term("schema v3 not supported yet");
    await waitFor("parked", async () => (await f.parked()).length === 1, 10_000);
    expect(await f.parked()).toMatchObject([{ journalSeq: seq, reason: "terminated", errorCode: "TERMINATED", errorMessage: "schema v3 not supported yet", deliveryCount: 1 }]);

    await bus.parked.replay(f.durable, "all");
    const again = await r.one(5000);
    expect(again.replayed).toBe(true);
    await again.fail(new TypeError("still broken"));
    const last = await r.one(5000);
    expect([last.journalSeq, last.replayed, last.deliveryCount]).toEqual([seq, true, 2]);
    await last.fail(new TypeError("still broken"));
    const entries = await f.parked();
    expect(entries).toMatchObject([{ journalSeq: seq, state: "held", reason: "max_deliver", errorCode: "TypeError" }]);
    // Parked again, nothing more handed over: nothing is outstanding on the replay consumer.
    await settledOn(bus.parked.stream, f.durable);
  });

  it("an unsettled last attempt is parked when it expires, without reaching a handler again", async () => {
    const f = fixture();
    const [seq] = await f.publish(1);
    const r = new Reader(await f.subscribe({ maxDeliver: 2, backoffMs: [300], autoExtendMs: 0 }));
    expect((await r.take(2, 5000)).map((d) => d.deliveryCount)).toEqual([1, 2]);
    await waitFor("parked", async () => (await f.parked()).length === 1, 10_000);
    expect(await f.parked()).toMatchObject([{ journalSeq: seq, reason: "max_deliver", errorCode: "NOT_SETTLED", deliveryCount: 3 }]);
    // The third delivery parked unyielded: one yielded would stay unacknowledged, and the consumer never settle.
    await settledOn(bus.stream, f.durable);
  });

  it("poison is parked with its decode error, never yielded; replay reports it again; drop removes it", async () => {
    const f = fixture();
    const subject = eventSubject(bus.namespace, "journal", { sessionId: f.session, loopId: f.loop, family: "tool", type: "PermissionDecided" });
    const { seq } = await jetstream(bus.nc).publish(subject, new TextEncoder().encode('{"type":"PermissionDecided","v":1,'));
    const [good] = await f.publish(1);
    const sub = await f.subscribe();
    const r = new Reader(sub);
    const d = await r.one();
    expect(d.journalSeq).toBe(good);
    await d.ack();
    await waitFor("parked", async () => (await f.parked()).length === 1, 10_000);
    expect(await f.parked()).toMatchObject([{ journalSeq: seq, reason: "poison", errorCode: "EVENT_DECODE", state: "held", deliveryCount: 1 }]);
    expect(f.reports.filter((x) => x.kind === "poison").map((x) => x.journalSeq)).toEqual([seq]);

    await bus.parked.replay(f.durable, "all");
    await waitFor("reported again", () => f.reports.filter((x) => x.kind === "poison").length === 2, 10_000);
    await waitFor("parked again", async () => (await f.parked()).map((e) => e.state).join() === "held", 10_000);
    // Never yielded: the replay's one delivery is settled (parked again), and the subscription delivered only the good event.
    expect((await settledOn(bus.parked.stream, f.durable)).delivered.consumer_seq).toBe(1);
    expect(sub.stats()).toMatchObject({ poison: 2, parked: 2, delivered: 1 });

    expect((await bus.parked.drop(f.durable, "all")).map((e) => e.journalSeq)).toEqual([seq]);
    expect(await f.parked()).toEqual([]);
    expect(await bus.parked.show(f.durable, seq)).toBeUndefined();
  });

  it("when parking fails the original is not terminated: it stays pending and is parked once the store takes it", async () => {
    // A namespace of its own: the parked store is made full on purpose.
    const own = await connect({ servers: natsServers(), namespace: uniqueNamespace() });
    cleanup.push(async () => {
      for (const s of [own.stream, own.parked.stream]) await jsm.streams.delete(s).catch(() => undefined);
      await own.close();
    });
    await own.provision();
    const parkedStream = (await jsm.streams.info(own.parked.stream)).config;
    await jsm.streams.update(own.parked.stream, { ...parkedStream, max_msgs: 1 });
    await own.parked.park({ durable: "filler", journalSeq: 1, subject: "x", data: new Uint8Array(), deliveryCount: 1, reason: "terminated", errorCode: "X", errorMessage: "fills the store" });

    const sessionId = newId();
    const { journalSeq } = await own.publish(createEvent("SessionStarted", { sessionId }));
    const reports: SubscriptionReport[] = [];
    const sub = await own.subscribeEvents({ sessions: [sessionId], enduring: "all" }, { durable: "full", maxDeliver: 1, backoffMs: [300], onReport: (x) => reports.push(x) });
    cleanup.push(() => sub.close());
    const r = new Reader(sub);
    await (await r.one()).fail(new Error("nope"));
    const failed = reports.find((x) => x.kind === "park_failed");
    expect(failed).toMatchObject({ kind: "park_failed", journalSeq });
    expect((failed as { error: Error }).error).toBeInstanceOf(ParkingError);
    // Not terminated: the server delivers it again (to jetloop, which tries to park it again).
    await waitFor("redelivered", async () => (await jsm.consumers.info(own.stream, "full")).num_redelivered > 0 || reports.filter((x) => x.kind === "park_failed").length > 1, 10_000);
    expect(await own.parked.list("full")).toEqual([]);

    await own.provision(); // the operator makes room: the declared limits again
    await waitFor("parked", async () => (await own.parked.list("full")).length === 1, 10_000);
    expect(await own.parked.list("full")).toMatchObject([{ journalSeq, reason: "max_deliver", errorCode: "NOT_SETTLED" }]);
    // The handler was not asked again: a delivery yielded to it would stay unacknowledged
    // (this test settles none), and the consumer would never settle.
    await waitFor("settled", async () => (await jsm.consumers.info(own.stream, "full")).num_ack_pending === 0, 10_000);
    expect(sub.stats().delivered, "the handler was not asked again").toBe(1);
  });

  it("two subscriptions sharing the durable park each failing event once; replay hands each back once across both", async () => {
    const f = fixture();
    const otherBus = await connect({ servers: natsServers(), namespace: bus.namespace });
    cleanup.push(() => otherBus.close());
    // A 1 s ack wait: on a loaded machine a pause past a 200 ms one let the server hand a
    // delivery being parked to the other subscription, which parked it a second time.
    const options = { maxDeliver: 2, backoffMs: [1000], batch: 2 };
    const subs = [await f.subscribe(options), await f.subscribe(options, otherBus)];
    const seqs = await f.publish(12);
    const failing = new Set(seqs.filter((_, i) => i % 3 === 0));
    let fixed = false;
    const handled: D[] = [];
    let stop = false;
    const workers = subs.map(async (sub) => {
      const r = new Reader(sub);
      while (!stop) {
        const d = await r.extra(100);
        if (!d) continue;
        handled.push(d);
        await sleep(1);
        if (failing.has(d.journalSeq) && !fixed) await d.fail(new Error("bug 42"));
        else await d.ack();
      }
    });
    await waitFor("the failing events parked", async () => (await f.parked()).length === failing.size, 20_000);
    await waitFor("the others acknowledged", async () => (await f.info()).num_ack_pending === 0, 10_000);
    expect((await f.parked()).map((e) => e.journalSeq)).toEqual([...failing]);
    const firstPass = handled.filter((d) => !d.replayed);
    for (const s of failing) expect(firstPass.filter((d) => d.journalSeq === s).length).toBe(2);
    for (const s of seqs.filter((x) => !failing.has(x))) expect(firstPass.filter((d) => d.journalSeq === s && d.deliveryCount === 1).length).toBe(1);

    fixed = true;
    await bus.parked.replay(f.durable, "all");
    await waitFor("the parked store empty", async () => (await f.parked()).length === 0, 20_000);
    await waitFor("every replay handled", () => handled.filter((d) => d.replayed).length >= failing.size, 10_000);
    // Nothing outstanding on the replay consumer: no replay can be handed over again.
    await settledOn(bus.parked.stream, f.durable);
    stop = true;
    await Promise.all(workers);
    const replayed = handled.filter((d) => d.replayed);
    expect(seqsOf(replayed).sort((a, b) => a - b)).toEqual([...failing]);
    expect(parkedReports(f.reports)).toHaveLength(failing.size);
  });

  it("consumers(): each durable's figures equal the server's consumer info, with its parked count", async () => {
    const f = fixture();
    const sub = await f.subscribe({ maxDeliver: 1, batch: 1, enduringBuffer: 1 });
    const seqs = await f.publish(10);
    const r = new Reader(sub);
    const got = await r.take(4);
    await got[0]!.ack();
    await got[1]!.ack();
    await got[2]!.fail(new Error("parks: maxDeliver 1"));
    // got[3] stays unsettled; closing stops the pulls and leaves the rest pending.
    await waitFor("parked", async () => (await f.parked()).length === 1, 10_000);
    expect(sub.stats()).toMatchObject({ delivered: 4, parked: 1 });
    expect((await sub.lag())?.parked).toBe(1);
    await sub.close();

    // The reports are read between two equal readings of the server's consumer and stream
    // info: what the close left in flight (a pull request still waiting, a delivery on its
    // way) may change the figures, other tests publish to the journal, and a report must
    // equal the state that held while it was read, not one a moment later.
    const figures = (c: Awaited<ReturnType<typeof f.info>>) => [c.num_pending, c.num_ack_pending, c.num_redelivered, c.num_waiting, c.delivered.stream_seq, c.ack_floor.stream_seq].join();
    const { report, one, ci, si } = await waitFor(
      "reports read while the consumer's figures held",
      async () => {
        const [before, lastBefore] = [await f.info(), (await jsm.streams.info(bus.stream)).state.last_seq];
        const report = await bus.consumers();
        const one = await bus.consumer(f.durable);
        const [ci, si] = [await f.info(), await jsm.streams.info(bus.stream)];
        return figures(before) === figures(ci) && lastBefore === si.state.last_seq && { report, one, ci, si };
      },
      15_000,
      50,
    );
    const mine = report.consumers.find((c) => c.durable === f.durable)!;
    expect(report.lastSeq).toBe(si.state.last_seq);
    expect(mine).toEqual({
      durable: f.durable,
      pending: ci.num_pending,
      ackPending: ci.num_ack_pending,
      redelivered: ci.num_redelivered,
      waiting: ci.num_waiting,
      parked: 1,
      lastActivity: expect.any(Date) as Date,
      deliveredSeq: ci.delivered.stream_seq,
      ackFloorSeq: ci.ack_floor.stream_seq,
      behind: ci.num_pending + ci.num_ack_pending,
      maxDeliver: 1,
      backoffMs: (ci.config.backoff ?? []).map((ns) => ns / 1e6),
      ackWaitMs: (ci.config.ack_wait ?? 0) / 1e6,
    });
    expect(mine.backoffMs).toEqual([30_000, 60_000, 300_000, 900_000]); // the declared default
    // The backlog as built: nothing acknowledged past the unsettled fourth, six never pulled or
    // waiting. The floor is the third's sequence, or up to just before the fourth's: a server
    // may put a filtered consumer's floor on another subject's message between the two (2.10, in
    // a CI run: 20 for a third at 19).
    expect(mine.ackFloorSeq).toBeGreaterThanOrEqual(seqs[2]!);
    expect(mine.ackFloorSeq).toBeLessThan(seqs[3]!);
    expect(mine.pending + mine.ackPending).toBe(7);
    // Behind is what its filter delivers that it has not acknowledged, never other sessions'
    // events: the tests beside this one write to the same journal past its ack floor.
    expect(mine.behind).toBe(7);
    expect(Date.now() - mine.lastActivity!.getTime()).toBeLessThan(60_000);
    expect(one).toEqual({ ...mine, lastActivity: expect.any(Date) as Date });
    expect(await bus.consumer("nobody")).toBeUndefined();
    expect(report.warnings).toEqual([]); // no retention limit: nothing can remove the backlog
  });
});
