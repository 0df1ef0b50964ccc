/**
 * JSON read in one pass as the Go runtime's decoder reads it, or refused.
 *
 * The text is read once, guided by what the event's schema expects where (a JsonGuide,
 * built from the zod schemas in wire.ts), so each value is read the way Go reads the field
 * it lands in:
 *
 * - the grammar is RFC 8259's as Go's scanner has it (no BOM, whitespace is space, tab,
 *   CR, LF), nesting up to Go's limit of 10,000 (MAX_DEPTH), one value and nothing after;
 * - strings are unescaped as Go unescapes them, a lone surrogate read as U+FFFD;
 * - two keys of one object are refused when strings.ToLower makes them equal, at every
 *   depth (the runtime's UnmarshalEvent refuses them: an exact repeat is `duplicate_key`,
 *   a repeat ignoring case `letter_case_key`);
 * - a number whose magnitude rounds past the largest float64 is refused wherever it
 *   stands, raw JSON and ignored keys included (`number_out_of_range`): that same scan
 *   reads every number as a float64, and strconv.ParseFloat's ErrRange refuses the event.
 *   A number that underflows reads as zero there, and is no error;
 * - a raw value (a json.RawMessage) is kept as text: any number form, order and escapes
 *   as written, compacted and HTML-escaped as Go writes it back (RawJson);
 * - a quoted value (a time.Time) is refused when its quoted text holds an escape: Go parses
 *   the bytes between the quotes without unescaping them;
 * - any other number must be written as JavaScript writes it back (`1.0`, `1e2`, `-0` and
 *   integers beyond 2^53 are refused as `inexact_number`: a double would change them).
 */
import { goLower } from "./go-fold.js";

export type StrictJsonFailure = "malformed_json" | "duplicate_key" | "letter_case_key" | "too_deep" | "number_out_of_range" | "inexact_number" | "escaped_time";

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

/** Go's encoding/json nesting limit, for reading and for writing. */
export const MAX_DEPTH = 10_000;

/** What the schema expects at one place of the text. */
export interface JsonGuide {
  readonly kind: "raw" | "quoted" | "generic" | "shape";
  /** The guide of an object member; undefined for a key the schema does not know. */
  readonly member?: (key: string) => JsonGuide | undefined;
  /** The guide of an array element. */
  readonly element?: () => JsonGuide;
  /** `raw`: the value that keeps the scanned, compacted text (raw-json.ts's RAW_GUIDE, a RawJson). */
  readonly keep?: (compact: string, depth: number) => unknown;
  /** `shape`: the keys the schema names exactly (`keyTable`), read without slicing the text. */
  readonly keys?: KeyTable;
  /**
   * A member not read by one rule in all its object's possible kinds (mergeGuides: some
   * lack it, or read it otherwise): a refusal by the merged rules is kept as a
   * RefusedValue, for the object's kind to decide once known.
   */
  readonly deferRefusal?: boolean;
}

/**
 * A member value the merged guide refused (an inexact number, an escaped time) where the
 * object's kind was not yet known: its text was then checked as Go checks a value it
 * ignores, and kept. If the object's kind has the field, `fromWire` reads the text again
 * by that field's own rules; if not, Go ignores the key, and so does jetloop.
 */
export class RefusedValue {
  constructor(
    readonly error: StrictJsonError,
    /** The value's text as written (checked: valid JSON, no case-equal keys, not too deep). */
    readonly text: string,
  ) {}
}

/** A key a shape names, as the reader keeps it: the one string for every read of it. */
interface KnownKey {
  readonly name: string;
  /** Its own strings.ToLower (ASCII, no upper case): the duplicate check needs no map for it. */
  readonly ownLower: boolean;
  /** Its member guide, once asked (the same answer `member(name)` gives every time). */
  child?: JsonGuide;
}

/** A shape's known keys by length (in UTF-16 code units). */
export type KeyTable = readonly (readonly KnownKey[] | undefined)[];

// A string used as an object's own key is internalized by V8 (one copy, its hash kept):
// every later lookup, store and Map.get with it skips hashing the text again.
const internalized = (s: string): string => Object.keys({ [s]: 0 })[0]!;

