// Readers during commits, at generated moments, on a real nats-server (2.12+): turns of 1 to
// 1,000 events (the server's largest batch) over two sessions and two loops are committed
// back to back while replays and feed subscriptions (both feed modes, S = 1 and S = 2
// journal shards) start at generated delays. Each reader is checked against the rule
// (docs/scale.md, "Readers during a commit"), for its filter: a replay is a prefix of the
// journal that ends at a turn's end; a `"new"` subscription is a suffix that begins at a
// turn's start; an `"all"` subscription is everything, once, in order (the history → live
// handover after a history read on to a turn's end loses and repeats nothing, and the feed
// losing the first event after the turns is still caught).
import fc from "fast-check";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busContext } from "../../src/bus.js";
import { connect, createEvent, newId, type Delivery, type EventFilter, type Jetloop, type JetloopEvent, type Subscription } from "../../src/index.js";
import { supports } from "../../src/subjects/server-features.js";
import { sessionPartition } from "../../src/partition/partition.js";
import { natsServerFlavor, natsServers, natsServerVersion, uniqueNamespace } from "../harness/context.js";
import { sleep } from "../harness/async.js";
import { Reader } from "../harness/reader.js";

const ATOMIC = natsServerFlavor() === "external" || supports(natsServerVersion(), "atomicBatch");

/** Who an event of a turn is: session A on loop 1 or 2, or session B (same shard). */
type Who = 0 | 1 | 2;

interface Ids {
  readonly a: string;
  readonly b: string;
  readonly loops: readonly [string, string, string];
}

const decided = (sessionId: string, loopId: string): JetloopEvent =>
  createEvent("PermissionDecided", { sessionId, loopId, turnId: newId(), stepId: newId(), toolExecutionId: newId(), effect: "approve" });

/** Two sessions in one shard of `shards`: a turn over both is committed by one stream. */
function sessionsTogether(shards: number): { a: string; b: string } {
  const a = newId();
  for (;;) {
    const b = newId();
    if (sessionPartition(b, shards) === sessionPartition(a, shards)) return { a, b };
  }
}

const eventOf = (ids: Ids, who: Who) => decided(who === 2 ? ids.b : ids.a, ids.loops[who]);

/** The readers' filters: session A (both of its loops), and A's loop 1 only. */
const filters = (ids: Ids) => ({
  session: { sessions: [ids.a], enduring: "all" } satisfies EventFilter,
  loop: { sessions: [ids.a], enduring: { loops: [ids.loops[0]] } } satisfies EventFilter,
});
const selects = (f: "session" | "loop", who: Who) => (f === "session" ? who !== 2 : who === 0);

type ReaderKind = "replay" | "new" | "all";
interface Plan {
  readonly kind: ReaderKind;
  readonly filter: "session" | "loop";
  readonly feed: "loop" | "namespace";
  readonly delayMs: number;
}

const turnArb = fc.oneof(
  { weight: 1, arbitrary: fc.constant(1) },
  { weight: 3, arbitrary: fc.integer({ min: 2, max: 60 }) },
  { weight: 2, arbitrary: fc.integer({ min: 200, max: 999 }) },
  { weight: 2, arbitrary: fc.constant(1000) },
).chain((n) => fc.array(fc.constantFrom<Who>(0, 1, 2), { minLength: n, maxLength: n }));

const planArb = fc.record({
  kind: fc.constantFrom<ReaderKind>("replay", "new", "all"),
  filter: fc.constantFrom<"session" | "loop">("session", "loop"),
  feed: fc.constantFrom<"loop" | "namespace">("loop", "namespace"),
  delayMs: fc.integer({ min: 0, max: 120 }),
});

interface Outcome {
  readonly plan: Plan;
  readonly got: number[];
}

/** Starts `plan` after its delay; a subscription is read up to `marker` once that is known. */
async function runReader(bus: Jetloop, ids: Ids, plan: Plan, marker: Promise<{ last: number; sentinel: number }>, started: () => void): Promise<Outcome> {
  await sleep(plan.delayMs);
  const filter = filters(ids)[plan.filter];
  if (plan.kind === "replay") {
    const got: number[] = [];
    const replay = bus.replay(filter);
    // Its first read's consumer exists (its end is fixed) once the first result is in.
    const first = await replay.next().finally(started);
    if (!first.done) got.push(first.value.journalSeq);
    for await (const d of replay) got.push(d.journalSeq);
    return { plan, got };
  }
  let sub: Subscription;
  try {
    sub = await bus.subscribeEvents(filter, { start: plan.kind, feed: plan.feed });
  } finally {
    started();
  }
  try {
    const reader = new Reader<Delivery<JetloopEvent>>(sub);
    // Read up to the sentinel, published after the marker: what comes between the two (a
    // copy again, out of order) is in `got` for the rule to see, and nothing is left to come
    // once the sentinel is here; the sentinel itself is not part of the case (a marker never
    // handed over is missing from `got`, which the rule says).
    const { sentinel } = await marker;
    const got: number[] = [];
    for (;;) {
      const d = await reader.one(20_000);
      if (d.journalSeq === sentinel) break;
      got.push(d.journalSeq);
      if (d.journalSeq > sentinel) break;
    }
    return { plan, got };
  } finally {
    await sub.close();
  }
}

