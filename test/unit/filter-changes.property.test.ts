// A durable's filter changes (src/sources/filter-changes.ts) and its delivery ledger
// (src/sources/delivery-ledger.ts), from the rules, on generated inputs: subject matching
// agrees with a token-by-token model; a turn begun by a change's end is skipped for what the
// change added, whole (every message of it judged the same), and a turn begun after it never;
// the metadata round-trips and anything jetloop never writes is refused; the ledger's floor
// is the lowest delivery still owed, and a repeat of a settled one is told apart.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OptionsError } from "../../src/errors.js";
import { DeliveryLedger } from "../../src/sources/delivery-ledger.js";
import {
  encodeFilterChanges,
  FILTER_CHANGES_KEY,
  type FilterChange,
  MAX_FILTER_CHANGES,
  mergeExact,
  pruneFilterChanges,
  readFilterChanges,
  refuseChangesPastEnd,
  skippedAtFilterChange,
  widens,
  withFilterChange,
} from "../../src/sources/filter-changes.js";
import { filterSelects } from "../../src/subjects/subjects.js";
import { TURN_REACH, turnSpan } from "../../src/journal/turn-span.js";

const token = fc.constantFrom("a", "b", "c", "d");
const subject = fc.array(token, { minLength: 1, maxLength: 5 }).map((t) => t.join("."));
const filter = fc
  .tuple(fc.array(fc.oneof(token, fc.constant("*")), { minLength: 1, maxLength: 5 }), fc.boolean())
  .map(([t, tail]) => (tail ? [...t.slice(0, -1), ">"] : t).join("."));

/** The model: NATS's rule token by token. */
function selects(f: string, s: string): boolean {
  const ft = f.split(".");
  const st = s.split(".");
  if (ft.at(-1) === ">") return st.length >= ft.length && ft.slice(0, -1).every((x, i) => x === "*" || x === st[i]);
  return ft.length === st.length && ft.every((x, i) => x === "*" || x === st[i]);
}

