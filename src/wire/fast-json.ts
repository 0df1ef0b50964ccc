/**
 * The reader's fast path: `JSON.parse` for text it can prove ordinary, where the guided
 * reader (strict-json.ts) would give the same value.
 *
 * It never refuses and never words an error: it answers "here is the value the guided
 * reader would return" or `undefined` ("not mine"), and the caller then runs the guided
 * reader, which decides every input it is given. So a case the proof does not cover costs
 * one wasted scan, never a different verdict. A differential test
 * (test/unit/fast-reader.property.test.ts) holds the two readers to the same value on every
 * Go verdict file and on generated near-ordinary texts.
 *
 * Ordinary text, proven by one prescan of the text and one walk of the parsed value:
 * - every escape is one `JSON.stringify`/Go's writer would write (`\"`, `\\`, `\b`, `\f`,
 *   `\n`, `\r`, `\t`, `\u00xx` for the other control characters, `\u003c`, `\u003e`,
 *   `\u0026`, `\u2028`, `\u2029`, lower-case hex): writing the parsed value back as Go
 *   writes it gives the text again, so a json.RawMessage's kept text (compacted,
 *   HTML-escaped) is the parsed value rewritten. No escaped surrogate, so no lone one;
 * - every number is one the reader reads exactly (`String(Number(t)) === t`, a safe
 *   integer if integral): a raw value keeps its number text, rewritten the same;
 * - every key is unescaped, not `__proto__`, not starting with a digit (JSON.parse would
 *   move an array-index key to the front): key order is text order;
 * - no duplicate: the keys counted in the text equal the properties counted in the parsed
 *   value (JSON.parse keeps one of two equal keys), and an object with a key that is not its
 *   own lower case has no two keys equal under Go's strings.ToLower (`goLower`, the
 *   reader's own check);
 * - nesting within FAST_DEPTH (Go events nest a few levels; deeper text is the reader's);
 * - a time (`quoted` guide) holds no character that might have been escaped: Go refuses an
 *   escape there, and after JSON.parse it cannot be seen.
 */
import { goLower } from "./go-fold.js";
import { IGNORED, type JsonGuide } from "./strict-json.js";
import { goString } from "./wire.js";

/** Nesting the fast path takes; deeper text goes to the guided reader (its limit is Go's). */
export const FAST_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;

// Keys counted by the prescan, and whether one had an upper-case letter: module state, as
// in strict-json.ts (this runs on every delivery; nothing it calls reads JSON).
let textKeys = 0;
let foldKeys = false;
// Properties counted by the walk, and the deepest nesting of the raw value being written.
let parsedKeys = 0;
let rawDepth = 0;

/** Signals "not mine" out of the walk. */
const NOT_MINE: unique symbol = Symbol("not mine");

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** Whether the escape at `j` (a backslash) is one Go's and JSON.stringify's writers write; its length, or 0. */
function escapeLength(t: string, j: number): number {
  const e = t.charCodeAt(j + 1);
  if (e === QUOTE || e === BACKSLASH || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) return 2;
  if (e !== 0x75) return 0;
  const u = t.slice(j + 2, j + 6);
  if (u.length !== 4) return 0;
  if (u === "003c" || u === "003e" || u === "0026" || u === "2028" || u === "2029") return 6;
  if (u.charCodeAt(0) !== 0x30 || u.charCodeAt(1) !== 0x30) return 0;
  const hi = u.charCodeAt(2);
  const lo = u.charCodeAt(3);
  const low = lo >= 0x30 && lo <= 0x39 ? lo - 0x30 : lo >= 0x61 && lo <= 0x66 ? lo - 0x57 : -1;
  if (low < 0 || (hi !== 0x30 && hi !== 0x31)) return 0;
  const code = (hi - 0x30) * 16 + low;
  // The short escapes are written short.
  return code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d ? 0 : 6;
}

