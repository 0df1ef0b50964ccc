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
  const props = countProperties(value, 1, maxDepth);
  if (props < 0 || props !== countKeys(text)) scanKeys(text, maxDepth);
  return value;
}

/** Own properties of every object in a parsed value; -1 when it nests deeper than maxDepth. */
function countProperties(v: unknown, depth: number, maxDepth: number): number {
  if (v === null || typeof v !== "object") return 0;
  if (depth > maxDepth) return -1;
  let n = 0;
  if (Array.isArray(v)) {
    for (const item of v) {
      const c = countProperties(item, depth + 1, maxDepth);
      if (c < 0) return -1;
      n += c;
    }
    return n;
  }
  const keys = Object.keys(v);
  n = keys.length;
  for (const k of keys) {
    const c = countProperties((v as Record<string, unknown>)[k], depth + 1, maxDepth);
    if (c < 0) return -1;
    n += c;
  }
  return n;
}

/**
 * The keys in text that JSON.parse has already accepted: the colons outside strings (in
 * JSON a colon outside a string only ever follows a key). Jumps from quote to quote with
 * indexOf; a quote preceded by an odd run of backslashes is escaped.
 */
function countKeys(text: string): number {
  const n = text.length;
  let keys = 0;
  let i = 0;
  while (i < n) {
    const open = text.indexOf('"', i);
    const end = open === -1 ? n : open;
    for (let c = text.indexOf(":", i); c !== -1 && c < end; c = text.indexOf(":", c + 1)) keys++;
    if (open === -1) break;
    let close = open + 1;
    for (;;) {
      close = text.indexOf('"', close);
      if (close === -1) return keys; // unreachable for parsed text
      let backslashes = 0;
      while (text.charCodeAt(close - 1 - backslashes) === BACKSLASH) backslashes++;
      if (backslashes % 2 === 0) break;
      close++;
    }
    i = close + 1;
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
