// Forged turn headers (src/journal/turn-span.ts): a message of no server batch (no
// `Nats-Batch-Id`: its batch sequence nothing checked) names no turn, whatever sequence and
// size it carries; with an id, the same values name the span they say.
import { headers } from "@nats-io/nats-core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { turnSpanOf } from "../../src/journal/turn-span.js";

const forged = fc.record({
  k: fc.integer({ min: 1, max: 1000 }),
  extra: fc.integer({ min: 0, max: 999 }),
  seq: fc.integer({ min: 1000, max: 1_000_000 }),
  id: fc.option(fc.constantFrom("", "x", "0123456789abcdefghijkl"), { nil: undefined }),
});

describe("turnSpanOf and the batch id", () => {
  it("no span without a non-empty Nats-Batch-Id; the header's span with one", () => {
    fc.assert(
      fc.property(forged, ({ k, extra, seq, id }) => {
        const n = Math.min(1000, k + extra);
        const h = headers();
        h.set("Nats-Batch-Sequence", String(k));
        h.set("Jetloop-Batch-Size", String(n));
        if (id !== undefined) h.set("Nats-Batch-Id", id);
        expect(turnSpanOf(h, seq)).toEqual(id ? { first: seq - k + 1, last: seq - k + n } : undefined);
      }),
    );
  });

  it("a message carrying Nats-Batch-Commit ends its span, whatever larger size it says", () => {
    fc.assert(
      fc.property(forged, ({ k, extra, seq }) => {
        const h = headers();
        h.set("Nats-Batch-Id", "b");
        h.set("Nats-Batch-Sequence", String(k));
        h.set("Jetloop-Batch-Size", String(Math.min(1000, k + extra)));
        h.set("Nats-Batch-Commit", "1");
        expect(turnSpanOf(h, seq)).toEqual({ first: seq - k + 1, last: seq });
      }),
    );
  });
});