/**
 * The reader's table of `names`: a key written without escapes that equals one of them is
 * read as that name's one string instead of a new slice of the text (every key of every
 * event; a new string per key costs its allocation and a hash at each of the several
 * lookups it goes through). The value is the same string either way.
 */
export function keyTable(names: Iterable<string>): KeyTable {
  const table: KnownKey[][] = [];
  for (const name of new Set(names)) (table[name.length] ??= []).push({ name: internalized(name), ownLower: isOwnLower(name) });
  return table;
}

export const QUOTED_GUIDE: JsonGuide = { kind: "quoted" };
export const GENERIC_GUIDE: JsonGuide = { kind: "generic" };

/** The value of a key no schema knows: read and checked, then not kept. */
export const IGNORED: unique symbol = Symbol("ignored");

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const ESCAPE_CHARS = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);
const HEX = /^[0-9a-fA-F]{4}$/;
const HTML_UNSAFE = /[<>&\u2028\u2029]/;
const HTML_UNSAFE_ALL = /[<>&\u2028\u2029]/g;
const HTML_ESCAPES: Record<string, string> = { "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029" };
/**
 * Valid JSON text as Go's json.Encoder embeds a json.RawMessage: whitespace between tokens
 * removed, `<`, `>`, `&`, U+2028 and U+2029 escaped. Text already in that form (all that
 * Go's writer and jetloop's encoder produce) is returned as it is. The text is not checked:
 * only what the reader accepted comes here.
 */
export function compactJson(text: string): string {
  let out = "";
  let flushed = 0;
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = afterString(text, i);
    else {
      if (isSpace(c)) {
        out += text.slice(flushed, i);
        flushed = i + 1;
      }
      i++;
    }
  }
  const compact = flushed === 0 ? text : out + text.slice(flushed);
  return HTML_UNSAFE.test(compact) ? compact.replace(HTML_UNSAFE_ALL, (ch) => HTML_ESCAPES[ch]!) : compact;
}

/** Just after the string opening at `i` of valid JSON: the next quote not escaped (found natively: texts are long). */
function afterString(text: string, i: number): number {
  for (let j = i + 1; ; ) {
    const q = text.indexOf('"', j);
    if (q < 0) return text.length;
    let b = q - 1;
    while (text.charCodeAt(b) === BACKSLASH) b--;
    if ((q - 1 - b) % 2 === 0) return q + 1;
    j = q + 1;
  }
}

// An escaped surrogate: the only way valid UTF-8 text can spell a lone one.
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

function malformed(at: number, what = "malformed JSON"): never {
  throw new StrictJsonError("malformed_json", what === "malformed JSON" ? `${what} at position ${at}` : `malformed JSON: ${what} at position ${at}`, at);
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  return i;
}

// Whether the last string stringEnd read held an escape: a module variable rather than a
// result object per string (every key and value goes through it).
let lastEscaped = false;

/** The end of the string whose opening quote is at `i` (after its closing quote); checks its escapes. */
function stringEnd(text: string, i: number): number {
  let escaped = false;
  let j = i + 1;
  const n = text.length;
  for (;;) {
    // A run of characters needing no look: no quote, backslash or control character.
    let c = 0;
    while (j < n && (c = text.charCodeAt(j)) !== QUOTE && c !== BACKSLASH && c >= 0x20) j++;
    if (j < n && c === QUOTE) {
      lastEscaped = escaped;
      return j + 1;
    }
    if (j >= n || c !== BACKSLASH) malformed(j, j >= n ? "unterminated string" : "control character in string");
    escaped = true;
    const e = text.charCodeAt(j + 1);
    if (ESCAPE_CHARS.has(e)) j += 2;
    else if (e === 0x75 && HEX.test(text.slice(j + 2, j + 6))) j += 6;
    else malformed(j, "invalid escape");
  }
}

/** The string value of the quoted text text[start, end): unescaped as Go unescapes it. */
function stringValue(text: string, start: number, end: number, escaped: boolean): string {
  if (!escaped) return text.slice(start + 1, end - 1);
  const quoted = text.slice(start, end);
  const s = JSON.parse(quoted) as string;
  return SURROGATE_ESCAPE.test(quoted) ? wellFormedText(s) : s;
}