describe("filter changes", () => {
  it("a subject filter selects what NATS's token rule selects", () => {
    fc.assert(
      fc.property(filter, subject, (f, s) => {
        expect(filterSelects(f, s)).toBe(selects(f, s));
      }),
    );
  });

  it("a change widens exactly when the new filters select a subject the old ones do not (on the generated subjects)", () => {
    const all = fc.sample(subject, 300);
    fc.assert(
      fc.property(fc.array(filter, { minLength: 1, maxLength: 3 }), fc.array(filter, { minLength: 1, maxLength: 3 }), (old, next) => {
        const adds = all.some((s) => next.some((f) => selects(f, s)) && !old.some((f) => selects(f, s)));
        // Never reported narrowing when it adds: that would drop a change that matters.
        if (adds) expect(widens(old, next)).toBe(true);
        if (!widens(old, next)) expect(adds).toBe(false);
      }),
    );
  });

  it("every message of a turn is judged alike: the turn is skipped for an added subject when begun by the change's end, never when begun after", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5000 }),
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 0, max: 50 }),
        fc.integer({ min: 0, max: 2000 }),
        fc.boolean(),
        (first, size, width, at, selectedBefore) => {
          const from = Math.max(0, at - width);
          const change: FilterChange = { from, at, old: selectedBefore ? ["s.>"] : ["t.>"] };
          const span = turnSpan(first, 1, size);
          const verdicts = new Set<boolean>();
          for (let seq = Math.max(first, from + 1); seq <= span.last; seq++) {
            verdicts.add(skippedAtFilterChange([change], seq, "s.x", () => turnSpan(seq, seq - first + 1, size)));
          }
          if (verdicts.size === 0) return;
          // Judged alike: whole or absent.
          expect(verdicts.size).toBe(1);
          const skipped = [...verdicts][0];
          expect(skipped).toBe(!selectedBefore && first <= at);
        },
      ),
    );
  });

  it("an open change (its end not read) skips every turn's added part; after `from` a message of no turn is never skipped; at or before `from` only what the old filter selects passes", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 1, max: 20_000 }), (from, seq) => {
        const open: FilterChange = { from, at: undefined, old: ["t.>"] };
        const span = () => turnSpan(seq, 1, 2);
        expect(skippedAtFilterChange([open], seq, "s.x", span)).toBe(true);
        expect(skippedAtFilterChange([open], seq, "s.x", () => undefined)).toBe(seq <= from);
        expect(skippedAtFilterChange([open], seq, "t.x", span)).toBe(false);
      }),
    );
  });

  it("a message at or before some change's `from` is judged by the filter before the first such change, whatever came after (a consumer recreated below a change reads the filter now from there)", () => {
    const change = fc.record({ width: fc.nat({ max: 50 }), gap: fc.nat({ max: 50 }), old: fc.array(filter, { minLength: 1, maxLength: 3 }) });
    fc.assert(
      fc.property(fc.array(change, { minLength: 1, maxLength: 6 }), subject, fc.nat({ max: 400 }), (made, s, seq) => {
        let from = 0;
        const changes: FilterChange[] = made.map((c) => {
          from += c.gap;
          const out = { from, at: from + c.width, old: c.old };
          from += c.width;
          return out;
        });
        const first = changes.find((c) => seq <= c.from);
        if (first === undefined) return;
        // No turn: only the rule for messages judged before a change can skip it.
        expect(skippedAtFilterChange(changes, seq, s, () => undefined)).toBe(!first.old.some((f) => selects(f, s)));
      }),
    );
  });

  it("each of several changes judges what it added: A → A+B → A+B+C inside one turn skips B and C, keeps A", () => {
    const span = () => turnSpan(100, 1, 400);
    const changes: FilterChange[] = [
      { from: 150, at: 160, old: ["a.>"] },
      { from: 250, at: 260, old: ["a.>", "b.>"] },
    ];
    for (const seq of [170, 300, 499]) {
      expect(skippedAtFilterChange(changes, seq, "a.x", span)).toBe(false);
      expect(skippedAtFilterChange(changes, seq, "b.x", span)).toBe(true);
    }
    expect(skippedAtFilterChange(changes, 300, "c.x", span)).toBe(true);
    // The last change alone would hand out B's part after 260: the half turn.
    expect(skippedAtFilterChange(changes.slice(1), 300, "b.x", span)).toBe(false);
  });

  it("changes past the journal's end are refused, changes at or before it are read (property)", () => {
    const change = fc.record({ from: fc.nat({ max: 1e9 }), width: fc.option(fc.nat({ max: 1e6 }), { nil: undefined }) }).map((c): FilterChange => ({ from: c.from, at: c.width === undefined ? undefined : c.from + c.width, old: ["a.>"] }));
    fc.assert(
      fc.property(fc.array(change, { minLength: 1, maxLength: MAX_FILTER_CHANGES }), fc.nat({ max: 1e6 }), (changes, slack) => {
        const highest = Math.max(...changes.map((c) => c.at ?? c.from));
        expect(() => refuseChangesPastEnd("d", changes, highest + slack)).not.toThrow();
        expect(() => refuseChangesPastEnd("d", changes, highest - 1)).toThrow(OptionsError);
      }),
    );
  });

  it("the metadata round-trips; a value jetloop never writes is refused, not read as none", () => {
    const change = fc.record({ from: fc.nat({ max: 1e9 }), width: fc.option(fc.nat({ max: 1e6 }), { nil: undefined }), old: fc.array(filter, { minLength: 1, maxLength: 4 }) }).map(
      (c): FilterChange => ({ from: c.from, at: c.width === undefined ? undefined : c.from + c.width, old: c.old }),
    );
    fc.assert(
      fc.property(fc.array(change, { maxLength: MAX_FILTER_CHANGES }), (changes) => {
        expect(readFilterChanges("d", { [FILTER_CHANGES_KEY]: encodeFilterChanges(changes) })).toEqual(changes);
      }),
    );
    expect(readFilterChanges("d", undefined)).toEqual([]);
    expect(readFilterChanges("d", {})).toEqual([]);
    const bad = ["", "{}", "[1]", "[[1,2]]", "[[1,0,[\"a\"]]]", "[[-1,null,[\"a\"]]]", "[[1,2,[]]]", "[[1,2,[\"\"]]]", "[[1.5,2,[\"a\"]]]", "[[1,\"2\",[\"a\"]]]", "[[1,2,[3]]]"];
    for (const value of bad) expect(() => readFilterChanges("d", { [FILTER_CHANGES_KEY]: value }), value).toThrow(OptionsError);
    const tooMany = Array.from({ length: MAX_FILTER_CHANGES + 1 }, (_, i): FilterChange => ({ from: i, at: i, old: ["a"] }));
    expect(() => readFilterChanges("d", { [FILTER_CHANGES_KEY]: encodeFilterChanges(tooMany) })).toThrow(OptionsError);
  });

  it("a change past the bound is refused whole; one the ack floor has passed by a turn's reach is forgotten; equal exact changes merge", () => {
    const full = Array.from({ length: MAX_FILTER_CHANGES }, (_, i): FilterChange => ({ from: i, at: i + 1, old: ["a"] }));
    expect(() => withFilterChange("d", full, { from: 99, at: undefined, old: ["a"] })).toThrow(OptionsError);
    expect(withFilterChange("d", full.slice(1), { from: 99, at: undefined, old: ["a"] })).toHaveLength(MAX_FILTER_CHANGES);
    fc.assert(
      fc.property(fc.nat({ max: 10_000 }), fc.nat({ max: 20_000 }), (at, floor) => {
        expect(pruneFilterChanges([{ from: at, at, old: ["a"] }], floor)).toHaveLength(at + TURN_REACH > floor ? 1 : 0);
        expect(pruneFilterChanges([{ from: at, at: undefined, old: ["a"] }], floor)).toHaveLength(1);
      }),
    );
    expect(mergeExact([{ from: 5, at: 5, old: ["a"] }, { from: 5, at: 5, old: ["b"] }, { from: 5, at: 6, old: ["c"] }])).toEqual([
      { from: 5, at: 5, old: ["a"] },
      { from: 5, at: 6, old: ["c"] },
    ]);
  });
});

