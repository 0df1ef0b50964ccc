// The drift rule for reopening a durable, over every combination of options given (absent,
// the live value, another value) and every shape of live consumer (a backoff or a fixed ack
// wait, a recorded limit or none): refused exactly when a shared-behaviour option differs,
// naming the first such option and its live value; maxAckPending updated; nothing else.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkDurableOptions, type DurableOptions, durableDrift, type LiveDurable, liveDurable } from "../../src/streams/durable-drift.js";
import { isJetloopError } from "../../src/errors.js";

const msArb = fc.integer({ min: 100, max: 3_600_000 });
const liveArb: fc.Arbitrary<LiveDurable> = fc.record({
  ackWaitMs: msArb,
  backoffMs: fc.oneof(fc.constant([] as number[]), fc.array(msArb, { minLength: 1, maxLength: 5 })),
  maxDeliver: fc.option(fc.integer({ min: 1, max: 50 }), { nil: undefined }),
  maxAckPending: fc.option(fc.integer({ min: 1, max: 5000 }), { nil: undefined }),
});

type Case = "absent" | "same" | "different";
const caseArb = fc.constantFrom<Case>("absent", "same", "different");

/** One value of `option` for a case: the live one, another one, or none. */
function pick<T>(c: Case, same: T | undefined, other: T): T | undefined {
  return c === "absent" ? undefined : c === "same" ? same : other;
}

const scenarioArb = fc.record({
  live: liveArb,
  maxDeliver: caseArb,
  backoffMs: caseArb,
  ackWaitMs: caseArb,
  maxAckPending: caseArb,
  bump: fc.integer({ min: 1, max: 99 }),
});

describe("durable options drift", () => {
  it("refuses a differing maxDeliver, backoffMs or ackWaitMs with the live value; updates maxAckPending; adopts what is absent", () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const { live, bump } = s;
        const wanted: DurableOptions = {
          maxDeliver: pick(s.maxDeliver, live.maxDeliver, (live.maxDeliver ?? 5) + bump),
          backoffMs: pick(s.backoffMs, live.backoffMs.length > 0 ? live.backoffMs : [live.ackWaitMs], [...live.backoffMs, 1000 + bump]),
          // ackWaitMs and backoffMs together are refused up front (below).
          ackWaitMs: s.backoffMs === "absent" ? pick(s.ackWaitMs, live.ackWaitMs, live.ackWaitMs + bump) : undefined,
          maxAckPending: pick(s.maxAckPending, live.maxAckPending, (live.maxAckPending ?? 1000) + bump),
        };
        // What differs, by the rule's definitions, in the rule's order.
        const differs: [string, boolean][] = [
          ["maxDeliver", wanted.maxDeliver !== undefined && live.maxDeliver !== undefined && wanted.maxDeliver !== live.maxDeliver],
          ["backoffMs", wanted.backoffMs !== undefined && JSON.stringify(wanted.backoffMs) !== JSON.stringify(live.backoffMs)],
          ["ackWaitMs", wanted.ackWaitMs !== undefined && (live.backoffMs.length > 0 || wanted.ackWaitMs !== live.ackWaitMs)],
        ];
        const first = differs.find(([, d]) => d)?.[0];
        const out = durableDrift("svc", wanted, live);
        if (first !== undefined) {
          expect(out.ok).toBe(false);
          if (out.ok) return;
          expect(isJetloopError(out.error, "OPTIONS_INVALID")).toBe(true);
          expect(out.error.option).toBe(first);
          const liveText = first === "maxDeliver" ? `maxDeliver ${live.maxDeliver}` : live.backoffMs.length > 0 ? `backoff [${live.backoffMs.join(", ")}] ms` : `fixed ack wait of ${live.ackWaitMs} ms`;
          expect(out.error.message).toContain(liveText);
          expect(out.error.message).toContain("durable svc");
        } else {
          expect(out.ok).toBe(true);
          if (!out.ok) return;
          const updates = wanted.maxAckPending !== undefined && wanted.maxAckPending !== live.maxAckPending;
          expect(out.update).toEqual(updates ? { max_ack_pending: wanted.maxAckPending } : undefined);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("every option absent never refuses and never updates", () => {
    fc.assert(fc.property(liveArb, (live) => {
        expect(durableDrift("svc", {}, live)).toEqual({ ok: true, update: undefined });
      }));
  });

  it("ackWaitMs with backoffMs is refused whatever the values", () => {
    fc.assert(
      fc.property(msArb, fc.array(msArb, { minLength: 1, maxLength: 4 }), (ackWaitMs, backoffMs) => {
        expect(() => checkDurableOptions({ ackWaitMs, backoffMs })).toThrow(/ackWaitMs: give ackWaitMs/);
      }),
    );
    expect(() => checkDurableOptions({ ackWaitMs: 1000 })).not.toThrow();
    expect(() => checkDurableOptions({ backoffMs: [1000] })).not.toThrow();
  });

  it("reads the live limit from jetloop's metadata, else an older durable's max_deliver, else none", () => {
    const base = { ack_wait: 30e9, backoff: [30e9, 60e9] } as const;
    expect(liveDurable({ ...base, max_deliver: -1, metadata: { jetloop_max_deliver: "7" } } as never).maxDeliver).toBe(7);
    expect(liveDurable({ ...base, max_deliver: 4 } as never).maxDeliver).toBe(4);
    expect(liveDurable({ ...base, max_deliver: -1 } as never).maxDeliver).toBeUndefined();
    expect(liveDurable({ ...base, max_deliver: -1 } as never).backoffMs).toEqual([30000, 60000]);
  });
});
