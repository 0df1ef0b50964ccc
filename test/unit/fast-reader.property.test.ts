/**
 * The decoder's fast path (src/wire/fast-json.ts: a prescan, JSON.parse, a walk) against
 * its reference, the guided reader, which decides every input it is given: on every input
 * the two give the same verdict, the same event (deep-equal, RawJson text included), the
 * same error (name, code, reason, field, message). A disagreement is a failure, never a
 * fallback.
 *
 * Inputs: every text of every Go file in test/conformance/data/, events generated from the
 * model, and near-ordinary texts: each Go-written event with each condition of the prescan
 * broken at each place it can be (an escape spelled otherwise, a number written otherwise,
 * a repeated or folded or special key, deep nesting, an escaped time, whitespace), and
 * random edits of those texts. The fast path must also take what it exists for: every
 * Go-written event.
 */
import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeEvent, decodeEventByReference, encodeEvent, envelopeGuide } from "../../src/codec/codec.js";
import { defaultRegistry } from "../../src/events/catalogue.js";
import { FAST_DEPTH, parseOrdinaryJson } from "../../src/wire/fast-json.js";
import { parseStrictJson } from "../../src/wire/strict-json.js";
import { readJsonl, type GoVerdict, type GoWritten } from "../conformance/go-oracle.js";
import { anyEventArb } from "./arbitraries.js";

const guide = envelopeGuide(defaultRegistry);
const utf8 = new TextEncoder();
const TIMEOUT_MS = 120_000;

const written = readJsonl<GoWritten>("go-written-events.jsonl");
const verdictInputs: (string | Uint8Array)[] = [...readJsonl<GoVerdict>("go-verdicts.jsonl"), ...readJsonl<GoVerdict>("go-verdicts-extra.jsonl")]
  .filter((c) => c.kind !== "request")
  .map((c) => (typeof c.json === "string" ? c.json : Uint8Array.from(Buffer.from(c.json_b64!, "base64"))));
/** The gateway's Go files: each line's JSON holds event texts (bodies, SSE data) among other fields. */
const gatewayTexts: string[] = ["go-http-bodies.jsonl", "go-sse-frames.jsonl"].flatMap((f) =>
  readJsonl<unknown>(f).flatMap((line) => stringsIn(line).filter((s) => s.startsWith("{"))),
);

function stringsIn(v: unknown): string[] {
  if (typeof v === "string") return [v];
  if (Array.isArray(v)) return v.flatMap(stringsIn);
  if (v !== null && typeof v === "object") return Object.values(v).flatMap(stringsIn);
  return [];
}

/** What a decode says, every part of it. */
function outcome(decode: () => unknown): unknown {
  try {
    return { ok: decode() };
  } catch (e) {
    if (!(e instanceof Error)) throw e;
    return { error: { name: e.name, message: e.message, ...(e as object) } };
  }
}

let fastTaken = 0;

/** Fails unless the fast and reference paths agree on `input`, at the reader and at decode. */
function agree(input: string | Uint8Array): void {
  const text = typeof input === "string" ? input : new TextDecoder().decode(input);
  const fast = parseOrdinaryJson(text, guide);
  if (fast !== undefined) {
    fastTaken++;
    let reference: unknown;
    try {
      reference = parseStrictJson(text, guide);
    } catch (e) {
      reference = e;
    }
    if (!isDeepStrictEqual(fast, reference)) expect.fail(`the readers differ on ${JSON.stringify(text)}`);
  }
  const a = outcome(() => decodeEvent(input));
  const b = outcome(() => decodeEventByReference(input));
  if (!isDeepStrictEqual(a, b)) expect(a, `decoders differ on ${JSON.stringify(text)}`).toEqual(b);
}

interface Token {
  start: number;
  end: number;
  kind: "key" | "string" | "number";
}

/** The keys, strings and numbers of valid JSON text, with where they stand. */
function tokens(text: string): Token[] {
  const out: Token[] = [];
  const re = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const start = m.index;
    const end = start + m[0].length;
    if (m[0][0] === '"') out.push({ start, end, kind: /^\s*:/.test(text.slice(end)) ? "key" : "string" });
    else out.push({ start, end, kind: "number" });
  }
  return out;
}

const splice = (t: string, start: number, end: number, s: string): string => t.slice(0, start) + s + t.slice(end);

/** A string's text with one of its characters (or a new one) spelled by an escape the fast path may not take, or may. */
const STRING_EDITS = [
  '\\/',
  "\\u0041",
  "\\u00e9",
  "\\u00E9",
  "\\u0008",
  "\\b",
  "\\u000a",
  "\\u001f",
  "\\u001F",
  "\\u007f",
  "\\u003c",
  "\\u003C",
  "<",
  "\u2028",
  "\\u2028",
  "\\ud800",
  "\\udc00",
  "\\ud83d\\ude00",
  "\ud83d\ude00",
  "\\u0022",
  '\\"',
  "\\\\",
  "é",
  "K",
  "\u212a",
  "\u017f",
  "\t",
];

/** Other spellings of a number: exact, inexact, out of range, not JSON. */
const NUMBER_EDITS = ["0", "-0", "1.0", "1e2", "1E2", "0.1", "1.5e-7", "1e+21", "9007199254740991", "9007199254740993", "1152921504606846976", "123456789012345", "1234567890123456", "1e400", "-1e400", "01", "1.", "2", "-1", "0.30000000000000004"];

