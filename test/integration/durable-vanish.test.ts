// A durable whose consumer an operator deletes mid-stream (src/sources/delivery-ledger.ts,
// durable-source.ts), against a real nats-server: generated runs of deliveries, each
// acknowledged, nak'd (with a delay longer than the test's bound, so only the recreation can
// bring it back in time) or held unsettled when the consumer is deleted. The next event
// arrives within 2 s of the deletion, what was nak'd or held comes again, what was
// acknowledged never does, and nothing is lost: at least once, and no more than that.
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { connect, createEvent, newId, type DurableDelivery, type Jetloop, type JetloopEvent, type SubscriptionReport } from "../../src/index.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";
import { propertyRuns, propertyTimeout } from "../harness/property.js";
import { Reader, TIMEOUT } from "../harness/reader.js";

const buses: Jetloop[] = [];

afterAll(async () => {
  for (const b of buses) {
    const jsm = await b.jetstreamManager().catch(() => undefined);
    for (const s of [b.stream, b.parked.stream]) await jsm?.streams.delete(s).catch(() => undefined);
    await b.close();
  }
});

const decided = (sessionId: string): JetloopEvent =>
  createEvent("PermissionDecided", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), toolExecutionId: newId(), effect: "approve" });

/** How each delivery before the deletion is settled. */
type Fate = "ack" | "nak" | "hold";

/** The bound the rule promises: the next event within 2 s of the deletion. */
const NEXT_WITHIN_MS = 2000;
/** A nak's delay far past the bound: a redelivery in time is the recreation's, not the server's. */
const NAK_DELAY_MS = 60_000;

async function runOnce(fates: readonly Fate[], after: number): Promise<void> {
  const bus = await connect({ servers: natsServers(), namespace: uniqueNamespace() });
  buses.push(bus);
  await bus.provision();
  const jsm = await bus.jetstreamManager();
  const session = newId();
  const durable = `dv${newId().slice(-10)}`;
  const reports: SubscriptionReport[] = [];
  const sub = (await bus.subscribeEvents({ sessions: [session], enduring: "all" }, { durable, start: "all", onReport: (r) => reports.push(r) })) as unknown as AsyncIterable<DurableDelivery<JetloopEvent>> & { close(): Promise<void> };
  const reader = new Reader(sub);
  try {
    const before = await bus.publishAll(fates.map(() => decided(session)));
    const fateOf = new Map(before.map((r, i) => [r.journalSeq, fates[i]!]));
    for (const d of await reader.take(fates.length)) {
      const fate = fateOf.get(d.journalSeq)!;
      if (fate === "ack") await d.ack();
      else if (fate === "nak") d.nak(NAK_DELAY_MS);
    }
    const acked = [...fateOf].filter(([, f]) => f === "ack").map(([s]) => s);
    const owed = [...fateOf].filter(([, f]) => f !== "ack").map(([s]) => s);
    await jsm.consumers.delete(bus.stream, durable);
    const deletedAt = Date.now();
    const next = await bus.publishAll(Array.from({ length: after }, () => decided(session)));
    const firstNext = next[0]!.journalSeq;
    const seen: number[] = [];
    let firstNextAt: number | undefined;
    // Everything owed and everything published after the deletion, then nothing more before a sentinel.
    const sentinel = (await bus.publish(decided(session))).journalSeq;
    for (;;) {
      const r = await reader.next(Math.max(1, deletedAt + 20_000 - Date.now()));
      if (r === TIMEOUT || r.done) throw new Error(`after the deletion got ${JSON.stringify(seen)}, not yet the sentinel ${sentinel}; reports ${JSON.stringify(reports)}`);
      const d = r.value;
      if (d.journalSeq === firstNext) firstNextAt ??= Date.now();
      seen.push(d.journalSeq);
      await d.ack();
      if (d.journalSeq === sentinel) break;
    }
    expect(firstNextAt! - deletedAt, "the next event after the deletion").toBeLessThan(NEXT_WITHIN_MS);
    // Nothing acknowledged comes again; everything owed and everything after comes, once.
    for (const s of acked) expect(seen, `acknowledged ${s} delivered again`).not.toContain(s);
    const expected = [...owed, ...next.map((r) => r.journalSeq), sentinel].sort((a, b) => a - b);
    expect([...seen].sort((a, b) => a - b)).toEqual(expected);
    const recreated = reports.filter((r) => r.kind === "consumer_recreated");
    expect(recreated.length).toBeGreaterThan(0);
    expect(recreated[0]).toMatchObject({ fromSeq: owed.length > 0 ? Math.min(...owed) : before.at(-1)!.journalSeq + 1 });
  } finally {
    await sub.close();
    await jsm.consumers.delete(bus.stream, durable).catch(() => undefined);
  }
}

describe("a durable whose consumer an operator deleted", () => {
  it("is recreated within 2 s from the lowest delivery still owed: nak'd and held ones come again, acknowledged ones never, nothing lost", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom<Fate>("ack", "ack", "nak", "hold"), { minLength: 1, maxLength: 24 }), fc.integer({ min: 1, max: 12 }), (fates, after) => runOnce(fates, after)),
      { numRuns: propertyRuns(4, 40), endOnFailure: true },
    );
  }, propertyTimeout(90_000, 4, 40));
});
