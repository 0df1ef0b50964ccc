/**
 * A json.RawMessage: JSON kept as text, exactly as the Go runtime keeps and writes it.
 *
 * Go stores a RawMessage's bytes as read and, when it writes one, compacts it (whitespace
 * between tokens removed) and escapes `<`, `>`, `&`, U+2028 and U+2029 inside its strings;
 * everything else (key order, number spelling, other escapes) stays as written. `text` is
 * that written form, so what is read is what is written back. `value()` parses it on
 * demand (numbers as doubles: for display, not for writing back).
 */
import { isWellFormed, type JsonGuide, parsedJson, parseStrictJson, StrictJsonError } from "./strict-json.js";

/** A JSON value kept as the exact text the Go runtime wrote (a tool's arguments or result, a raw message), never re-encoded. */
export class RawJson {
  /** The brand of instances this class made: `Object.create(RawJson.prototype)` has none. */
  readonly #made = true;

  private constructor(
    /** The JSON text, in the form Go writes it. */
    readonly text: string,
    /** How deeply it nests (0 for a scalar): the writer checks the event's total depth. */
    readonly depth: number,
  ) {
    // The writer embeds `text` as it is: it must stay the text that was checked.
    Object.freeze(this);
  }

  /** Whether `v` is a RawJson this class made (checked, frozen), not one forged from its prototype. */
  static is(v: unknown): v is RawJson {
    return typeof v === "object" && v !== null && #made in v && v.#made;
  }

  /** Refuses (StrictJsonError) what Go's decoder refuses: bad JSON, case-equal keys, too deep. */
  static fromText(text: string): RawJson {
    if (typeof text !== "string") throw new StrictJsonError("malformed_json", `raw JSON text must be a string, not ${describe(text)}`);
    return parseStrictJson(text, RAW_GUIDE) as RawJson;
  }

  /** @internal The decoder's constructor: `text` is already scanned and compacted. */
  static trusted(text: string, depth: number): RawJson {
    return new RawJson(text, depth);
  }

  /**
   * Any JSON value written once, as JSON.stringify writes it (`toJSON` called, a boxed
   * number, string or boolean unboxed, an object's own keys in its own order), and refused
   * (StrictJsonError) wherever JSON.stringify would write something that reads back as
   * another value or drop something without a word: a number that is not finite or is -0,
   * boxed or returned by `toJSON` included, and a BigInt (`inexact_number`); a function, a
   * symbol or `undefined` as an array element, as what `toJSON` returns or as the value
   * itself, a function or symbol as a member, a Map, Set, WeakMap or WeakSet (written `{}`),
   * a cycle, a string or key holding a lone surrogate (`malformed_json`). A member whose
   * value is `undefined` is absent, as
   * JSON.stringify has it.
   */
  static of(value: unknown): RawJson {
    if (RawJson.is(value)) return value;
    return RawJson.fromText(jsonText(value));
  }

  /** The value, parsed now (lone surrogates read as U+FFFD, as Go reads them). */
  value(): unknown {
    return parsedJson(this.text);
  }

  /** JSON.stringify writes the parsed value (JavaScript cannot embed raw text before Node 21). */
  toJSON(): unknown {
    return this.value();
  }
}

/** The reader's guide for a json.RawMessage: the text is scanned, compacted and kept as a RawJson. */
export const RAW_GUIDE: JsonGuide = { kind: "raw", keep: (text, depth) => RawJson.trusted(text, depth) };

/**
 * `s`, refused when it holds a lone surrogate: JSON.stringify writes it as its escape, which
 * every reader (Go's, and value()) reads back as U+FFFD, another value; Go's writer never
 * writes one (it writes invalid UTF-8 as U+FFFD).
 */
function wellFormed(s: string, what: string): string {
  if (!isWellFormed(s)) throw new StrictJsonError("malformed_json", `${what} holds a lone surrogate, which reads back as U+FFFD`);
  return s;
}

function jsonText(value: unknown): string {
  try {
    const text = writeJson(value, "", new Set());
    if (text === undefined) throw new StrictJsonError("malformed_json", `${describe(value)} cannot be written as JSON`);
    return text;
  } catch (e) {
    if (e instanceof RangeError) throw new StrictJsonError("too_deep", "the value nests too deeply to be written");
    throw e;
  }
}

/** Whether `v` has the internal slot `valueOf` of `proto` reads (what JSON.stringify unboxes): a toStringTag cannot fake it. */
function hasSlot(valueOf: (this: unknown) => unknown, v: object): boolean {
  try {
    valueOf.call(v);
    return true;
  } catch {
    return false;
  }
}

