// The order check of a session's appends, over every way their sequences can come back:
// whatever the stored sequences, no two appends both resolve with the later call stored
// lower (no silent reorder), an in-order run refuses nothing (no false alarm), and each
// refusal names an earlier event of the session stored above it.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PublishOrderError } from "../../src/errors.js";
import { SessionOrder } from "../../src/publish/session-order.js";

/** Appends in call order: a distinct stored sequence each, some duplicates on their first attempt. */
const outcomes = fc
  .uniqueArray(fc.integer({ min: 1, max: 10_000 }), { minLength: 1, maxLength: 60 })
  .chain((seqs) => fc.tuple(fc.constant(seqs), fc.array(fc.boolean(), { minLength: seqs.length, maxLength: seqs.length })));

function check(seqs: readonly number[], firstAttemptDuplicate: readonly boolean[]) {
  const order = new SessionOrder("s");
  return seqs.map((seq, i) => ({ i, seq, skipped: firstAttemptDuplicate[i]!, error: order.next(`e${i}`, seq, firstAttemptDuplicate[i]!) }));
}

describe("a session's order check", () => {
  it("never lets two checked appends both resolve out of call order", () => {
    fc.assert(
      fc.property(outcomes, ([seqs, dup]) => {
        const resolved = check(seqs, dup).filter((r) => !r.skipped && r.error === undefined);
        for (let k = 1; k < resolved.length; k++) expect(resolved[k]!.seq).toBeGreaterThan(resolved[k - 1]!.seq);
      }),
    );
  });

  it("refuses nothing when the sequences rise in call order, whatever is skipped", () => {
    fc.assert(
      fc.property(outcomes, ([seqs, dup]) => {
        const rising = [...seqs].sort((a, b) => a - b);
        expect(check(rising, dup).filter((r) => r.error)).toEqual([]);
      }),
    );
  });

  it("refuses exactly the appends stored below an earlier resolved one, naming it; a first-attempt duplicate is never refused", () => {
    fc.assert(
      fc.property(outcomes, ([seqs, dup]) => {
        let highest: { seq: number; i: number } | undefined;
        for (const r of check(seqs, dup)) {
          if (r.skipped) {
            expect(r.error).toBeUndefined();
            continue;
          }
          if (highest && r.seq < highest.seq) {
            expect(r.error).toBeInstanceOf(PublishOrderError);
            expect(r.error).toMatchObject({ code: "PUBLISH_ORDER", sessionId: "s", eventId: `e${r.i}`, journalSeq: r.seq, earlierEventId: `e${highest.i}`, earlierJournalSeq: highest.seq });
          } else {
            expect(r.error).toBeUndefined();
            highest = { seq: r.seq, i: r.i };
          }
        }
      }),
    );
  });
});