/** Keys put beside, or in place of, a key. */
const KEY_EDITS = ["__proto__", "0", "1", "42", "-1", "é", "Type", "TYPE", "type", "v", "V", "\u212aey", "ſ", "\\u0074ype", "", "constructor", "event_id", "EVENT_ID", "Text", "text", "ID", "Input"];

/**
 * Near-ordinary texts of `text`: each prescan condition broken at each place it can be
 * (every string, number and key), the variants of each condition taken in turn from place
 * to place (`turn` counts across texts), so every variant lands at many places.
 */
function* nearOrdinary(text: string): Generator<string> {
  const pick = <T>(list: readonly T[]): T => list[turn++ % list.length]!;
  const toks = tokens(text);
  for (const t of toks) {
    if (t.kind === "number") {
      yield splice(text, t.start, t.end, pick(NUMBER_EDITS));
      yield splice(text, t.start, t.end, pick(NUMBER_EDITS));
      continue;
    }
    yield splice(text, t.end - 1, t.end - 1, pick(STRING_EDITS)); // at the end of the string
    if (t.end - t.start > 2) yield splice(text, t.start + 1, t.start + 2, pick(STRING_EDITS)); // in place of its first character
    if (t.kind === "key") {
      const end = valueEnd(text, t.end);
      const member = text.slice(t.start, end);
      const value = text.slice(text.indexOf(":", t.end) + 1, end);
      yield splice(text, t.start, t.start, `${member},`); // an exact repeat
      yield splice(text, t.start, t.start, `${text.slice(t.start, t.end).toUpperCase()}:${value},`); // a repeat in other letter case
      yield splice(text, t.start, t.end, `"${pick(KEY_EDITS)}"`); // renamed
      yield splice(text, t.start, t.start, `"${pick(KEY_EDITS)}":${value},`); // another key beside it
      const depth = FAST_DEPTH - 2 + (turn++ % 4); // about the fast path's nesting limit
      yield splice(text, t.start, t.start, `"deep":${"[".repeat(depth)}1${"]".repeat(depth)},`);
      yield splice(text, t.end, t.end, pick([" ", "\n", "\t", "\r"]));
    }
  }
  for (const at of [0, 1, text.length - 1, text.length]) yield splice(text, at, at, pick([" ", "\n"]));
  yield `\ufeff${text}`;
  yield `${text}x`;
  yield "[1]";
  yield '"x"';
  yield "{}";
}
let turn = 0;

/** Just after the value that starts after the colon following `keyEnd`. */
function valueEnd(text: string, keyEnd: number): number {
  let i = text.indexOf(":", keyEnd) + 1;
  while (/\s/.test(text[i]!)) i++;
  let depth = 0;
  for (; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      i++;
      while (text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
      if (depth === 0) return i + 1;
    } else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      if (depth === 0) return i;
      depth--;
      if (depth === 0) return i + 1;
    } else if (depth === 0 && (c === "," || /\s/.test(c))) return i;
  }
  return i;
}

describe("the fast reader agrees with the guided reader", () => {
  it("takes every Go-written event, and reads each as the guided reader does", () => {
    fastTaken = 0;
    for (const w of written) agree(w.json);
    expect(fastTaken).toBe(written.length);
  });

  it("on every input of every Go verdict file and the gateway's Go files", () => {
    for (const input of [...verdictInputs, ...gatewayTexts]) agree(input);
    expect(verdictInputs.length).toBeGreaterThan(1800);
    expect(gatewayTexts.length).toBeGreaterThan(50);
  }, TIMEOUT_MS);

  it(
    "on near-ordinary texts: each prescan condition broken at each place of each Go-written event",
    () => {
      fastTaken = 0;
      let n = 0;
      for (const w of written) {
        for (const text of nearOrdinary(w.json)) {
          // Every eighth as bytes: the UTF-8 step is the same on both paths.
          agree(n % 8 === 0 ? utf8.encode(text) : text);
          n++;
        }
      }
      // Both paths are exercised: some edits are still ordinary, most are not.
      expect(n).toBeGreaterThan(9_000);
      expect(fastTaken).toBeGreaterThan(n / 20);
      expect(fastTaken).toBeLessThan(n);
    },
    TIMEOUT_MS,
  );

  it(
    "on events generated from the model, and random edits of Go-written texts",
    () => {
      fc.assert(
        fc.property(anyEventArb, (event) => {
          const bytes = encodeEvent(event);
          agree(bytes);
        }),
        { numRuns: 500 },
      );
      const pieces = [...STRING_EDITS, ...NUMBER_EDITS, ...KEY_EDITS.map((k) => `"${k}":`), ",", ":", "{", "}", "[", "]", '"', " ", "null", "true"];
      fc.assert(
        fc.property(
          fc.constantFrom(...written.map((w) => w.json)),
          fc.array(fc.tuple(fc.nat(), fc.nat({ max: 3 }), fc.constantFrom(...pieces)), { minLength: 1, maxLength: 3 }),
          (text, edits) => {
            let t = text;
            for (const [at, cut, piece] of edits) {
              const i = at % (t.length + 1);
              t = splice(t, i, Math.min(t.length, i + cut), piece);
            }
            agree(t);
          },
        ),
        { numRuns: 5_000 },
      );
    },
    TIMEOUT_MS,
  );
});
