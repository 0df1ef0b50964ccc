// Durable subscriptions (microservices): explicit settlement, redelivery, max-deliver,
// ack extension, crash recovery, shared work and resuming from the ack floor.
import type { JetStreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import {
  ConnectionClosedError,
  connect,
  createEvent,
  newId,
  type DurableDelivery,
  type DurableSubscription,
  type Jetloop,
  type JetloopEvent,
  type DurableSubscribeOptions,
} from "../../src/index.js";
import { natsServers, provisionedBus } from "../harness/context.js";
import { sleep, waitFor } from "../harness/async.js";
import { Reader, TIMEOUT } from "../harness/reader.js";


type D = DurableDelivery<JetloopEvent>;

function step(sessionId: string): JetloopEvent {
  return createEvent("StepDone", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: "x" }] }] });
}

let bus: Jetloop;
let jsm: JetStreamManager;
const cleanup = provisionedBus((b, j) => void ([bus, jsm] = [b, j]));

/** A fresh session and durable name per test, so tests never share a consumer. */
function fixture() {
  const session = newId();
  const durable = `d-${newId().slice(-12)}`;
  const publish = async (n: number) => {
    const seqs: number[] = [];
    for (let i = 0; i < n; i++) seqs.push((await bus.publish(step(session))).journalSeq);
    return seqs;
  };
  const subscribe = async (options: Omit<DurableSubscribeOptions, "durable"> = {}, on: Jetloop = bus): Promise<DurableSubscription<JetloopEvent>> => {
    const sub = await on.subscribeEvents({ sessions: [session], enduring: "all" }, { ...options, durable });
    cleanup.push(() => sub.close());
    return sub;
  };
  const info = () => jsm.consumers.info(bus.stream, durable);
  cleanup.push(() => jsm.consumers.delete(bus.stream, durable));
  cleanup.push(() => jsm.consumers.delete(bus.parked.stream, durable));
  return { session, durable, publish, subscribe, info };
}

const seqsOf = (ds: readonly D[]) => ds.map((d) => d.journalSeq);

/**
 * The durable's consumer once nothing is outstanding: nothing pending, nothing delivered and
 * unacknowledged. From then on the server has nothing to deliver (again): "never again" is
 * this state, not a quiet window. `delivered.consumer_seq` counts every delivery, a
 * redelivery too.
 */
function settled(f: { info: () => ReturnType<JetStreamManager["consumers"]["info"]> }) {
  return waitFor(
    "the durable's consumer settled",
    async () => {
      const info = await f.info();
      return info.num_ack_pending === 0 && info.num_pending === 0 && info;
    },
    15_000,
    50,
  );
}

