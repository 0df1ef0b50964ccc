// A turn is never half visible (src/journal/turn-span.ts), against a real nats-server
// 2.12+: a producer commits atomic turns (generated sizes 2..500, several sessions, back to
// back) while replays (of the namespace, of one session, of one loop) and feed subscriptions
// ("new" and "all", both feed modes) start at generated moments, some right as a commit goes
// out. Every reader's view holds each turn wholly or not at all (of what its filter selects),
// nothing twice, each session in order; a "new" subscription none begun before it started.
// On a namespace not split and on one in S = 2 shards. A raw batch (no Jetloop-Batch-Size)
// is read as before.
import { headers, type NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, newId, type Delivery, type Jetloop, type JetloopEvent, type Subscription } from "../../src/index.js";
import { encodeEvent } from "../../src/codec/codec.js";
import { allShards, shardStreamName } from "../../src/streams/shards.js";
import { eventSubject } from "../../src/subjects/subjects.js";
import { defaultRegistry } from "../../src/events/catalogue.js";
import { supports } from "../../src/subjects/server-features.js";
import { connectTest, natsServerFlavor, natsServers, natsServerVersion, uniqueNamespace } from "../harness/context.js";
import { sleep } from "../harness/async.js";
import { propertyRuns, propertyTimeout } from "../harness/property.js";

const ATOMIC = natsServerFlavor() === "external" || supports(natsServerVersion(), "atomicBatch");

const buses: Jetloop[] = [];
let nc: NatsConnection;

beforeAll(async () => {
  nc = await connectTest();
});

afterAll(async () => {
  for (const b of buses) {
    const jsm = await b.jetstreamManager();
    for (const shard of allShards(b.shards)) await jsm.streams.delete(shardStreamName(b.stream, shard)).catch(() => undefined);
    await jsm.streams.delete(b.parked.stream).catch(() => undefined);
    await b.close();
  }
  await nc?.close();
});

async function freshBus(shards: number): Promise<{ producer: Jetloop; reader: Jetloop }> {
  const namespace = uniqueNamespace();
  const producer = await connect({ servers: natsServers(), namespace, shards });
  buses.push(producer);
  await producer.provision();
  // Readers on a connection of their own, so their reads race the producer's commits.
  const reader = await connect({ servers: natsServers(), namespace, shards });
  buses.push(reader);
  return { producer, reader };
}

const decided = (sessionId: string, loopId: string): JetloopEvent =>
  createEvent("PermissionDecided", { sessionId, loopId, turnId: newId(), stepId: newId(), toolExecutionId: newId(), effect: "approve" });

/**
 * One reader: what it selects, how it reads, and when it starts (`delayMs` after the commit
 * of turn `at` goes out). A replay starts again each time it ends while the producer is at it (5 times at most).
 */
type Plan =
  | { readonly kind: "replay"; readonly scope: "namespace" | "session" | "loop"; readonly at: number; readonly delayMs: number }
  | { readonly kind: "subscribe"; readonly scope: "namespace" | "session"; readonly start: "new" | "all"; readonly feed: "loop" | "namespace"; readonly at: number; readonly delayMs: number };

interface Run {
  readonly sizes: readonly number[];
  readonly plans: readonly Plan[];
}

const SESSIONS = 3;
const runArb = (turns: number): fc.Arbitrary<Run> =>
  fc.record({
    sizes: fc.array(fc.integer({ min: 2, max: 500 }), { minLength: turns, maxLength: turns }),
    plans: fc.array(
      fc.oneof(
        fc.record({ kind: fc.constant("replay" as const), scope: fc.constantFrom("namespace" as const, "session" as const, "loop" as const), at: fc.nat({ max: turns - 1 }), delayMs: fc.nat({ max: 20 }) }),
        fc.record({
          kind: fc.constant("subscribe" as const),
          scope: fc.constantFrom("namespace" as const, "session" as const),
          start: fc.constantFrom("new" as const, "all" as const),
          feed: fc.constantFrom("loop" as const, "namespace" as const),
          at: fc.nat({ max: turns - 1 }),
          delayMs: fc.nat({ max: 20 }),
        }),
      ),
      { minLength: 24, maxLength: 24 },
    ),
  });

