// The connection's read budget over generated sequences of requests taking shares,
// giving them back and leaving while they wait: what is held never exceeds the capacity,
// shares are granted in the order asked (first come, first served), a request that left is
// never granted, and once everything is given back every remaining request has its share.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ReadBudget, readBudgetOf, ReadShare } from "../../src/gateway/read-budget.js";
import { OptionsError } from "../../src/errors.js";
import type { NatsConnection } from "@nats-io/nats-core";

type Op = { readonly kind: "take"; readonly bytes: number } | { readonly kind: "release"; readonly pick: number } | { readonly kind: "leave"; readonly pick: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.integer({ min: 1, max: 140 }).map((bytes) => ({ kind: "take" as const, bytes })),
  fc.nat().map((pick) => ({ kind: "release" as const, pick })),
  fc.nat().map((pick) => ({ kind: "leave" as const, pick })),
);

const settle = () => new Promise<void>((r) => setImmediate(r));

describe("the read budget", () => {
  it("never grants more than its capacity, grants in order, never to one that left, and everyone once all is given back", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 100 }), fc.array(op, { maxLength: 60 }), async (capacity, ops) => {
        const budget = new ReadBudget(capacity);
        interface Req {
          readonly id: number;
          readonly bytes: number;
          readonly abort: AbortController;
          state: "waiting" | "holding" | "done" | "left";
          release?: () => void;
        }
        const reqs: Req[] = [];
        const granted: number[] = [];
        const wrong: string[] = [];
        let held = 0;
        const give = (r: Req) => {
          held -= r.bytes;
          r.release!();
          r.release!(); // twice gives back once
          r.state = "done";
        };
        for (const o of ops) {
          if (o.kind === "take") {
            const r: Req = { id: reqs.length, bytes: Math.min(o.bytes, capacity), abort: new AbortController(), state: "waiting" };
            reqs.push(r);
            budget.take(o.bytes, r.abort.signal).then(
              (release) => {
                if (r.state !== "waiting") wrong.push(`request ${r.id} granted while ${r.state}`);
                r.state = "holding";
                r.release = release;
                granted.push(r.id);
                held += r.bytes;
                if (held > capacity) wrong.push(`${held} held of ${capacity}`);
              },
              () => {
                if (r.state !== "left") wrong.push(`request ${r.id} refused while ${r.state}`);
              },
            );
          } else if (o.kind === "release") {
            const holding = reqs.filter((r) => r.state === "holding");
            if (holding.length > 0) give(holding[o.pick % holding.length]!);
          } else {
            const waiting = reqs.filter((r) => r.state === "waiting");
            if (waiting.length > 0) {
              const r = waiting[o.pick % waiting.length]!;
              r.state = "left";
              r.abort.abort(new Error("left"));
            }
          }
          await settle();
          expect(wrong).toEqual([]);
          expect(budget.free).toBe(capacity - held);
        }
        // First come, first served: grants follow the order of asking among those that stayed.
        expect(granted).toEqual([...granted].sort((a, b) => a - b));
        // Given back, each remaining waiter is granted in turn.
        while (reqs.some((r) => r.state === "waiting")) {
          const holding = reqs.filter((r) => r.state === "holding");
          expect(holding.length).toBeGreaterThan(0);
          for (const r of holding) give(r);
          await settle();
          expect(wrong).toEqual([]);
        }
        for (const r of reqs.filter((q) => q.state === "holding")) give(r);
        expect(budget.free).toBe(capacity);
      }),
      { numRuns: 300 },
    );
  });

  it("is one per connection: a handler stating another max_pending for it is refused", () => {
    const nc = {} as NatsConnection;
    const a = readBudgetOf(nc, 64 * 1024 * 1024);
    expect(readBudgetOf(nc, 64 * 1024 * 1024)).toBe(a);
    expect(a.capacity).toBe(32 * 1024 * 1024);
    expect(() => readBudgetOf(nc, 24 * 1024 * 1024)).toThrow(OptionsError);
  });

  it("a request's share: held once however often asked, given back once however often given, taken again after", async () => {
    const budget = new ReadBudget(10);
    const a = new ReadShare(budget, 6);
    await a.hold();
    await a.hold();
    expect([a.held, budget.free]).toEqual([true, 4]);
    // Another request waits while the share is held, and gets it once the share goes back.
    const b = new ReadShare(budget, 6);
    let bHeld = false;
    const bWaits = b.hold().then(() => (bHeld = true));
    await settle();
    expect(bHeld).toBe(false);
    a.give();
    a.give();
    await bWaits;
    expect([a.held, b.held, budget.free]).toEqual([false, true, 4]);
    // Taking again waits its turn behind what is held.
    let aAgain = false;
    const aWaits = a.hold().then(() => (aAgain = true));
    await settle();
    expect(aAgain).toBe(false);
    b.give();
    await aWaits;
    a.give();
    expect(budget.free).toBe(10);
  });

  it("a share whose client left while it waited is never granted", async () => {
    const budget = new ReadBudget(10);
    const a = new ReadShare(budget, 10);
    await a.hold();
    const gone = new AbortController();
    const b = new ReadShare(budget, 5, gone.signal);
    const waits = b.hold();
    gone.abort(new Error("the client left"));
    await expect(waits).rejects.toThrow("the client left");
    a.give();
    expect([b.held, budget.free]).toEqual([false, 10]);
  });

  it("a closed share holds nothing again: a take still waiting when it closes is given back on grant", async () => {
    const budget = new ReadBudget(10);
    const a = new ReadShare(budget, 10);
    await a.hold();
    const b = new ReadShare(budget, 5);
    const waits = b.hold();
    b.close();
    a.give();
    await waits;
    expect([b.held, budget.free]).toEqual([false, 10]);
    await b.hold();
    expect([b.held, budget.free]).toEqual([false, 10]);
  });

  it("a read's pauses give the share back and hold it again before it goes on", async () => {
    const budget = new ReadBudget(10);
    const a = new ReadShare(budget, 8);
    await a.hold();
    const pauses = a.pauses;
    pauses.paused();
    expect([a.held, budget.free]).toEqual([false, 10]);
    // Another read takes the budget meanwhile; the paused one waits its turn to go on.
    const other = new ReadShare(budget, 8);
    await other.hold();
    let resumed = false;
    const going = pauses.resumed().then(() => (resumed = true));
    await settle();
    expect(resumed).toBe(false);
    other.close();
    await going;
    expect([a.held, budget.free]).toEqual([true, 2]);
    a.close();
    expect(budget.free).toBe(10);
  });
});