/** Whether `key` is its own strings.ToLower: ASCII with no upper-case letter. */
function isOwnLower(key: string): boolean {
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c >= 0x80 || (c >= 0x41 && c <= 0x5a)) return false;
  }
  return true;
}

/** The duplicate check's map for the keys read so far, each its own lower case. */
function keysByLower(out: Record<string, unknown>): Map<string, string> {
  const seen = new Map<string, string>();
  for (const k of Object.keys(out)) seen.set(k, k);
  return seen;
}

/** Refuses a key equal to an earlier one of its object under strings.ToLower. */
function checkKey(seen: Map<string, string>, key: string, at: number): void {
  const low = goLower(key);
  const before = seen.get(low);
  if (before !== undefined) {
    if (before === key) throw new StrictJsonError("duplicate_key", `duplicate key ${JSON.stringify(key)}`, at);
    throw new StrictJsonError("letter_case_key", `keys that differ only in letter case: ${JSON.stringify(key)}`, at);
  }
  seen.set(low, key);
}

function numberEnd(text: string, i: number): number {
  NUMBER.lastIndex = i;
  if (NUMBER.exec(text) === null) malformed(i);
  return NUMBER.lastIndex;
}

/**
 * Refuses the number text[start, end) if it overflows float64, as the runtime's whole-event
 * scan does (harness pkg/event/marshal.go, rejectDuplicateJSONKeys: json.Decoder.Token reads
 * each number into an interface{}, a float64, and strconv.ParseFloat's ErrRange refuses it).
 * JavaScript's Number() rounds as ParseFloat does (to nearest, ties to even), so the two
 * overflow on the same texts. Only a number with an exponent or more than 308 characters can
 * overflow: the usual number costs a look at its few characters, no conversion.
 */
function checkRange(text: string, start: number, end: number): void {
  if (end - start <= 308) {
    let j = start;
    while (j < end && (text.charCodeAt(j) | 0x20) !== 0x65) j++;
    if (j === end) return;
  }
  const token = text.slice(start, end);
  if (!Number.isFinite(Number(token)) && goOverflows(token)) outOfRange(token, start);
}

/** 2^1024 - 2^970, the least magnitude ParseFloat rounds to infinity, in decimal digits (309). */
const OVERFLOW_DIGITS = (2n ** 1024n - 2n ** 970n).toString();
const NUMBER_PARTS = /^-?(0|[1-9]\d*)(?:\.(\d+))?(?:[eE]([+-]?)(\d+))?$/;

/**
 * Whether Go's strconv.ParseFloat refuses `token` as past float64. Only asked when
 * JavaScript's correctly rounded Number() overflows: Go's reading is never larger. It can
 * be smaller, in two ways of atof.go: an exponent stops accumulating once it reaches
 * 10,000 (`e123456` reads as `e12345`), and the slow path's decimal keeps 800 digits and
 * places the point after the 800th when the integer part is longer (`decimal.set`:
 * `b.dp = b.nd`). A number that overflows reaches that slow path, so Go overflows exactly
 * when the digits, with Go's point and Go's exponent, are at least 2^1024 - 2^970.
 */
function goOverflows(token: string): boolean {
  const m = NUMBER_PARTS.exec(token);
  if (m === null) return true;
  const int = m[1]!;
  const frac = m[2] ?? "";
  let digits: string;
  let dp: number;
  if (int !== "0") {
    digits = int + frac;
    dp = Math.min(int.length, 800);
  } else {
    const significant = frac.replace(/^0+/, "");
    dp = significant.length - frac.length;
    digits = significant;
  }
  digits = digits.replace(/0+$/, "");
  if (digits === "") return false;
  const e = Number((m[4] ?? "").replace(/^0+/, "").slice(0, 5) || "0");
  dp += m[3] === "-" ? -e : e;
  if (dp !== 309) return dp > 309;
  return (digits.length >= 309 ? digits.slice(0, 309) : digits.padEnd(309, "0")) >= OVERFLOW_DIGITS;
}

function outOfRange(token: string, at: number): never {
  throw new StrictJsonError("number_out_of_range", `the number ${token.length > 40 ? `${token.slice(0, 40)}…` : token} is out of the range of a float64, which Go's reader refuses`, at);
}

