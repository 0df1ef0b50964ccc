/**
 * Numbers past float64, anywhere in the text. The runtime's UnmarshalEvent first walks the
 * whole event with a json.Decoder (`rejectDuplicateJSONKeys`, harness pkg/event/marshal.go),
 * whose Token() reads every number into an interface{}: a float64, by strconv.ParseFloat.
 * A number whose magnitude rounds past the largest float64 is ErrRange there, and the event
 * is refused wherever the number stands: a typed field, raw JSON (a tool's Input, a block's
 * ProviderState, gate metadata, response values, a field's default), a map's value, an
 * array's element, the value of a key no type knows, at any depth. A number that rounds
 * to zero (underflow) is no error: it is read, and raw JSON keeps its text.
 *
 * The rule is checked against exact arithmetic (BigInt), not against JavaScript's Number():
 * a number overflows when its magnitude is at least 2^1024 - 2^970, the halfway point
 * between the largest float64 and 2^1024, which round-to-nearest-even takes to infinity.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeEvent, encodeEvent, safeDecodeEvent } from "../../src/codec/codec.js";
import { thawed } from "./fixtures.js";
import { RawJson } from "../../src/wire/raw-json.js";
import { StrictJsonError } from "../../src/wire/strict-json.js";
import { type GoVerdict, type GoWritten, readJsonl } from "../conformance/go-oracle.js";
import { reportFigure } from "../harness/figures-log.js";

/** 2^1024 - 2^970: the least magnitude that rounds to infinity. */
const OVERFLOW_AT = 2n ** 1024n - 2n ** 970n;

/** Whether the JSON number `text` overflows float64, by exact arithmetic. */
function overflows(text: string): boolean {
  const m = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text)!;
  const digits = (m[1]! + (m[2] ?? "")).replace(/^0+/, "");
  if (digits === "") return false; // zero, whatever its exponent
  // value = digits × 10^exp
  const exp = BigInt(m[3] ?? "0") - BigInt((m[2] ?? "").length);
  const magnitude = BigInt(digits.length) + exp; // 10^(magnitude-1) <= value < 10^magnitude
  if (magnitude <= 308n) return false;
  if (magnitude > 310n) return true;
  const e = Number(exp);
  return e >= 0 ? BigInt(digits) * 10n ** BigInt(e) >= OVERFLOW_AT : BigInt(digits) >= OVERFLOW_AT * 10n ** BigInt(-e);
}

/** Every number form JSON's grammar has, weighted toward the edges of float64's range. */
const numberArb = fc
  .tuple(
    fc.boolean(),
    fc.oneof(
      fc.constant("0"),
      fc.stringMatching(/^[1-9][0-9]{0,20}$/),
      // Long integers: 300 to 320 digits straddle the largest double (309 digits).
      fc.tuple(fc.integer({ min: 300, max: 320 }), fc.stringMatching(/^[1-9][0-9]{0,3}$/)).map(([n, head]) => head + "7".repeat(n - head.length)),
      fc.constantFrom("17976931348623157", "17976931348623158", "17976931348623159", "1797693134862315708145274237317043567981", "2", "1"),
    ),
    fc.option(fc.stringMatching(/^[0-9]{1,25}$/), { nil: undefined }),
    fc.option(
      fc.tuple(
        fc.constantFrom("e", "E"),
        fc.constantFrom("", "+", "-"),
        fc.oneof(
          fc.integer({ min: 0, max: 20 }).map(String),
          fc.integer({ min: 280, max: 340 }).map(String),
          fc.integer({ min: 320, max: 420 }).map(String),
          fc.constantFrom("999999999999999999", "9223372036854775808", "00000309", "0308"),
        ),
      ),
      { nil: undefined },
    ),
  )
  .map(([neg, int, frac, exp]) => `${neg ? "-" : ""}${int}${frac !== undefined ? `.${frac}` : ""}${exp ? exp.join("") : ""}`);

/** The same number wrapped in `depth` arrays and objects. */
const nestedArb = (n: string) =>
  fc.array(fc.constantFrom("array", "object"), { maxLength: 40 }).map((wraps) => wraps.reduce((v, w) => (w === "array" ? `[1,${v}]` : `{"a":0,"n":${v}}`), n));

const written = readJsonl<GoWritten>("go-written-events.jsonl");
/** Every event text the Go runtime accepted and jetloop reads. */
const accepted: string[] = [
  ...written.map((w) => w.json),
  ...[...readJsonl<GoVerdict>("go-verdicts.jsonl"), ...readJsonl<GoVerdict>("go-verdicts-extra.jsonl")]
    .filter((c) => c.go_ok && c.kind !== "request" && c.json !== undefined)
    .map((c) => c.json!),
].filter((text) => safeDecodeEvent(text).success);

/** Offsets just after each `{` and `[` outside strings: where a member or element can go. */
function openings(text: string): { at: number; object: boolean; empty: boolean }[] {
  const out: { at: number; object: boolean; empty: boolean }[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      for (i++; text[i] !== '"'; i++) if (text[i] === "\\") i++;
    } else if (c === "{" || c === "[") out.push({ at: i + 1, object: c === "{", empty: text[i + 1] === (c === "{" ? "}" : "]") });
  }
  return out;
}

/** `value` put into `text` after an opening: as a key no type knows, or as the first element. */
function inserted(text: string, where: { at: number; object: boolean; empty: boolean }, value: string): string {
  const item = where.object ? `"zz_no_such_key":${value}` : value;
  return `${text.slice(0, where.at)}${item}${where.empty ? "" : ","}${text.slice(where.at)}`;
}