/** Whether the unescaped key text t[start, end) may be taken as written (see the module comment). */
function plainKey(t: string, start: number, end: number): boolean {
  if (end > start) {
    const first = t.charCodeAt(start);
    if (first >= 0x30 && first <= 0x39) return false;
    if (end - start === 9 && t.startsWith("__proto__", start)) return false;
  }
  for (let k = start; k < end; k++) {
    const c = t.charCodeAt(k);
    if (c >= 0x80 || (c >= 0x41 && c <= 0x5a)) foldKeys = true;
  }
  return true;
}

/** Whether the number token t[start, end) is one the guided reader reads exactly. */
function exactNumberText(t: string, start: number, end: number): boolean {
  // The usual number: an integer of at most 15 digits, no leading zero (always exact).
  let k = t.charCodeAt(start) === 0x2d ? start + 1 : start;
  const digits = end - k;
  if (digits > 0 && digits <= 15) {
    let plain = t.charCodeAt(k) !== 0x30 || digits === 1;
    for (; plain && k < end; k++) {
      const c = t.charCodeAt(k);
      if (c < 0x30 || c > 0x39) plain = false;
    }
    if (plain) return !(digits === 1 && t.charCodeAt(end - 1) === 0x30 && end - start === 2); // "-0" is not
  }
  const token = t.slice(start, end);
  const v = Number(token);
  return String(v) === token && !(Number.isInteger(v) && !Number.isSafeInteger(v));
}

/**
 * One pass over the text: its escapes, numbers, keys and nesting (see the module comment).
 * Counts the keys into `textKeys`. False where it proves nothing; JSON.parse judges the
 * grammar afterwards.
 */
function prescan(t: string): boolean {
  const n = t.length;
  let depth = 0;
  let keys = 0;
  // The next backslash at or after the current string's start (n: none): found once, not per string.
  let nextEscape = -1;
  let nextQuote = -1;
  let i = 0;
  while (i < n) {
    const c = t.charCodeAt(i);
    if (c === QUOTE) {
      let j = i + 1;
      let escaped = false;
      let end: number;
      for (;;) {
        // Found once per string, not once per escape (a long text with many escapes).
        if (nextQuote < j) {
          nextQuote = t.indexOf('"', j);
          if (nextQuote < 0) return false;
        }
        const q = nextQuote;
        if (nextEscape < j) {
          nextEscape = t.indexOf("\\", j);
          if (nextEscape < 0) nextEscape = n;
        }
        if (nextEscape > q) {
          end = q;
          break;
        }
        const len = escapeLength(t, nextEscape);
        if (len === 0) return false;
        escaped = true;
        j = nextEscape + len;
      }
      let k = end + 1;
      while (k < n && isSpace(t.charCodeAt(k))) k++;
      if (t.charCodeAt(k) === COLON) {
        if (escaped || !plainKey(t, i + 1, end)) return false;
        keys++;
        i = k + 1;
      } else i = end + 1;
      continue;
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1;
      for (;;) {
        const d = t.charCodeAt(j);
        if ((d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) j++;
        else break;
      }
      if (!exactNumberText(t, i, j)) return false;
      i = j;
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      if (++depth > FAST_DEPTH) return false;
    } else if (c === 0x7d || c === 0x5d) depth--;
    i++;
  }
  textKeys = keys;
  return true;
}

/** Whether `s` holds a character its text might have escaped: after JSON.parse, an escape cannot be seen. */
function maybeEscaped(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === QUOTE || c === BACKSLASH || c === 0x3c || c === 0x3e || c === 0x26 || c === 0x2028 || c === 0x2029) return true;
  }
  return false;
}

/**
 * No two keys of `o` equal under Go's strings.ToLower (the reader's duplicate check): looked
 * at only in an object with a key that is not its own lower case (upper-case ASCII, or not
 * ASCII); the others' keys are distinct because JSON.parse kept them all (the key count).
 */
function foldsApart(o: Record<string, unknown>): boolean {
  let fold = false;
  for (const k in o) {
    for (let i = 0; i < k.length; i++) {
      const c = k.charCodeAt(i);
      if (c >= 0x80 || (c >= 0x41 && c <= 0x5a)) {
        fold = true;
        break;
      }
    }
    if (fold) break;
  }
  if (!fold) return true;
  const seen = new Set<string>();
  for (const k in o) {
    const low = goLower(k);
    if (seen.has(low)) return false;
    seen.add(low);
  }
  return true;
}