describe("the delivery ledger", () => {
  type Step = { kind: "deliver" } | { kind: "settle"; pick: number } | { kind: "redeliver"; pick: number };
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.constant<Step>({ kind: "deliver" }),
    fc.nat().map((pick): Step => ({ kind: "settle", pick })),
    fc.nat().map((pick): Step => ({ kind: "redeliver", pick })),
  );

  it("its floor is the lowest delivery still owed (else after the last), and a repeat of a settled one is told apart", () => {
    fc.assert(
      fc.property(fc.nat({ max: 100 }), fc.array(step, { maxLength: 200 }), (ackFloor, steps) => {
        const ledger = new DeliveryLedger();
        ledger.serverFloor(ackFloor);
        let next = ackFloor + 1;
        const owed = new Set<number>();
        const settled = new Set<number>();
        for (const s of steps) {
          if (s.kind === "deliver") {
            next += 1 + (next % 3); // filtered-out sequences between
            expect(ledger.received(next)).toBe(false);
            owed.add(next);
          } else if (owed.size > 0) {
            const seq = [...owed][s.pick % owed.size]!;
            if (s.kind === "settle") {
              ledger.settled(seq);
              owed.delete(seq);
              settled.add(seq);
            } else expect(ledger.received(seq)).toBe(false);
          }
          const last = next > ackFloor + 1 ? next : 0;
          expect(ledger.floor()).toBe(owed.size > 0 ? Math.min(...owed) : Math.max(ackFloor + 1, last + 1));
          expect(ledger.owed).toBe(owed.size);
        }
        // After a recreation at the floor, every settled sequence above it is a repeat.
        const floor = ledger.floor();
        ledger.restarted();
        for (const seq of [...settled].filter((x) => x >= floor).sort((a, b) => a - b)) expect(ledger.received(seq)).toBe(true);
      }),
    );
  });
});