/** Checks one reader's sequences against the rule; a string saying what broke, or undefined. */
function broken(o: Outcome, want: readonly number[], turnOf: ReadonlyMap<number, number>): string | undefined {
  const { got, plan } = o;
  const say = (what: string) => `${plan.kind} (${plan.filter} filter, ${plan.feed} feed, ${plan.delayMs} ms): ${what}; got ${summary(got)}`;
  for (let i = 1; i < got.length; i++) if (got[i]! <= got[i - 1]!) return say(`${got[i]} after ${got[i - 1]}: out of order or twice`);
  if (plan.kind === "all") return got.join() === want.join() ? undefined : say(`not everything once (want ${summary(want)})`);
  if (got.length === 0) return plan.kind === "replay" ? undefined : say("nothing, not even the marker");
  const [first, last] = [got[0]!, got.at(-1)!];
  const expected = plan.kind === "replay" ? want.filter((s) => s <= last) : want.filter((s) => s >= first);
  if (got.join() !== expected.join()) return say(`not ${plan.kind === "replay" ? "a prefix" : "a suffix"} of the filter's events (want ${summary(expected)})`);
  // The edge: a replay's last event ends its turn (for the filter); a "new" one's first begins it.
  const edge = plan.kind === "replay" ? last : first;
  const turn = turnOf.get(edge);
  if (turn === undefined) return undefined;
  const ofTurn = want.filter((s) => turnOf.get(s) === turn);
  const split = plan.kind === "replay" ? ofTurn.some((s) => s > last) : ofTurn.some((s) => s < first);
  return split ? say(`${plan.kind === "replay" ? "ends" : "begins"} inside turn ${turn} (its events ${summary(ofTurn)})`) : undefined;
}

const summary = (seqs: readonly number[]) => (seqs.length <= 8 ? `[${seqs.join(",")}]` : `[${seqs.slice(0, 3).join(",")} … ${seqs.slice(-3).join(",")}] (${seqs.length})`);

if (ATOMIC) {
  describe.each([1, 2])("readers during commits at generated moments, S = %i journal shards", (shards) => {
    let bus: Jetloop;
    let jsm: JetStreamManager;

    beforeAll(async () => {
      bus = await connect({ servers: natsServers(), namespace: uniqueNamespace(), shards });
      await bus.provision();
      jsm = await jetstreamManager(bus.nc);
    });

    afterAll(async () => {
      const streams = shards === 1 ? [bus?.stream] : Array.from({ length: shards }, (_, k) => `${bus?.stream}_${k}_of_${shards}`);
      for (const s of [...streams, bus?.parked.stream]) await jsm?.streams.delete(s).catch(() => undefined);
      await bus?.close();
    });

    it("every replay ends at a turn's end, every new subscription begins at a turn's start, every all subscription has everything once", async () => {
      const failures: string[] = [];
      await fc.assert(
        fc.asyncProperty(fc.array(turnArb, { minLength: 2, maxLength: 4 }), fc.array(planArb, { minLength: 6, maxLength: 10 }), async (turns, plans) => {
          const ids: Ids = { ...sessionsTogether(shards), loops: [newId(), newId(), newId()] };
          let markerSeq!: (seqs: { last: number; sentinel: number }) => void;
          const marker = new Promise<{ last: number; sentinel: number }>((r) => (markerSeq = r));
          const starts: Promise<void>[] = [];
          const readers = plans.map((p) => {
            let started!: () => void;
            starts.push(new Promise<void>((r) => (started = r)));
            return runReader(bus, ids, p, marker, started);
          });
          const turnOf = new Map<number, number>();
          const whoAt = new Map<number, Who>();
          for (const [t, turn] of turns.entries()) {
            const results = await bus.publishAll(turn.map((who) => eventOf(ids, who)), { atomic: true });
            results.forEach((r, i) => {
              turnOf.set(r.journalSeq, t);
              whoAt.set(r.journalSeq, turn[i]!);
            });
          }
          // Every reader has started (its position or end is fixed) before the markers go out.
          await Promise.all(starts);
          // Right after the last turn the feed loses one event of the filters: the gap check
          // must still catch it, after a history that read on to a turn's end.
          const lost = Math.max(...turnOf.keys()) + 1;
          const shard = sessionPartition(ids.a, shards);
          busContext(bus).feeds.testHooks.drop = (f) => f.shard === shard && f.seq === lost;
          let m: number;
          try {
            expect((await bus.publish(eventOf(ids, 0))).journalSeq).toBe(lost);
            whoAt.set(lost, 0);
            m = (await bus.publish(eventOf(ids, 0))).journalSeq;
          } finally {
            busContext(bus).feeds.testHooks.drop = undefined;
          }
          whoAt.set(m, 0);
          // The sentinel: after it, a subscription has nothing more of the case to hand over.
          markerSeq({ last: m, sentinel: (await bus.publish(eventOf(ids, 0))).journalSeq });
          const settled = await Promise.allSettled(readers);
          const seqs = [...whoAt.keys()].sort((x, y) => x - y);
          for (const [i, s] of settled.entries()) {
            if (s.status === "rejected") {
              failures.push(`${JSON.stringify(plans[i])}: ${(s.reason as Error).message}`);
              continue;
            }
            const o = s.value;
            const want = seqs.filter((s) => selects(o.plan.filter, whoAt.get(s)!) && (o.plan.kind !== "replay" || s < lost));
            const why = broken(o, want, turnOf);
            if (why) failures.push(why);
          }
          return failures.length === 0;
        }),
        { numRuns: 6, endOnFailure: true },
      );
      expect(failures).toEqual([]);
    }, 240_000);
  });
} else {
  describe("readers during commits (nats-server before 2.12)", () => {
    it("has no atomic batches to read whole: publishAll atomic is refused there (atomic-batch.test.ts), so nothing here", () => {
      expect(supports(natsServerVersion(), "atomicBatch")).toBe(false);
    });
  });
}