// Each test has its own session and durable, so they run side by side.
describe.concurrent("durable subscriptions", () => {
  it("ack: an acknowledged event is settled on the server and never delivered again", async () => {
    const f = fixture();
    const seqs = await f.publish(3);
    const sub = await f.subscribe();
    const r = new Reader(sub);
    const got = await r.take(3);
    expect(seqsOf(got)).toEqual(seqs);
    expect(got.map((d) => d.deliveryCount)).toEqual([1, 1, 1]);
    for (const d of got) await d.ack();
    const ci = await f.info();
    expect(ci.config.durable_name).toBe(f.durable);
    expect(ci.num_ack_pending).toBe(0);
    expect(ci.num_pending).toBe(0);
    expect(ci.ack_floor.stream_seq).toBeGreaterThanOrEqual(seqs[2]!);
    expect((await settled(f)).delivered.consumer_seq, "one delivery each, none again").toBe(3);
    await sub.close();

    await f.subscribe();
    expect((await settled(f)).delivered.consumer_seq, "the restarted subscriber is delivered nothing").toBe(3);
  });

  it("nak(delay): redelivered after the delay, with the delivery count incremented", async () => {
    const f = fixture();
    const [seq] = await f.publish(1);
    // A fixed ack wait (no backoff): the server then honours the nak delay as given. (With a
    // backoff, nats-server adds the step's excess over the first one to the delay.)
    const r = new Reader(await f.subscribe({ ackWaitMs: 5000 }));
    const first = await r.one();
    expect([first.journalSeq, first.deliveryCount]).toEqual([seq, 1]);
    const nakAt = Date.now();
    first.nak(600);
    expect(await r.extra(300), "not before the delay").toBeUndefined();
    const second = await r.one(5000);
    expect(Date.now() - nakAt).toBeGreaterThanOrEqual(550);
    expect([second.journalSeq, second.deliveryCount]).toEqual([seq, 2]);
    expect(second.event).toEqual(first.event);
    const nak2At = Date.now();
    second.nak(50);
    const third = await r.one(5000);
    expect(Date.now() - nak2At).toBeLessThan(2000);
    expect([third.journalSeq, third.deliveryCount]).toEqual([seq, 3]);
    await third.ack();
    expect((await settled(f)).delivered.consumer_seq, "three deliveries, none after the ack").toBe(3);
  });

  it("term: a terminated event is never redelivered, and the next one still arrives", async () => {
    const f = fixture();
    const seqs = await f.publish(2);
    // A short redelivery clock: without term, the event would come back within a second.
    const r = new Reader(await f.subscribe({ backoffMs: [300], autoExtendMs: 0 }));
    const [a, b] = await r.take(2);
    a!.term("not for this service");
    await b!.ack();
    expect(seqsOf([a!, b!])).toEqual(seqs);
    // Not handed back: a delivery yielded again would stay unacknowledged here, and the
    // consumer never settle. (The server may deliver it again to jetloop if the term reaches
    // it after a 300 ms backoff on a stalled machine; jetloop does not yield it.)
    await settled(f);
    const ci = await f.info();
    expect(ci.num_ack_pending).toBe(0);
    expect(ci.num_redelivered).toBe(0);
    expect(ci.ack_floor.stream_seq).toBeGreaterThanOrEqual(seqs[1]!);
  });

  it("maxDeliver: after N deliveries the event is parked, and later events still flow", async () => {
    const f = fixture();
    const [seq] = await f.publish(1);
    const r = new Reader(await f.subscribe({ maxDeliver: 3, backoffMs: [100] }));
    const counts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const d = await r.one(5000);
      expect(d.journalSeq).toBe(seq);
      counts.push(d.deliveryCount);
      d.nak();
    }
    expect(counts).toEqual([1, 2, 3]);
    // No fourth delivery to the handler: one yielded would stay unacknowledged, and the
    // consumer never settle (the server may deliver a fourth time before the park's term
    // reaches it; jetloop does not yield that one).
    await settled(f);
    const ci = await f.info();
    // jetloop keeps the limit (in the consumer's metadata); the server's is unlimited, so a
    // delivery whose parking failed comes again.
    expect(ci.config.max_deliver).toBe(-1);
    expect(ci.config.metadata?.jetloop_max_deliver).toBe("3");
    expect(ci.num_ack_pending).toBe(0);
    expect((await bus.parked.list(f.durable)).map((e) => [e.journalSeq, e.reason, e.errorCode, e.deliveryCount])).toEqual([[seq, "max_deliver", "NAK", 3]]);
    const [next] = await f.publish(1);
    const d = await r.one(5000);
    expect([d.journalSeq, d.deliveryCount]).toEqual([next, 1]);
    await d.ack();
  });

  it("maxDeliver also ends redelivery of an event that is never settled (ack wait expiry)", async () => {
    const f = fixture();
    const [seq] = await f.publish(1);
    const r = new Reader(await f.subscribe({ maxDeliver: 2, backoffMs: [300], autoExtendMs: 0 }));
    const first = await r.one();
    const second = await r.one(5000);
    expect([first.deliveryCount, second.deliveryCount]).toEqual([1, 2]);
    expect(seqsOf([first, second])).toEqual([seq, seq]);
    // The server delivers it again when the second's ack wait ends; jetloop parks it
    // unyielded (had it yielded it, it would stay unacknowledged and the consumer never settle).
    await settled(f);
    expect((await bus.parked.list(f.durable)).map((e) => [e.journalSeq, e.reason])).toEqual([[seq, "max_deliver"]]);
  });

  it("working() extends the ack wait; an event left alone is redelivered", async () => {
    const f = fixture();
    const seqs = await f.publish(2);
    // Ack wait 1 s, no automatic extension: only working() keeps a delivery alive.
    const r = new Reader(await f.subscribe({ backoffMs: [1000], autoExtendMs: 0 }));
    const [held, idle] = await r.take(2);
    expect(seqsOf([held!, idle!])).toEqual(seqs);
    const start = Date.now();
    const redelivered: D[] = [];
    while (Date.now() - start < 2300) {
      held!.working();
      const d = await r.extra(150);
      if (d) redelivered.push(d);
    }
    // The idle one came back each time its ack wait elapsed; the held one never did.
    expect(redelivered.length).toBeGreaterThanOrEqual(1);
    expect(redelivered.map((d) => d.journalSeq)).toEqual(redelivered.map(() => seqs[1]));
    for (const [i, d] of redelivered.entries()) expect(d.deliveryCount).toBeGreaterThan(i === 0 ? 1 : redelivered[i - 1]!.deliveryCount);
    await held!.ack();
    expect(held!.deliveryCount).toBe(1);
    await redelivered.at(-1)!.ack();
    await settled(f);
    const ci = await f.info();
    expect(ci.num_ack_pending).toBe(0);
    expect(ci.ack_floor.stream_seq).toBeGreaterThanOrEqual(seqs[1]!);
  });

  // The extension's period follows the ack wait (a third of it): a fixed period would be
  // longer than one of these ack waits or waste round trips on the other. Each is long
  // enough that a loaded machine's pauses (hundreds of ms) do not outlast it, and the
  // handler holds the delivery for four of them: extension is proven by the server's own
  // count (one delivery, none redelivered, still outstanding), not by a quiet window.
  it.each([1000, 2500])("an unsettled delivery's ack wait (%i ms) is extended automatically while the handler runs", async (ackWaitMs) => {
    const f = fixture();
    const [seq] = await f.publish(1);
    const r = new Reader(await f.subscribe({ backoffMs: [ackWaitMs] }));
    const d = await r.one();
    expect(d.journalSeq).toBe(seq);
    // The "handler" works on it for four ack waits: the claim is about time passing.
    await sleep(4 * ackWaitMs);
    const held = await f.info();
    expect([held.delivered.consumer_seq, held.num_redelivered, held.num_ack_pending], "held past four ack waits: one delivery, none redelivered, still outstanding").toEqual([1, 0, 1]);
    await d.ack();
    expect((await settled(f)).delivered.consumer_seq, "one delivery: extended, never redelivered").toBe(1);
  }, 45_000);

  it("ackWaitMs is the redelivery clock of an unsettled event", async () => {
    const f = fixture();
    const [seq] = await f.publish(1);
    // Longer than the template's first backoff step (1 s), which must not replace it.
    const r = new Reader(await f.subscribe({ ackWaitMs: 1800, autoExtendMs: 0 }));
    const first = await r.one();
    const at = Date.now();
    expect(first.journalSeq).toBe(seq);
    expect(await r.extra(1300), "not redelivered before the ack wait").toBeUndefined();
    const again = await r.one(5000);
    expect(Date.now() - at).toBeGreaterThanOrEqual(1500);
    expect([again.journalSeq, again.deliveryCount]).toEqual([seq, 2]);
    expect((await f.info()).config.ack_wait).toBe(1800 * 1e6);
    await again.ack();
  });

  it("a consumer killed mid-stream and restarted under the same name processes every event, losing none", async () => {
    const f = fixture();
    const seqs = await f.publish(20);
    const processed = new Map<number, number>(); // seq → times handed to a handler

    // Process 1 acknowledges 8, is handed 4 more it never settles, then its connection dies.
    const crashBus = await connect({ servers: natsServers(), namespace: bus.namespace });
    cleanup.push(() => crashBus.close());
    const sub1 = await f.subscribe({ backoffMs: [500], batch: 4 }, crashBus);
    const r1 = new Reader(sub1);
    const acked1 = new Set<number>();
    const handed1 = new Set<number>();
    for (const d of await r1.take(12)) {
      handed1.add(d.journalSeq);
      processed.set(d.journalSeq, (processed.get(d.journalSeq) ?? 0) + 1);
      if (acked1.size < 8) {
        await d.ack();
        acked1.add(d.journalSeq);
      }
    }
    await crashBus.nc.close();
    // What was already buffered is still handed out (it can no longer be acknowledged), then
    // the iteration rejects with the failure.
    let failure: unknown;
    for (;;) {
      let d: IteratorResult<D> | typeof TIMEOUT;
      try {
        d = await r1.next(5000);
      } catch (e) {
        failure = e;
        break;
      }
      if (d === TIMEOUT) throw new Error("process 1 did not end");
      if (d.done) throw new Error("process 1 ended without its failure");
      handed1.add(d.value.journalSeq);
      processed.set(d.value.journalSeq, (processed.get(d.value.journalSeq) ?? 0) + 1);
    }
    expect(failure).toBeInstanceOf(ConnectionClosedError);
    expect(sub1.err()).toBe(failure);
    expect(acked1).toEqual(new Set(seqs.slice(0, 8)));

    // Process 2, same durable: gets the unsettled ones again (after their ack wait) and the rest.
    const more = await f.publish(5);
    const all = [...seqs, ...more];
    const r2 = new Reader(await f.subscribe({ backoffMs: [500], batch: 4 }));
    const seen2: D[] = [];
    while (seen2.length < all.length - acked1.size) {
      const d = await r2.one(10_000);
      seen2.push(d);
      processed.set(d.journalSeq, (processed.get(d.journalSeq) ?? 0) + 1);
      await d.ack();
    }
    await settled(f);
    // Every event processed at least once; none lost.
    expect([...processed.keys()].sort((a, b) => a - b)).toEqual(all);
    // The 8 acknowledged before the crash were not delivered again; the rest exactly once more.
    expect(seqsOf(seen2).sort((a, b) => a - b)).toEqual(all.filter((s) => !acked1.has(s)));
    // Those handed to process 1 but never settled came back, marked as redeliveries.
    const unsettled = [...handed1].filter((s) => !acked1.has(s));
    expect(unsettled.length).toBeGreaterThanOrEqual(4);
    for (const d of seen2.filter((x) => unsettled.includes(x.journalSeq))) expect(d.deliveryCount).toBeGreaterThanOrEqual(2);
    const ci = await f.info();
    expect(ci.num_ack_pending).toBe(0);
    expect(ci.num_pending).toBe(0);
    expect(ci.ack_floor.stream_seq).toBeGreaterThanOrEqual(all.at(-1)!);
  });

  it("two subscriptions on one durable split the events: none lost, none duplicated", async () => {
    const f = fixture();
    const otherBus = await connect({ servers: natsServers(), namespace: bus.namespace });
    cleanup.push(() => otherBus.close());
    const subs = [await f.subscribe({ batch: 4 }), await f.subscribe({ batch: 4 }, otherBus)];
    const seqs = await f.publish(80);
    const got: number[][] = [[], []];
    let total = 0;
    await Promise.all(
      subs.map(async (sub, i) => {
        const r = new Reader(sub);
        while (total < seqs.length) {
          const d = await r.next(200);
          if (d === TIMEOUT) continue;
          if (d.done) throw new Error("ended");
          got[i]!.push(d.value.journalSeq);
          total++;
          await sleep(1); // a little work, so both get a share
          await d.value.ack();
        }
      }),
    );
    expect(got[0]!.length).toBeGreaterThan(0);
    expect(got[1]!.length).toBeGreaterThan(0);
    const union = [...got[0]!, ...got[1]!].sort((a, b) => a - b);
    expect(union).toEqual(seqs);
    // Each worker sees its share in journal order.
    for (const g of got) expect(g).toEqual([...g].sort((a, b) => a - b));
    const ci = await f.info();
    expect(ci.num_ack_pending).toBe(0);
    expect(ci.num_redelivered).toBe(0);
    expect(ci.ack_floor.stream_seq).toBeGreaterThanOrEqual(seqs.at(-1)!);
  });

  it("a restarted subscriber resumes from its ack floor", async () => {
    const f = fixture();
    const first = await f.publish(6);
    const sub = await f.subscribe();
    const r = new Reader(sub);
    for (const d of await r.take(6)) await d.ack();
    await sub.close();
    // At or past the last acknowledged event (2.10 moves the floor over other sessions' messages).
    expect((await f.info()).ack_floor.stream_seq).toBeGreaterThanOrEqual(first.at(-1)!);

    const later = await f.publish(4);
    const r2 = new Reader(await f.subscribe());
    const got = await r2.take(4);
    expect(seqsOf(got)).toEqual(later);
    expect(got.map((d) => d.deliveryCount)).toEqual([1, 1, 1, 1]);
    for (const d of got) await d.ack();
    expect((await settled(f)).delivered.consumer_seq, "six, then four, none again").toBe(10);
  });

  it('start "new" and { seq } apply when the durable is created', async () => {
    const f = fixture();
    const old = await f.publish(3);
    const r = new Reader(await f.subscribe({ start: "new" }));
    // The next event published is the first delivered: none of the older ones came before it.
    const fresh = await f.publish(1);
    const d = await r.one();
    expect(d.journalSeq).toBe(fresh[0]);
    await d.ack();

    const g = fixture();
    const seqs = await g.publish(3);
    const r2 = new Reader(await g.subscribe({ start: { seq: seqs[1]! } }));
    expect(seqsOf(await r2.take(2))).toEqual(seqs.slice(1));
    expect(old).toHaveLength(3);
  });
});