/** Counts the properties of a value read as it stands (generic or ignored); false on a fold repeat. */
function countValue(v: unknown): boolean {
  if (v === null || typeof v !== "object") return true;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!countValue(v[i])) return false;
    return true;
  }
  const o = v as Record<string, unknown>;
  if (foldKeys && !foldsApart(o)) return false;
  for (const k in o) {
    parsedKeys++;
    if (!countValue(o[k])) return false;
  }
  return true;
}

/** A value as Go writes a json.RawMessage of it; counts its properties; NOT_MINE on a fold repeat. */
function rawText(v: unknown, depth: number): string | typeof NOT_MINE {
  if (typeof v === "string") return goString(v);
  if (typeof v === "number") return String(v);
  if (v === true) return "true";
  if (v === false) return "false";
  if (v === null) return "null";
  if (depth + 1 > rawDepth) rawDepth = depth + 1;
  if (Array.isArray(v)) {
    let out = "[";
    for (let i = 0; i < v.length; i++) {
      const x = rawText(v[i], depth + 1);
      if (x === NOT_MINE) return NOT_MINE;
      out += i === 0 ? x : `,${x}`;
    }
    return `${out}]`;
  }
  const o = v as Record<string, unknown>;
  if (foldKeys && !foldsApart(o)) return NOT_MINE;
  let out = "{";
  let sep = "";
  for (const k in o) {
    parsedKeys++;
    const x = rawText(o[k], depth + 1);
    if (x === NOT_MINE) return NOT_MINE;
    out += `${sep}${goString(k)}:${x}`;
    sep = ",";
  }
  return `${out}}`;
}

/** The guided reader's value for the parsed `v` at `guide` (objects converted in place), or NOT_MINE. */
function convert(v: unknown, guide: JsonGuide): unknown {
  switch (guide.kind) {
    case "raw": {
      rawDepth = 0;
      const text = rawText(v, 0);
      return text === NOT_MINE ? NOT_MINE : guide.keep!(text, rawDepth);
    }
    case "quoted":
      if (typeof v === "string") return maybeEscaped(v) ? NOT_MINE : v;
      break;
    case "shape":
      if (v !== null && typeof v === "object") {
        if (Array.isArray(v)) {
          if (guide.element) {
            const element = guide.element();
            for (let i = 0; i < v.length; i++) {
              const x = convert(v[i], element);
              if (x === NOT_MINE) return NOT_MINE;
              if (x !== v[i]) v[i] = x;
            }
            return v;
          }
        } else if (guide.member) return convertObject(v as Record<string, unknown>, guide);
      }
      break;
    case "generic":
      break;
  }
  return countValue(v) ? v : NOT_MINE;
}

function convertObject(o: Record<string, unknown>, guide: JsonGuide): unknown {
  if (foldKeys && !foldsApart(o)) return NOT_MINE;
  for (const k in o) {
    parsedKeys++;
    const child = guide.member!(k);
    const v = o[k];
    if (child === undefined) {
      if (!countValue(v)) return NOT_MINE;
      o[k] = IGNORED;
      continue;
    }
    const x = convert(v, child);
    if (x === NOT_MINE) return NOT_MINE;
    if (x !== v) o[k] = x;
  }
  return o;
}

/**
 * The value `parseStrictJson(text, guide)` would return for an object text, when the text
 * is proven ordinary (see the module comment); undefined when not: the guided reader then
 * reads it, and decides.
 */
export function parseOrdinaryJson(text: string, guide: JsonGuide): Record<string, unknown> | undefined {
  foldKeys = false;
  if (text.charCodeAt(0) !== 0x7b || !prescan(text)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return undefined;
  parsedKeys = 0;
  const value = guide.kind === "shape" && guide.member ? convertObject(parsed as Record<string, unknown>, guide) : convert(parsed, guide);
  if (value === NOT_MINE || parsedKeys !== textKeys) return undefined;
  return value as Record<string, unknown>;
}
