/**
 * JSON as the Go runtime's decoder reads it, or refused. JSON.parse judges the grammar
 * (fast, and it rejects trailing data); one walk of the parsed value and, only when it
 * cannot decide, one scan of the text then refuse what JSON.parse would read differently
 * from Go or from the text:
 *
 * - two keys of one object that are equal ignoring letter case (Go's decoder matches
 *   field names case-insensitively, so `"type"` beside `"Type"` is two values for one
 *   field; the runtime refuses them at every level);
 * - a number whose text JavaScript does not write back the same way (`1.0`, `1e2`, `-0`)
 *   or an integer beyond 2^53, which a double cannot hold exactly;
 * - nesting deeper than `maxDepth`.
 *
 * A lone surrogate escape (`"\ud800"`) is read as U+FFFD, as Go reads it.
 */

export type StrictJsonFailure = "malformed_json" | "duplicate_key" | "letter_case_key" | "too_deep" | "inexact_number";

export class StrictJsonError extends Error {
  constructor(
    readonly reason: StrictJsonFailure,
    message: string,
    readonly offset?: number,
  ) {
    super(message);
    this.name = "StrictJsonError";
  }
}

/** Deep enough for any tool input a model writes; Go's own decoder stops at 10,000. */
export const DEFAULT_MAX_DEPTH = 512;

// What may be a number: a token after ':', ',' or '[' (inside strings too, which only
// costs a look). When every such token is written as JavaScript writes it back, no number
// can be inexact and the scan is not needed. Used where a number stands in an array;
// numbers after keys are checked while the keys are counted.
const NUMBER_TOKEN = /[:,[][ \t\n\r]*(-?\d[0-9.eE+-]*)/g;

function mayBeInexact(text: string): boolean {
  NUMBER_TOKEN.lastIndex = 0;
  for (let m = NUMBER_TOKEN.exec(text); m !== null; m = NUMBER_TOKEN.exec(text)) {
    const token = m[1]!;
    if (String(Number(token)) !== token) return true;
  }
  return false;
}
// An escaped surrogate: the only way valid UTF-8 text can spell a lone one.
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

export function parseStrictJson(text: string, maxDepth = DEFAULT_MAX_DEPTH): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    // JSON.parse quotes the text around the error; that text may be a secret, so only
    // the position is kept.
    const position = /position (\d+)/.exec((e as Error).message)?.[1];
    throw new StrictJsonError("malformed_json", `malformed JSON${position ? ` at position ${position}` : ""}`, position ? Number(position) : undefined);
  }
  if (value === null || typeof value !== "object") {
    checkNumber(value);
    if (mayBeInexact(text)) scan(text, maxDepth);
    return value;
  }
  // The cheap proof first: JSON.parse keeps one property per distinct key, so the parsed
  // value has as many properties as the text has keys exactly when no object repeats a
  // key. Only when that fails, the nesting is too deep or a number may be inexact does the
  // full scan run, to name the duplicate key or the number and its offset.
  numberInArray = false;
  const props = walk(value, 1, maxDepth);
  if (props < 0 || props !== countKeys(text) || keyedNumberInexact || (numberInArray && mayBeInexact(text))) scan(text, maxDepth);
  if ((text.includes("\\ud") || text.includes("\\uD")) && SURROGATE_ESCAPE.test(text)) return wellFormed(value);
  return value;
}

function checkNumber(v: unknown): void {
  if (typeof v !== "number") return;
  if (Object.is(v, -0) || (Number.isInteger(v) && !Number.isSafeInteger(v))) {
    throw new StrictJsonError("inexact_number", `the number ${String(v)} cannot be read exactly`);
  }
}

/** A key that may equal another one ignoring case: upper-case ASCII or anything non-ASCII. */
function isFoldable(k: string): boolean {
  for (let i = 0; i < k.length; i++) {
    const c = k.charCodeAt(i);
    if ((c >= 0x41 && c <= 0x5a) || c >= 0x80) return true;
  }
  return false;
}

/** Set by `walk` when an array holds a number: `countKeys` sees only numbers after keys. */
let numberInArray = false;

/**
 * Counts the own properties of every object in a parsed value, checks its numbers, and
 * refuses two keys of one object that differ only in letter case. -1 when it nests deeper
 * than maxDepth.
 */
function walk(v: object, depth: number, maxDepth: number): number {
  if (depth > maxDepth) return -1;
  let n = 0;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const item: unknown = v[i];
      if (item === null || typeof item !== "object") {
        if (typeof item === "number") {
          numberInArray = true;
          checkNumber(item);
        }
        continue;
      }
      const c = walk(item, depth + 1, maxDepth);
      if (c < 0) return -1;
      n += c;
    }
    return n;
  }
  // for-in rather than Object.keys: no array per object. JSON.parse's objects inherit
  // nothing enumerable; if Object.prototype were polluted, the counts differ and the scan
  // decides.
  let foldable = false;
  for (const k in v) {
    n++;
    if (!foldable && isFoldable(k)) foldable = true;
    const item: unknown = (v as Record<string, unknown>)[k];
    if (item === null || typeof item !== "object") {
      checkNumber(item);
      continue;
    }
    const c = walk(item, depth + 1, maxDepth);
    if (c < 0) return -1;
    n += c;
  }
  if (foldable) {
    const folded = new Set<string>();
    for (const k in v) {
      const f = k.toLowerCase();
      if (folded.has(f)) throw new StrictJsonError("letter_case_key", `keys that differ only in letter case: ${JSON.stringify(k)}`);
      folded.add(f);
    }
  }
  return n;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** `s` with each lone surrogate replaced by U+FFFD, as Go reads and writes it. */