/** Each turn's events by id, and who selects them. */
interface Turn {
  readonly index: number;
  readonly sessionId: string;
  readonly events: readonly JetloopEvent[];
}

/** The per-turn counts a reader got must each be 0 or the turn's size under its filter. */
function checkView(label: string, got: readonly Delivery<JetloopEvent>[], turns: readonly Turn[], selects: (e: JetloopEvent) => boolean, startedBefore?: ReadonlySet<number>): number {
  const turnOf = new Map<string, Turn>();
  for (const t of turns) for (const e of t.events) turnOf.set(e.eventId, t);
  const counts = new Map<number, number>();
  const seqs = new Set<string>();
  const lastOfSession = new Map<string, number>();
  for (const d of got) {
    const key = `${d.shard}:${d.journalSeq}`;
    expect(seqs.has(key), `${label}: ${key} delivered twice`).toBe(false);
    seqs.add(key);
    expect(d.journalSeq, `${label}: session ${d.event.sessionId} out of order`).toBeGreaterThan(lastOfSession.get(d.event.sessionId) ?? 0);
    lastOfSession.set(d.event.sessionId, d.journalSeq);
    const t = turnOf.get(d.event.eventId);
    if (t) counts.set(t.index, (counts.get(t.index) ?? 0) + 1);
  }
  let partial = 0;
  for (const t of turns) {
    const size = t.events.filter(selects).length;
    const count = counts.get(t.index) ?? 0;
    if (count !== 0 && count !== size) partial++;
    expect([0, size], `${label}: turn ${t.index} (${t.events.length} events, ${size} selected) seen ${count}`).toContain(count);
    if (startedBefore?.has(t.index)) expect(count, `${label}: turn ${t.index} was committed before the start`).toBe(0);
  }
  return partial;
}

async function drain(sub: Subscription<JetloopEvent>, got: Delivery<JetloopEvent>[], done: (d: Delivery<JetloopEvent>) => boolean): Promise<void> {
  for await (const d of sub) {
    got.push(d);
    if (done(d)) break;
  }
}

async function runOnce(shards: number, run: Run): Promise<void> {
  const { producer, reader } = await freshBus(shards);
  const sessions = Array.from({ length: SESSIONS }, () => newId());
  const loops = new Map(sessions.map((s) => [s, [newId(), newId()]]));
  const turns: Turn[] = run.sizes.map((n, index) => {
    const sessionId = sessions[index % SESSIONS]!;
    return { index, sessionId, events: Array.from({ length: n }, (_, i) => decided(sessionId, loops.get(sessionId)![i % 2]!)) };
  });
  const sentinels = sessions.map((s) => decided(s, loops.get(s)![0]!));
  const sentinelIds = new Set(sentinels.map((e) => e.eventId));
  const reads: Promise<void>[] = [];
  const target = sessions[0]!;
  const loop = loops.get(target)![1]!;
  const committed = new Set<number>();
  /** Every subscription's start: the sentinels go out once all have started, or a late "new" one would miss its own. */
  const subscribed: Promise<unknown>[] = [];

  const startReader = (p: Plan, i: number): Promise<void> => {
    const label = `reader ${i} ${JSON.stringify(p)}`;
    const selects = (e: JetloopEvent) => p.scope === "namespace" || (e.sessionId === target && (p.scope !== "loop" || e.loopId === loop));
    const got: Delivery<JetloopEvent>[] = [];
    // Settled once this reader's subscription has started (or failed to): its delay is part
    // of the wait, since the promise is made now.
    let started = () => {};
    if (p.kind === "subscribe") subscribed.push(new Promise<void>((r) => (started = r)));
    return (async () => {
      await sleep(p.delayMs);
      if (p.kind === "replay") {
        for (let round = 0; round === 0 || (producing && round < 5); round++) {
          got.length = 0;
          const read = p.scope === "namespace" ? reader.replay({ enduring: "all" }) : reader.session(target).replay({ enduring: p.scope === "loop" ? { loops: [loop] } : "all" });
          for await (const d of read) got.push(d);
          checkView(`${label} round ${round}`, got, turns, selects);
        }
        return;
      }
      // The turns whose commit was answered before it started: a "new" subscription sees none of them.
      const before = new Set(committed);
      const subscribing = p.scope === "namespace" ? reader.subscribeEvents({ enduring: "all" }, { start: p.start, feed: p.feed }) : reader.session(target).subscribeEvents({ enduring: "all" }, { start: p.start, feed: p.feed });
      const sub = await subscribing.finally(started);
      const waiting = new Set(p.scope === "namespace" ? sentinelIds : [sentinels[0]!.eventId]);
      try {
        await drain(sub, got, (d) => waiting.delete(d.event.eventId) && waiting.size === 0);
      } finally {
        await sub.close();
      }
      checkView(label, got, turns, selects, p.start === "new" ? before : undefined);
      if (p.start === "all") expect(got.filter((d) => !sentinelIds.has(d.event.eventId)).length, label).toBe(turns.flatMap((t) => t.events).filter(selects).length);
    })();
  };

  let producing = true;
  for (const t of turns) {
    const commit = producer.publishAll(t.events, { atomic: true });
    for (const [i, p] of run.plans.entries()) if (p.at === t.index) reads.push(startReader(p, i));
    // And a "new" subscription of the session as every commit goes out, in turn of both modes.
    reads.push(startReader({ kind: "subscribe", scope: "session", start: "new", feed: t.index % 2 ? "loop" : "namespace", at: t.index, delayMs: 0 }, run.plans.length + t.index));
    await commit;
    committed.add(t.index);
  }
  producing = false;
  // Subscriptions end on each session's sentinel, published after every turn and every start.
  await Promise.allSettled(subscribed);
  for (const e of sentinels) await producer.publish(e);
  await Promise.all(reads);
}