function exactNumber(token: string, at: number): number {
  const v = Number(token);
  // Finite to Go but not to JavaScript (goOverflows): no exact reading either.
  if (!Number.isFinite(v) && goOverflows(token)) outOfRange(token, at);
  if (String(v) !== token || (Number.isInteger(v) && !Number.isSafeInteger(v))) {
    throw new StrictJsonError("inexact_number", `the number ${token} cannot be read exactly`, at);
  }
  return v;
}

function literalEnd(text: string, i: number): number {
  const c = text.charCodeAt(i);
  const word = c === 0x74 ? "true" : c === 0x66 ? "false" : c === 0x6e ? "null" : undefined;
  if (word === undefined || !text.startsWith(word, i)) malformed(i);
  return i + word.length;
}

export interface ScanOptions {
  /** Containers enclosing the value: its own nesting counts from there. */
  readonly depthBase: number;
  /** Refuse numbers JavaScript cannot read exactly (not inside raw JSON). */
  readonly exactNumbers: boolean;
  /** Also return the value's text as Go writes a RawMessage. */
  readonly compact: boolean;
}

export interface ScanResult {
  /** Just after the value. */
  readonly end: number;
  /** Its deepest nesting (0 for a scalar). */
  readonly depth: number;
  readonly compact?: string;
}

/**
 * Checks the JSON value at `start` (after optional whitespace) the way Go's scanner and
 * the runtime's duplicate-key check do. Iterative: a value nested 10,000 deep needs no stack.
 */
export function scanJson(text: string, start: number, options: ScanOptions): ScanResult {
  let i = skipSpace(text, start);
  const from = i;
  // One entry per open container: a key map for an object, null for an array.
  const stack: (Map<string, string> | null)[] = [];
  let deepest = 0;
  let out = "";
  let flushed = i;
  let spaced = false;
  const space = (): void => {
    if (i < text.length && isSpace(text.charCodeAt(i))) {
      if (options.compact) out += text.slice(flushed, i);
      i = skipSpace(text, i);
      flushed = i;
      spaced = true;
    }
  };
  let expectValue = true;
  for (;;) {
    if (expectValue) {
      const c = text.charCodeAt(i);
      if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        const obj = c === OPEN_BRACE;
        stack.push(obj ? new Map() : null);
        if (stack.length > deepest) {
          deepest = stack.length;
          if (options.depthBase + deepest > MAX_DEPTH) throw new StrictJsonError("too_deep", `nesting deeper than ${MAX_DEPTH}`, i);
        }
        i++;
        space();
        const close = text.charCodeAt(i);
        if (close === (obj ? CLOSE_BRACE : CLOSE_BRACKET)) {
          stack.pop();
          i++;
          expectValue = false;
        } else if (obj) {
          i = keyThenColon(text, i, stack[stack.length - 1]!);
          space();
        }
        continue;
      }
      if (c === QUOTE) i = stringEnd(text, i);
      else if (c === MINUS || (c >= 0x30 && c <= 0x39)) {
        const end = numberEnd(text, i);
        if (options.exactNumbers) exactNumber(text.slice(i, end), i);
        else checkRange(text, i, end);
        i = end;
      } else i = literalEnd(text, i);
      expectValue = false;
      continue;
    }
    if (stack.length === 0) break;
    space();
    const c = text.charCodeAt(i);
    const top = stack[stack.length - 1]!;
    if (c === COMMA) {
      i++;
      space();
      if (top !== null) {
        i = keyThenColon(text, i, top);
        space();
      }
      expectValue = true;
    } else if (c === (top !== null ? CLOSE_BRACE : CLOSE_BRACKET)) {
      stack.pop();
      i++;
    } else malformed(i);
  }
  if (!options.compact) return { end: i, depth: deepest };
  let compact = spaced ? out + text.slice(flushed, i) : text.slice(from, i);
  if (HTML_UNSAFE.test(compact)) compact = compact.replace(HTML_UNSAFE_ALL, (ch) => HTML_ESCAPES[ch]!);
  return { end: i, depth: deepest, compact };

  function keyThenColon(t: string, k: number, seen: Map<string, string>): number {
    if (t.charCodeAt(k) !== QUOTE) malformed(k, "expected a key");
    let j = stringEnd(t, k);
    checkKey(seen, stringValue(t, k, j, lastEscaped), k);
    if (j < t.length && isSpace(t.charCodeAt(j))) {
      if (options.compact) out += t.slice(flushed, j);
      j = skipSpace(t, j);
      flushed = j;
      spaced = true;
    }
    if (t.charCodeAt(j) !== COLON) malformed(j, "expected ':'");
    return j + 1;
  }
}

