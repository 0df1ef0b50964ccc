// compactJson: valid JSON text as Go's json.Encoder embeds a json.RawMessage (the
// gateway's pages and frames, from the stored bytes). Generated over every JSON value,
// with whitespace of every kind between every token and the characters Go escapes.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compactJson } from "../../src/wire/strict-json.js";
import { goJson } from "../../src/wire/wire.js";

const space = fc.array(fc.constantFrom(" ", "\t", "\n", "\r"), { maxLength: 3 }).map((a) => a.join(""));
const unsafeText = fc.array(fc.constantFrom("a", " ", "<", ">", "&", "\u2028", "\u2029", '"', "\\", "/", "é", "\n"), { maxLength: 8 }).map((a) => a.join(""));

/** `v` written with `gap()` between every pair of tokens (and around the whole). */
function spaced(v: unknown, gap: () => string): string {
  const w = (x: unknown): string => {
    if (Array.isArray(x)) return `[${gap()}${x.map((e) => `${w(e)}${gap()}`).join(`,${gap()}`)}]`;
    if (x !== null && typeof x === "object") {
      return `{${gap()}${Object.entries(x)
        .map(([k, e]) => `${JSON.stringify(k)}${gap()}:${gap()}${w(e)}${gap()}`)
        .join(`,${gap()}`)}}`;
    }
    return JSON.stringify(x);
  };
  return `${gap()}${w(v)}${gap()}`;
}

const value = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: "small" },
    unsafeText,
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("v"), { maxLength: 4 }),
    fc.dictionary(fc.oneof(unsafeText, fc.string()), tie("v"), { maxKeys: 4 }),
  ),
})).v;

describe("compactJson", () => {
  it("writes any JSON value, however spaced, as Go's encoder embeds it", () => {
    fc.assert(
      fc.property(value, fc.infiniteStream(space), (v, gaps) => {
        // goJson refuses keys equal under Go's fold; such text is not what the reader accepts either.
        let canonical: string;
        try {
          canonical = goJson(v);
        } catch {
          return;
        }
        expect(compactJson(spaced(v, () => gaps.next().value as string))).toBe(canonical);
      }),
      { numRuns: 500 },
    );
  });

  it("returns Go's own form as it is (the same string, nothing copied)", () => {
    fc.assert(
      fc.property(value, (v) => {
        let canonical: string;
        try {
          canonical = goJson(v);
        } catch {
          return;
        }
        expect(compactJson(canonical)).toBe(canonical);
      }),
    );
    const text = '{"a":"x y","b":[1,2],"c":"\\u003c\\"\\\\"}';
    expect(compactJson(text)).toBe(text);
  });

  it("keeps escapes and spaces inside strings, and every number's spelling", () => {
    expect(compactJson('{ "p" : "\\/work  dir\\"  x" , "n" : [ -0 , 3e+0 , 1.0 ] }')).toBe('{"p":"\\/work  dir\\"  x","n":[-0,3e+0,1.0]}');
    expect(compactJson('"a\\\\" ')).toBe('"a\\\\"');
  });
});