/** Whether `v` is a Map, Set, WeakMap or WeakSet, whose entries JSON.stringify does not see. */
function isCollection(v: object): boolean {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- brand checks: each method is called with the value as `this`
  const probes: ((this: unknown, x: never) => unknown)[] = [Map.prototype.has, Set.prototype.has, WeakMap.prototype.has, WeakSet.prototype.has];
  return probes.some((has) => {
    try {
      has.call(v, {} as never);
      return true;
    } catch {
      return false;
    }
  });
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (typeof v === "object") return Array.isArray(v) ? "an array" : `an object (${Object.prototype.toString.call(v)})`;
  if (typeof v === "function") return "a function";
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- only primitives reach here
  return typeof v === "string" ? "a string" : typeof v === "bigint" ? `the BigInt ${String(v)}` : typeof v === "symbol" ? "a symbol" : `${typeof v} ${String(v)}`;
}

function inexact(v: unknown): never {
  const what = typeof v === "bigint" ? `the BigInt ${String(v)}` : `the number ${Object.is(v, -0) ? "-0" : String(v)}`;
  throw new StrictJsonError("inexact_number", `${what} cannot be written so that it reads back exactly`);
}

/**
 * `value` as JSON.stringify's SerializeJSONProperty writes it (holder key `key`), or
 * undefined where it writes nothing; refuses what it would change (see RawJson.of).
 */
function writeJson(value: unknown, key: string, open: Set<object>): string | undefined {
  let v = value;
  const calledToJson = (typeof v === "object" && v !== null) || typeof v === "bigint" ? typeof (v as { toJSON?: unknown }).toJSON === "function" : false;
  if (calledToJson) {
    v = (v as { toJSON(key: string): unknown }).toJSON(key);
    if (v === undefined || typeof v === "function" || typeof v === "symbol") {
      throw new StrictJsonError("malformed_json", `toJSON returned ${describe(v)}, which JSON.stringify would drop or write as null`);
    }
  }
  if (typeof v === "object" && v !== null) {
    // Unboxed as JSON.stringify unboxes them, then held to the same rules as the primitive.
    /* eslint-disable @typescript-eslint/unbound-method, @typescript-eslint/no-base-to-string -- brand checks; String() of a String object is its text */
    if (hasSlot(Number.prototype.valueOf, v)) v = Number(v);
    else if (hasSlot(String.prototype.valueOf, v)) v = String(v);
    else if (hasSlot(Boolean.prototype.valueOf, v)) v = Boolean.prototype.valueOf.call(v);
    else if (hasSlot(BigInt.prototype.valueOf, v)) v = BigInt.prototype.valueOf.call(v);
    /* eslint-enable @typescript-eslint/unbound-method, @typescript-eslint/no-base-to-string */
  }
  switch (typeof v) {
    case "string":
      return JSON.stringify(wellFormed(v, "a string"));
    case "number":
      if (!Number.isFinite(v) || Object.is(v, -0)) inexact(v);
      return JSON.stringify(v);
    case "boolean":
      return v ? "true" : "false";
    case "bigint":
      inexact(v);
      break;
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
    case "object":
      break;
  }
  if (v === null) return "null";
  const obj = v;
  if (isCollection(obj)) throw new StrictJsonError("malformed_json", `${describe(obj)} would be written as {} without its entries`);
  if (open.has(obj)) throw new StrictJsonError("malformed_json", "the value holds a cycle");
  open.add(obj);
  let out: string;
  if (Array.isArray(obj)) {
    const parts: string[] = [];
    for (let i = 0; i < obj.length; i++) {
      const x = writeJson((obj as unknown[])[i], String(i), open);
      if (x === undefined) throw new StrictJsonError("malformed_json", `element ${i} is ${describe((obj as unknown[])[i])}, which JSON.stringify would write as null`);
      parts.push(x);
    }
    out = `[${parts.join(",")}]`;
  } else {
    const parts: string[] = [];
    for (const k of Object.keys(obj)) {
      const member = (obj as Record<string, unknown>)[k];
      const x = writeJson(member, k, open);
      if (x === undefined) {
        // An undefined member is an absent one; a function or symbol would vanish unseen.
        if (member === undefined) continue;
        throw new StrictJsonError("malformed_json", `member ${JSON.stringify(k)} is ${describe(member)}, which JSON.stringify would drop`);
      }
      parts.push(`${JSON.stringify(wellFormed(k, "a key"))}:${x}`);
    }
    out = `{${parts.join(",")}}`;
  }
  open.delete(obj);
  return out;
}
