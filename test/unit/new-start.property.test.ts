// Where a durable created at "new" started (src/sources/new-start.ts): the per-shard
// journal ends kept in its consumer's metadata read back exactly; a value jetloop never
// writes is refused (read as none, the durable would hand out turn tails); and over
// generated journals of contiguous turns and starts, the messages after the start that a
// durable skips are exactly those of the one turn begun at or before it, so every turn is
// handed over wholly or not at all and nothing stored after the start's turn is skipped.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OptionsError } from "../../src/errors.js";
import { encodeNewStart, NEW_START_KEY, readNewStart, refuseStartPastEnds, skippedAtNewStart } from "../../src/sources/new-start.js";
import { turnSpan } from "../../src/journal/turn-span.js";

const startArb = fc.uniqueArray(fc.tuple(fc.integer({ min: 0, max: 9999 }), fc.nat({ max: Number.MAX_SAFE_INTEGER })), { minLength: 1, maxLength: 8, selector: ([k]) => k }).map((entries) => new Map(entries));

describe("a \"new\" durable's recorded start", () => {
  it("is refused past its shard's end, or on a shard the durable does not read, and read at or before its end (property)", () => {
    fc.assert(
      fc.property(startArb, fc.array(fc.nat({ max: 1e6 }), { minLength: 8, maxLength: 8 }), fc.integer({ min: -1, max: 7 }), (start, slack, late) => {
        // Ends at or after every recorded start, except shard index `late`'s (one start past its end).
        const entries = [...start.entries()];
        const ends = new Map(entries.map(([k, at], i) => [k, Math.min(Number.MAX_SAFE_INTEGER, at + (slack[i] ?? 0))]));
        const lateEntry = late >= 0 ? entries[late % entries.length] : undefined;
        if (lateEntry === undefined) return void expect(() => refuseStartPastEnds("d", start, ends)).not.toThrow();
        const [k, at] = lateEntry;
        if (at === 0) ends.delete(k);
        else ends.set(k, at - 1);
        expect(() => refuseStartPastEnds("d", start, ends)).toThrow(OptionsError);
      }),
    );
  });

  it("reads back as written (property)", () => {
    fc.assert(
      fc.property(startArb, (start) => {
        expect(readNewStart("d", { [NEW_START_KEY]: encodeNewStart(start), other: "x" })).toEqual(start);
      }),
    );
  });

  it("is none when the metadata has no entry", () => {
    expect(readNewStart("d", undefined)).toBeUndefined();
    expect(readNewStart("d", { jetloop_max_deliver: "5" })).toBeUndefined();
  });

  it("refuses any value jetloop never writes (property)", () => {
    const bad = fc.oneof(
      fc.string().filter((s) => !/^((0|[1-9]\d{0,3}):(0|[1-9]\d{0,15}))(,(0|[1-9]\d{0,3}):(0|[1-9]\d{0,15}))*$/.test(s)),
      fc.constantFrom("0:01", "00:1", "0:1,0:2", "-1:3", "0:9007199254740993", "0:1,", " 0:1", "10000:1"),
    );
    fc.assert(
      fc.property(bad, (value) => {
        expect(() => readNewStart("d", { [NEW_START_KEY]: value })).toThrow(OptionsError);
      }),
    );
  });
});

/** A journal of contiguous turns (small and near the 1,000 limit), some of it in a batch. */
const journalArb = fc.array(fc.record({ n: fc.oneof(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 900, max: 1000 })), batch: fc.boolean() }), { minLength: 1, maxLength: 12 });

describe("skipping at a \"new\" start", () => {
  it("skips exactly the tail of the turn begun at or before the start, in its own shard only (property)", () => {
    fc.assert(
      fc.property(journalArb, fc.nat(), fc.integer({ min: 0, max: 3 }), (turns, pick, shard) => {
        const spans: { first: number; last: number; batch: boolean }[] = [];
        let seq = 1;
        for (const t of turns) {
          spans.push({ first: seq, last: seq + t.n - 1, batch: t.batch });
          seq += t.n;
        }
        const end = seq - 1;
        const at = pick % (end + 1);
        const start = new Map([[shard, at]]);
        for (const t of spans) {
          let skipped = 0;
          let elsewhere = false;
          for (let s = Math.max(t.first, at + 1); s <= t.last; s++) {
            const span = t.batch ? turnSpan(s, s - t.first + 1, t.last - t.first + 1) : undefined;
            const skip = skippedAtNewStart(start, shard, s, () => span);
            if (skip) skipped++;
            // Another shard's start says nothing about this shard's messages.
            elsewhere ||= skippedAtNewStart(start, shard + 1, s, () => span);
          }
          expect(elsewhere).toBe(false);
          const after = Math.max(0, t.last - Math.max(t.first - 1, at));
          // A batch begun at or before the start: all of it after the start skipped; any other: none.
          expect(skipped).toBe(t.batch && t.first <= at ? after : 0);
        }
        expect(skippedAtNewStart(undefined, shard, at + 1, () => turnSpan(at + 1, 2, 2))).toBe(false);
      }),
      { numRuns: 100 },
    );
  });
});