// The guided reader: module state rather than a closure per call (this runs on every
// delivery). Not re-entrant, and nothing it calls reads JSON.
let src = "";
let pos = 0;

/**
 * Reads `text` as one JSON value, guided by `guide` (default: no schema, every number
 * exact). Throws StrictJsonError.
 */
export function parseStrictJson(text: string, guide: JsonGuide = GENERIC_GUIDE): unknown {
  src = text;
  pos = skipSpace(text, 0);
  try {
    const value = readValue(guide, 0);
    pos = skipSpace(text, pos);
    if (pos !== text.length) malformed(pos, "data after the value");
    return value;
  } catch (e) {
    // Content blocks nest through tool results; a stack that runs out is a nesting too deep.
    if (e instanceof RangeError) throw new StrictJsonError("too_deep", "nesting too deep to read");
    throw e;
  } finally {
    src = "";
  }
}

function readValue(guide: JsonGuide, depth: number): unknown {
  const c = src.charCodeAt(pos);
  switch (guide.kind) {
    case "raw": {
      const r = scanJson(src, pos, { depthBase: depth, exactNumbers: false, compact: true });
      pos = r.end;
      return guide.keep!(r.compact!, r.depth);
    }
    case "quoted":
      if (c === QUOTE) {
        const start = pos;
        const end = stringEnd(src, pos);
        if (lastEscaped) throw new StrictJsonError("escaped_time", "a time's quoted text holds an escape, which Go's time parser refuses", start);
        pos = end;
        return src.slice(start + 1, end - 1);
      }
      break;
    case "shape":
      if (c === OPEN_BRACE && guide.member) return readObject(guide, depth + 1);
      if (c === OPEN_BRACKET && guide.element) return readArray(guide.element(), depth + 1);
      break;
    case "generic":
      break;
  }
  return readGeneric(depth);
}

function readGeneric(depth: number): unknown {
  const c = src.charCodeAt(pos);
  const start = pos;
  if (c === QUOTE) {
    pos = stringEnd(src, pos);
    return stringValue(src, start, pos, lastEscaped);
  }
  if (c === MINUS || (c >= 0x30 && c <= 0x39)) {
    pos = numberEnd(src, pos);
    return exactNumber(src.slice(start, pos), start);
  }
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    pos = scanJson(src, pos, { depthBase: depth, exactNumbers: true, compact: false }).end;
    return parsedJson(src.slice(start, pos));
  }
  pos = literalEnd(src, pos);
  return c === 0x74 ? true : c === 0x66 ? false : null;
}

function readObject(guide: JsonGuide, depth: number): Record<string, unknown> {
  if (depth > MAX_DEPTH) throw new StrictJsonError("too_deep", `nesting deeper than ${MAX_DEPTH}`, pos);
  pos = skipSpace(src, pos + 1);
  const out: Record<string, unknown> = {};
  if (src.charCodeAt(pos) === CLOSE_BRACE) {
    pos++;
    return out;
  }
  // Go's duplicate check keys each object by strings.ToLower. While every key read is its
  // own lower case (snake_case wire names), those keys are `out`'s own keys: no map needed.
  let seen: Map<string, string> | undefined;
  for (;;) {
    if (src.charCodeAt(pos) !== QUOTE) malformed(pos, "expected a key");
    const at = pos;
    const end = stringEnd(src, pos);
    const known = lastEscaped || guide.keys === undefined ? undefined : knownKey(guide.keys, at + 1, end - 1);
    const key = known !== undefined ? known.name : stringValue(src, at, end, lastEscaped);
    if (seen === undefined && (known !== undefined ? known.ownLower : isOwnLower(key))) {
      if (Object.hasOwn(out, key)) throw new StrictJsonError("duplicate_key", `duplicate key ${JSON.stringify(key)}`, at);
    } else {
      seen ??= keysByLower(out);
      checkKey(seen, key, at);
    }
    pos = skipSpace(src, end);
    if (src.charCodeAt(pos) !== COLON) malformed(pos, "expected ':'");
    pos = skipSpace(src, pos + 1);
    const child = known !== undefined ? (known.child ??= guide.member!(key)) : guide.member!(key);
    let value: unknown;
    if (child === undefined) {
      pos = scanJson(src, pos, { depthBase: depth, exactNumbers: false, compact: false }).end;
      value = IGNORED;
    } else value = child.deferRefusal ? readDeferring(child, depth) : readValue(child, depth);
    if (key === "__proto__") Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    else out[key] = value;
    pos = skipSpace(src, pos);
    const c = src.charCodeAt(pos);
    if (c === COMMA) pos = skipSpace(src, pos + 1);
    else if (c === CLOSE_BRACE) {
      pos++;
      return out;
    } else malformed(pos);
  }
}

