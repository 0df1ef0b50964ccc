// The bus option readConsumers, from its rules: a prefix of 1-32 [A-Za-z0-9-] and a size of
// 1-64 give `size` distinct consumer names `{prefix}_{i}`, each one whole subject token (so a
// permission can grant it literally), and no two prefixes share a name; anything else is
// refused eagerly with an OptionsError naming the field; a pool reads by pull only.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OptionsError } from "../../src/errors.js";
import { parseBusOptions } from "../../src/connection/options.js";
import { readConsumerNames } from "../../src/journal/read-consumers.js";

const prefix = fc.stringMatching(/^[A-Za-z0-9-]{1,32}$/);
const size = fc.integer({ min: 1, max: 64 });

function refusal(options: unknown): OptionsError {
  try {
    parseBusOptions(options);
  } catch (e) {
    if (e instanceof OptionsError) return e;
    throw e;
  }
  throw new Error(`accepted: ${JSON.stringify(options)}`);
}

describe("readConsumers", () => {
  it("defaults to none, and waitMs to 30 s", () => {
    expect(parseBusOptions({}).readConsumers).toBeUndefined();
    expect(parseBusOptions({ readConsumers: { prefix: "alice", size: 4 } }).readConsumers).toEqual({ prefix: "alice", size: 4, waitMs: 30_000 });
  });

  it("a valid pool gives size distinct names, each one literal subject token", () => {
    fc.assert(
      fc.property(prefix, size, fc.integer({ min: 0, max: 600_000 }), (p, n, waitMs) => {
        const s = parseBusOptions({ readConsumers: { prefix: p, size: n, waitMs } }).readConsumers!;
        const names = readConsumerNames(s);
        expect(new Set(names).size).toBe(n);
        for (const name of names) expect(name).toMatch(/^[A-Za-z0-9-]+_\d+$/);
      }),
    );
  });

  it("two different prefixes never share a name", () => {
    fc.assert(
      fc.property(prefix, prefix, size, size, (a, b, n, m) => {
        fc.pre(a !== b);
        const other = new Set(readConsumerNames({ prefix: b, size: m }));
        for (const name of readConsumerNames({ prefix: a, size: n })) expect(other.has(name)).toBe(false);
      }),
    );
  });

  it("refuses a prefix that is not 1-32 of [A-Za-z0-9-], naming readConsumers.prefix", () => {
    const bad = fc.string({ maxLength: 40 }).filter((p) => !/^[A-Za-z0-9-]{1,32}$/.test(p));
    fc.assert(fc.property(bad, size, (p, n) => {
      expect(refusal({ readConsumers: { prefix: p, size: n } }).option).toBe("readConsumers.prefix");
    }));
  });

  it("refuses a size or waitMs out of range or not an integer, naming it", () => {
    const badSize = fc.oneof(fc.integer({ max: 0 }), fc.integer({ min: 65 }), fc.double({ noInteger: true }), fc.constant("4"));
    fc.assert(fc.property(prefix, badSize, (p, n) => {
      expect(refusal({ readConsumers: { prefix: p, size: n } }).option).toBe("readConsumers.size");
    }));
    const badWait = fc.oneof(fc.integer({ max: -1 }), fc.integer({ min: 600_001 }), fc.double({ noInteger: true }));
    fc.assert(fc.property(prefix, size, badWait, (p, n, w) => {
      expect(refusal({ readConsumers: { prefix: p, size: n, waitMs: w } }).option).toBe("readConsumers.waitMs");
    }));
  });

  it("refuses a pool with push reads", () => {
    fc.assert(fc.property(prefix, size, (p, n) => {
      expect(refusal({ readConsumers: { prefix: p, size: n }, journalReads: "push" }).option).toBe("readConsumers");
    }));
  });
});
