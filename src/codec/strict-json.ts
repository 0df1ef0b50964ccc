/**
 * JSON.parse silently keeps the last of two equal keys, which lets a message say one
 * thing to a lenient reader and another to a strict one. This parser lets the native
 * JSON.parse judge the grammar (fast, and it rejects trailing data) and then scans the
 * text once, iteratively, for duplicate keys and excessive nesting.
 */

export type StrictJsonFailure = "malformed_json" | "duplicate_key" | "too_deep";

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

export const DEFAULT_MAX_DEPTH = 32;

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
  // The cheap proof first: JSON.parse keeps one property per distinct key, so the parsed
  // value has as many properties as the text has keys exactly when no object repeats a
  // key. Only when that fails (or the nesting is too deep) does the full scan run, to
  // name the duplicate key and its offset.
  const props = value !== null && typeof value === "object" ? countProperties(value, 1, maxDepth) : 0;
  if (props < 0 || props !== countKeys(text)) scanKeys(text, maxDepth);
  return value;
}

/** Own properties of every object in a parsed value; -1 when it nests deeper than maxDepth. */
function countProperties(v: object, depth: number, maxDepth: number): number {
  if (depth > maxDepth) return -1;
  let n = 0;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const item: unknown = v[i];
      if (item === null || typeof item !== "object") continue;
      const c = countProperties(item, depth + 1, maxDepth);
      if (c < 0) return -1;
      n += c;
    }
    return n;
  }
  // for-in rather than Object.keys: no array per object. JSON.parse's objects inherit
  // nothing enumerable; if Object.prototype were polluted, the counts differ and the scan
  // decides.
  for (const k in v) {
    n++;
    const item: unknown = (v as Record<string, unknown>)[k];
    if (item === null || typeof item !== "object") continue;
    const c = countProperties(item, depth + 1, maxDepth);
    if (c < 0) return -1;
    n += c;
  }
  return n;
}

// JSON whitespace between a string and a colon, which only ever follows a key.
const SPACED_KEY = /"[ \t\n\r]+:/;

/**
 * Counts the keys of text that JSON.parse has already accepted, if every key is followed
 * directly by its colon (as compact JSON writes it): the `":` whose quote is not escaped.
 * Such a quote either closes a key or opens a string value starting with a colon, so the
 * count is never below the number of keys, while the parsed value's property count is
 * below it by the duplicates: the two are equal only when no object repeats a key (and no
 * value starts with a colon). -1 when a key is spaced from its colon; the scan decides.
 */
function countKeys(text: string): number {
  if (SPACED_KEY.test(text)) return -1;
  let keys = 0;
  for (let i = text.indexOf('":'); i !== -1; i = text.indexOf('":', i + 2)) {
    let backslashes = 0;
    while (text.charCodeAt(i - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) keys++;
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

/** Scans text that JSON.parse has already accepted. */
function scanKeys(text: string, maxDepth: number): void {
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
        const top = stack.length - 1;
        let keys = stack[top];
        if (keys === undefined) {
          keys = new Set();
          stack[top] = keys;
        }
        if (keys !== null) {
          if (keys.has(key)) {
            throw new StrictJsonError("duplicate_key", `duplicate key ${JSON.stringify(key)}`, start - 1);
          }
          keys.add(key);
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
    }
  }
}