function reason(text: string): string {
  const r = safeDecodeEvent(text);
  return r.success ? "ok" : "reason" in r.error ? r.error.reason : `invalid:${r.error.field}`;
}

const sites = accepted.flatMap((text) => openings(text).map((where) => ({ text, where })));
const counts = { overflow: 0, inRange: 0 };

describe("a number past float64 is refused wherever it stands, as Go's whole-event scan refuses it", () => {
  it("every position of every Go-accepted event (any object: a key no type knows, at any depth, raw JSON, maps; any array: an element), every form", () => {
    expect(sites.length).toBeGreaterThan(3000);
    fc.assert(
      fc.property(fc.nat({ max: sites.length - 1 }), numberArb.chain((n) => fc.tuple(fc.constant(n), nestedArb(n))), (k, [n, value]) => {
        const { text, where } = sites[k]!;
        const got = reason(inserted(text, where, value));
        if (overflows(n)) {
          counts.overflow++;
          // Go refuses it first, before reading anything else.
          expect(got, n).not.toBe("ok");
          if (reason(inserted(text, where, value.replace(n, "0"))) === "ok") expect(got, n).toBe("number_out_of_range");
        } else {
          counts.inRange++;
          // Anything else is read as the same text with a plain number there would be, except
          // a typed or generic value, which must read exactly (the inexact-numbers rule).
          if (got === "number_out_of_range") expect.fail(`${n} does not overflow`);
        }
      }),
      { numRuns: 3000, seed: 39 },
    );
    reportFigure(`number-range: ${counts.overflow} overflowing and ${counts.inRange} in-range numbers at generated positions`);
    expect(counts.overflow).toBeGreaterThan(300);
    expect(counts.inRange).toBeGreaterThan(300);
  }, 120_000);

  it("in a typed number field (v, turn index, usage counts, timeout, expiry): refused as out of range when it overflows", () => {
    const typed = accepted.flatMap((text) => [...text.matchAll(/"(v|turn_index|input_tokens|output_tokens|timeout|expires_at_unix_milli|strictness)":(-?\d+)/g)].map((m) => ({ text, at: m.index + m[0].length - m[2]!.length, len: m[2]!.length })));
    expect(typed.length).toBeGreaterThan(100);
    let n = 0;
    fc.assert(
      fc.property(fc.nat({ max: typed.length - 1 }), numberArb, (k, num) => {
        const { text, at, len } = typed[k]!;
        const got = reason(text.slice(0, at) + num + text.slice(at + len));
        if (overflows(num)) {
          n++;
          expect(got, num).toBe("number_out_of_range");
        } else expect(got, num).not.toBe("number_out_of_range");
      }),
      { numRuns: 1500, seed: 39 },
    );
    reportFigure(`number-range: ${n} overflowing numbers in typed fields`);
    expect(n).toBeGreaterThan(100);
  }, 60_000);

  it("underflow reads as Go reads it: raw JSON keeps its text and writes it back byte for byte", () => {
    const base = written.find((w) => w.json.includes('"Input":{"command":"npm test"}'))!.json;
    const tiny = ["1e-400", "-2e-324", "0.0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001", "1E-999999999999999999", "0e999999999999999999", "-0.0e+400"];
    for (const t of tiny) {
      const text = base.replace('"Input":{"command":"npm test"}', `"Input":{"command":[${t}]}`);
      expect(new TextDecoder().decode(encodeEvent(decodeEvent(text)))).toBe(text);
    }
  });
});

describe("the writer refuses what Go's reader refuses: no overflowing number is ever written", () => {
  it("raw JSON text with an overflowing number anywhere cannot be made (RawJson.fromText), so no event carries one", () => {
    let n = 0;
    fc.assert(
      fc.property(numberArb.chain((num) => fc.tuple(fc.constant(num), nestedArb(num))), ([num, value]) => {
        const attempt = () => RawJson.fromText(value);
        if (overflows(num)) {
          n++;
          expect(attempt).toThrow(StrictJsonError);
          try {
            attempt();
          } catch (e) {
            expect((e as StrictJsonError).reason).toBe("number_out_of_range");
          }
        } else expect(attempt().text).toBe(value);
      }),
      { numRuns: 1000, seed: 39 },
    );
    reportFigure(`number-range: ${n} overflowing raw texts refused by the writer`);
    expect(n).toBeGreaterThan(100);
  }, 60_000);

  it("an event cannot carry one either: a raw field given as RawJson text, or as a JavaScript value (±Infinity), is refused before anything is written", () => {
    const event = thawed(decodeEvent<{ messages: { blocks: Record<string, unknown>[] }[] }>(written.find((w) => w.json.includes(`"Input":{"command":"npm test"}`))!.json));
    const block = event.messages[0]!.blocks.find((b) => b.type === "tool_use")!;
    for (const bad of ["1e309", "-1E400", `{"a":[${"9".repeat(400)}]}`]) expect(() => RawJson.fromText(bad)).toThrow(StrictJsonError);
    for (const bad of [Infinity, -Infinity, { a: [Infinity] }]) {
      block.input = bad;
      expect(() => encodeEvent(event)).toThrow();
    }
    block.input = { command: 1e308 };
    expect(new TextDecoder().decode(encodeEvent(event))).toContain('"Input":{"command":1e+308}');
  });
});