describe.skipIf(!ATOMIC)("a turn is never half visible (nats-server 2.12+)", () => {
  for (const shards of [1, 2]) {
    it(`replays and feed subscriptions starting during commits see each turn whole or not at all (${shards === 1 ? "a namespace not split" : `S = ${shards}`})`, async () => {
      await fc.assert(
        fc.asyncProperty(runArb(24), (run) => runOnce(shards, run)),
        // Each case is seconds of commits and readers: 2 in CI, 40 in the deep profile.
        { numRuns: propertyRuns(2, 40), endOnFailure: true },
      );
    }, propertyTimeout(240_000, 2, 40));
  }

  it("a raw batch without Jetloop-Batch-Size is read as before: whole once stored, and a \"new\" subscription gets what follows its start", async () => {
    const { producer, reader } = await freshBus(1);
    const session = newId();
    const sub = await reader.session(session).subscribeEvents({ enduring: "all" }, { start: "new" });
    const events = Array.from({ length: 5 }, () => decided(session, newId()));
    const batchId = newId().replaceAll("-", "").slice(0, 22);
    const subject = (e: JetloopEvent) => eventSubject(producer.namespace, "journal", { ...e, family: defaultRegistry.get(e.type)!.family });
    for (const [i, e] of events.entries()) {
      const h = headers();
      h.set("Nats-Msg-Id", e.eventId);
      h.set("Nats-Batch-Id", batchId);
      h.set("Nats-Batch-Sequence", String(i + 1));
      if (i === events.length - 1) h.set("Nats-Batch-Commit", "1");
      if (i < events.length - 1) nc.publish(subject(e), encodeEvent(e), { headers: h });
      else expect((await nc.request(subject(e), encodeEvent(e), { headers: h, timeout: 5000 })).json<{ count?: number }>().count).toBe(5);
    }
    const got: string[] = [];
    for await (const d of sub) if (got.push(d.event.eventId) === events.length) break;
    await sub.close();
    expect(got).toEqual(events.map((e) => e.eventId));
    const replayed: string[] = [];
    for await (const d of reader.session(session).replay({ enduring: "all" })) replayed.push(d.event.eventId);
    expect(replayed).toEqual(got);
  }, 60_000);
});

describe.runIf(!ATOMIC)("before nats-server 2.12", () => {
  it("has no atomic turns: publishAll's events replay as published", async () => {
    const { producer, reader } = await freshBus(1);
    const session = newId();
    const events = Array.from({ length: 5 }, () => decided(session, newId()));
    await producer.publishAll(events);
    const got: string[] = [];
    for await (const d of reader.session(session).replay({ enduring: "all" })) got.push(d.event.eventId);
    expect(got).toEqual(events.map((e) => e.eventId));
  });
});
