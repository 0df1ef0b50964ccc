/**
 * Every way a JavaScript value enters the writer as JSON: RawJson.of (a tool's input, gate
 * metadata, a field's default, a response value), RawJson.fromText, and a custom type's
 * untyped field. JSON.stringify writes a boxed NaN or Infinity, or a toJSON returning one,
 * as `null`, drops a function or symbol member, writes a Map as `{}` and an undefined
 * element as `null`: each a record Go never wrote. Each is refused with a typed error (the
 * number ones `inexact_number`, like an unboxed Infinity), wherever it stands in the value.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { encodeEvent } from "../../src/codec/codec.js";
import { defaultRegistry } from "../../src/events/catalogue.js";
import { defineEventType } from "../../src/events/registry.js";
import { EventEncodeError } from "../../src/errors.js";
import { RawJson } from "../../src/wire/raw-json.js";
import { StrictJsonError } from "../../src/wire/strict-json.js";

/** Values JSON.stringify would write as another value, by the reason they are refused. */
const oddNumbers: [string, () => unknown][] = [
  ["boxed Infinity", () => new Number(Infinity)],
  ["boxed -Infinity", () => new Number(-Infinity)],
  ["boxed NaN", () => new Number(NaN)],
  ["boxed -0", () => new Number(-0)],
  ["Infinity", () => Infinity],
  ["NaN", () => NaN],
  ["-0", () => -0],
  ["BigInt", () => 12n],
  ["boxed BigInt", (): unknown => Object(12n) as unknown],
  ["toJSON Infinity", () => ({ toJSON: () => Infinity })],
  ["toJSON NaN", () => ({ toJSON: () => NaN })],
  ["toJSON -0", () => ({ toJSON: () => -0 })],
  ["toJSON BigInt", () => ({ toJSON: () => 1n })],
  ["toJSON boxed NaN", () => ({ toJSON: () => new Number(NaN) })],
];
const oddOthers: [string, () => unknown][] = [
  ["toJSON undefined", () => ({ toJSON: () => undefined })],
  ["Map", () => new Map([["a", 1]])],
  ["Set", () => new Set([1])],
  ["function", () => () => 1],
  ["symbol", () => Symbol("s")],
];

/** The odd value placed in a JSON value: as itself, an element, a member, deep. */
const placed = (odd: () => unknown) =>
  fc.array(fc.constantFrom("array", "object", "member-last"), { maxLength: 6 }).map((wraps) =>
    wraps.reduce<() => unknown>((inner, w) => () => (w === "array" ? [1, inner()] : w === "object" ? { a: 0, b: inner() } : { z: "x", [`k${wraps.length}`]: inner() }), odd),
  );

const reasonOf = (f: () => unknown): string | undefined => {
  try {
    f();
  } catch (e) {
    return e instanceof StrictJsonError ? e.reason : e instanceof EventEncodeError ? e.reason : `untyped ${String(e)}`;
  }
  return undefined;
};

describe("the writer refuses what JSON.stringify would write as another value", () => {
  it("RawJson.of, every odd number at every place: inexact_number; other unwritable values: malformed_json", () => {
    let n = 0;
    fc.assert(
      fc.property(fc.constantFrom(...oddNumbers, ...oddOthers), fc.nat(), (entry, seed) => {
        const [name, odd] = entry;
        const make = fc.sample(placed(odd), { numRuns: 1, seed })[0]!;
        const expected = oddNumbers.some(([m]) => m === name) ? "inexact_number" : "malformed_json";
        // A function or symbol alone or as a member, an odd value anywhere: refused.
        expect(reasonOf(() => RawJson.of(make())), name).toBe(expected);
        n++;
      }),
      { numRuns: 600, seed: 3921 },
    );
    expect(n).toBe(600);
  }, 60_000);

  it("what JSON.stringify writes exactly is still written: boxed finite numbers, strings, booleans, toJSON results, dates, undefined members", () => {
    expect(RawJson.of(new Number(3)).text).toBe("3");
    expect(RawJson.of([new String("s"), new Boolean(false)]).text).toBe('["s",false]');
    expect(RawJson.of({ a: undefined, b: 1 }).text).toBe('{"b":1}');
    expect(RawJson.of(new Date(0)).text).toBe('"1970-01-01T00:00:00.000Z"');
    expect(RawJson.of({ toJSON: () => ({ x: 1 }) }).text).toBe('{"x":1}');
    expect(RawJson.of(2 ** 60).text).toBe(JSON.stringify(2 ** 60));
  });

  it("a forged RawJson (its prototype without its constructor) or a changed one is not written as text", () => {
    const forged = Object.assign(Object.create(RawJson.prototype) as object, { text: "NaN", depth: 0 });
    expect(RawJson.is(forged)).toBe(false);
    const real = RawJson.fromText("[1]");
    expect(RawJson.is(real)).toBe(true);
    expect(() => {
      (real as unknown as { text: string }).text = "NaN";
    }).toThrow(TypeError);
    expect(reasonOf(() => RawJson.fromText(123 as unknown as string))).toBe("malformed_json");
  });

  it("a custom type's untyped field: the same values refused as unwritable, never written as {} or null", () => {
    const def = defineEventType({ type: "AdvAny", family: "adv", class: "enduring", scope: "session", body: { extra: z.unknown().optional() } });
    const registry = defaultRegistry.with(def);
    const base = { type: "AdvAny" as const, visibility: "public" as const, sessionId: "6f1c2a3b-4d5e-4f60-8a7b-000000000101", eventId: "6f1c2a3b-4d5e-4f60-8a7b-000000000e01" };
    for (const [name, odd] of [...oddNumbers, ...oddOthers, ["Date", () => new Date(0)] as [string, () => unknown]]) {
      if (name === "symbol" || name === "function") continue;
      expect(reasonOf(() => encodeEvent({ ...base, extra: { a: [odd()] } }, { registry })), name).toBe("unwritable");
    }
    expect(new TextDecoder().decode(encodeEvent({ ...base, extra: { a: [1, "x"] } }, { registry }))).toContain('"extra":{"a":[1,"x"]}');
  });
});
