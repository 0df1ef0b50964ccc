// Every journal pull bounded in count and in bytes (src/journal/pull-size.ts), for every
// batch a read may ask and every max_payload a server may have.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PULL_BUDGET_BYTES, pullSize } from "../../src/journal/pull-size.js";

const ROOM = 4096;

describe("pullSize", () => {
  it("never asks for more messages than the batch, nor more bytes than the budget (or one largest message), and always fits one", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 1024, max: 64 * 1024 * 1024 }), (batch, maxPayload) => {
        const largest = maxPayload + ROOM;
        const budget = Math.max(PULL_BUDGET_BYTES, largest);
        const p = pullSize(batch, maxPayload);
        if ("max_messages" in p) {
          expect(p.max_messages).toBeGreaterThanOrEqual(1);
          expect(p.max_messages).toBeLessThanOrEqual(batch);
          // The count bounds the bytes: that many of the largest fit the budget.
          expect(p.max_messages * largest).toBeLessThanOrEqual(budget);
        } else {
          // NATS.js asks for at most 100 messages by bytes: never more than the batch.
          expect(batch).toBeGreaterThanOrEqual(100);
          expect(p.max_bytes).toBeGreaterThanOrEqual(largest);
          expect(p.max_bytes).toBeLessThanOrEqual(budget);
        }
      }),
      { seed: 3803, numRuns: 2000 },
    );
  });

  it("keeps a batch that fits by count as it is, and reads the default max_payload when the connection has not said", () => {
    expect(pullSize(1, 1024 * 1024)).toEqual({ max_messages: 1 });
    expect(pullSize(512, 1024)).toEqual({ max_messages: 512 });
    expect(pullSize(512, undefined)).toEqual({ max_bytes: PULL_BUDGET_BYTES });
    expect(pullSize(16, undefined)).toEqual({ max_messages: 7 });
  });
});