export function wellFormedText(s: string): string {
  return s.replace(LONE_SURROGATE, "\ufffd");
}

function wellFormed(v: unknown): unknown {
  if (typeof v === "string") return wellFormedText(v);
  if (v === null || typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map(wellFormed);
  const out: Record<string, unknown> = {};
  for (const k in v) out[wellFormedText(k)] = wellFormed((v as Record<string, unknown>)[k]);
  return out;
}

// JSON whitespace between a string and a colon, which only ever follows a key.
const SPACED_KEY = /"[ \t\n\r]+:/;

/** Set by `countKeys`: a number after a key is written otherwise than JavaScript writes it. */
let keyedNumberInexact = false;

/**
 * Counts the keys of text that JSON.parse has already accepted, if every key is followed
 * directly by its colon (as compact JSON writes it): the `":` whose quote is not escaped.
 * Such a quote either closes a key or opens a string value starting with a colon, so the
 * count is never below the number of keys, while the parsed value's property count is
 * below it by the duplicates: the two are equal only when no object repeats a key (and no
 * value starts with a colon). -1 when a key is spaced from its colon; the scan decides.
 * On the way it checks the number that follows a key, if one does (`keyedNumberInexact`).
 */
function countKeys(text: string): number {
  keyedNumberInexact = false;
  if (SPACED_KEY.test(text)) return -1;
  let keys = 0;
  for (let i = text.indexOf('":'); i !== -1; i = text.indexOf('":', i + 2)) {
    let backslashes = 0;
    while (text.charCodeAt(i - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 !== 0) continue;
    keys++;
    const c = text.charCodeAt(i + 2);
    if ((c >= 0x30 && c <= 0x39) || c === MINUS) {
      let end = i + 3;
      while (end < text.length && isNumberChar(text.charCodeAt(end))) end++;
      const token = text.slice(i + 2, end);
      if (String(Number(token)) !== token) keyedNumberInexact = true;
    }
  }
  return keys;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const MINUS = 0x2d;

function isNumberChar(c: number): boolean {
  // digits, '+', '-', '.', 'e', 'E'
  return (c >= 0x30 && c <= 0x39) || c === 0x2b || c === MINUS || c === 0x2e || c === 0x65 || c === 0x45;
}

/** Scans text that JSON.parse has already accepted. */
function scan(text: string, maxDepth: number): void {
  // One entry per open container: a key set for an object (created lazily), null for an array.
  const stack: (Set<string> | null | undefined)[] = [];
  const isObject: boolean[] = [];
  let expectKey = false;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const start = i + 1;
      let escaped = false;
      i++;
      for (; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === BACKSLASH) {
          escaped = true;
          i++;
        } else if (d === QUOTE) break;
      }
      if (expectKey) {
        const raw = text.slice(start, i);
        const key = escaped ? (JSON.parse(`"${raw}"`) as string) : raw;
        const folded = key.toLowerCase();
        const top = stack.length - 1;
        let keys = stack[top];
        if (keys === undefined) {
          keys = new Set();
          stack[top] = keys;
        }
        if (keys !== null) {
          // Both spellings are kept: an exact repeat and a letter-case variant are told apart.
          if (keys.has(key)) throw new StrictJsonError("duplicate_key", `duplicate key ${JSON.stringify(raw)}`, start - 1);
          if (keys.has(`\u0000${folded}`)) {
            throw new StrictJsonError("letter_case_key", `keys that differ only in letter case: ${JSON.stringify(raw)}`, start - 1);
          }
          keys.add(key);
          keys.add(`\u0000${folded}`);
        }
        expectKey = false;
      }
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (stack.length >= maxDepth) {
        throw new StrictJsonError("too_deep", `nesting deeper than ${maxDepth}`, i);
      }
      const obj = c === OPEN_BRACE;
      stack.push(obj ? undefined : null);
      isObject.push(obj);
      expectKey = obj;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      stack.pop();
      isObject.pop();
      expectKey = false;
    } else if (c === COMMA) {
      expectKey = isObject[isObject.length - 1] === true;
    } else if ((c >= 0x30 && c <= 0x39) || c === MINUS) {
      const start = i;
      while (i + 1 < n && isNumberChar(text.charCodeAt(i + 1))) i++;
      const token = text.slice(start, i + 1);
      const v = Number(token);
      if (String(v) !== token || (Number.isInteger(v) && !Number.isSafeInteger(v))) {
        throw new StrictJsonError("inexact_number", `the number ${token} cannot be read exactly`, start);
      }
    }
  }
}