/**
 * A member value read by its guide, or, where the guide refuses it, checked as an ignored
 * value is and kept as its refusal. Each value is read again at most once, on refusal. A
 * stack that runs out (blocks nest through tool results) is such a refusal: the scan is
 * iterative, and it runs here, with the stack unwound.
 */
function readDeferring(guide: JsonGuide, depth: number): unknown {
  const start = pos;
  try {
    return readValue(guide, depth);
  } catch (e) {
    const refusal = e instanceof RangeError ? new StrictJsonError("too_deep", "nesting too deep to read") : e;
    if (!(refusal instanceof StrictJsonError)) throw e;
    pos = scanJson(src, start, { depthBase: depth, exactNumbers: false, compact: false }).end;
    return new RefusedValue(refusal, src.slice(start, pos));
  }
}

/** The known key equal to the unescaped text src[start, end), if any. */
function knownKey(table: KeyTable, start: number, end: number): KnownKey | undefined {
  const bucket = table[end - start];
  if (bucket === undefined) return undefined;
  next: for (const k of bucket) {
    const name = k.name;
    for (let i = 0; i < name.length; i++) if (name.charCodeAt(i) !== src.charCodeAt(start + i)) continue next;
    return k;
  }
  return undefined;
}

function readArray(element: JsonGuide, depth: number): unknown[] {
  if (depth > MAX_DEPTH) throw new StrictJsonError("too_deep", `nesting deeper than ${MAX_DEPTH}`, pos);
  pos = skipSpace(src, pos + 1);
  const out: unknown[] = [];
  if (src.charCodeAt(pos) === CLOSE_BRACKET) {
    pos++;
    return out;
  }
  for (;;) {
    out.push(readValue(element, depth));
    pos = skipSpace(src, pos);
    const c = src.charCodeAt(pos);
    if (c === COMMA) pos = skipSpace(src, pos + 1);
    else if (c === CLOSE_BRACKET) {
      pos++;
      return out;
    } else malformed(pos);
  }
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

// String.prototype.isWellFormed (ES2024, in Node 20): native, and most texts are well formed.
/** Whether `s` has no lone surrogate: whether it is the text of some UTF-8 bytes. */
export const isWellFormed = (s: string): boolean => (s as unknown as { isWellFormed(): boolean }).isWellFormed();

/** `s` with each lone surrogate replaced by U+FFFD, as Go reads and writes it. */
export function wellFormedText(s: string): string {
  return isWellFormed(s) ? s : s.replace(LONE_SURROGATE, "\ufffd");
}

/** JSON text already checked, parsed as Go reads it (lone surrogates as U+FFFD). */
export function parsedJson(text: string): unknown {
  const value: unknown = JSON.parse(text);
  return SURROGATE_ESCAPE.test(text) ? wellFormedValue(value) : value;
}

/** A parsed value with every lone surrogate (in keys too) read as U+FFFD. */
export function wellFormedValue(v: unknown): unknown {
  if (typeof v === "string") return wellFormedText(v);
  if (v === null || typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map(wellFormedValue);
  const out: Record<string, unknown> = {};
  for (const k in v) {
    Object.defineProperty(out, wellFormedText(k), { value: wellFormedValue((v as Record<string, unknown>)[k]), enumerable: true, writable: true, configurable: true });
  }
  return out;
}
