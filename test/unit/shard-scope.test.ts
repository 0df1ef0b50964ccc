// Where a reader starts in each journal shard (src/sources/shard-scope.ts), from the rules:
// a vector of positions has one entry per shard and starts each shard after its entry; a
// single sequence names one shard's position and is refused for a reader of several; every
// other start is the same in every shard.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OptionsError } from "../../src/errors.js";
import { resolveFilter } from "../../src/sources/filter.js";
import { checkStart, startIn } from "../../src/sources/shard-scope.js";
import { defaultRegistry as registry, newId } from "../../src/index.js";

const count = fc.integer({ min: 1, max: 8 });

describe("a reader's start per shard", () => {
  it("a vector of the namespace's length starts each shard after its entry; any other length is refused", () => {
    fc.assert(
      fc.property(count, fc.array(fc.nat({ max: 1e9 }), { minLength: 1, maxLength: 9 }), (n, after) => {
        const resolved = resolveFilter("ns", { enduring: "all" }, registry, n);
        if (after.length !== n) {
          expect(() => checkStart({ after }, resolved, n, "a reader")).toThrow(OptionsError);
          return;
        }
        checkStart({ after }, resolved, n, "a reader");
        for (let k = 0; k < n; k++) expect(startIn({ after }, k)).toEqual({ seq: after[k]! + 1 });
      }),
    );
  });

  it("{ seq } is refused exactly when the filter selects sessions of several shards", () => {
    fc.assert(
      fc.property(count, fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 1e6 }), (n, sessions, seq) => {
        const ids = Array.from({ length: sessions }, () => newId());
        for (const filter of [{ enduring: "all" as const }, { enduring: "all" as const, sessions: ids }]) {
          const resolved = resolveFilter("ns", filter, registry, n);
          const start = () => checkStart({ seq }, resolved, n, "a reader");
          if (resolved.shards.length > 1) expect(start).toThrow(OptionsError);
          else {
            start();
            expect(startIn({ seq }, resolved.shards[0]!.shard.index)).toEqual({ seq });
          }
        }
      }),
    );
  });

  it('"new", "all" and { time } are the same start in every shard', () => {
    fc.assert(
      fc.property(count, fc.constantFrom<"new" | "all" | { time: Date }>("new", "all", { time: new Date(0) }), (n, start) => {
        const resolved = resolveFilter("ns", { enduring: "all" }, registry, n);
        checkStart(start, resolved, n, "a reader");
        for (let k = 0; k < n; k++) expect(startIn(start, k)).toBe(start);
      }),
    );
  });
});
