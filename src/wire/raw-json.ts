/**
 * A json.RawMessage: JSON kept as text, exactly as the Go runtime keeps and writes it.
 *
 * Go stores a RawMessage's bytes as read and, when it writes one, compacts it (whitespace
 * between tokens removed) and escapes `<`, `>`, `&`, U+2028 and U+2029 inside its strings;
 * everything else (key order, number spelling, other escapes) stays as written. `text` is
 * that written form, so what is read is what is written back. `value()` parses it on
 * demand (numbers as doubles: for display, not for writing back).
 */
import { type JsonGuide, parsedJson, parseStrictJson, StrictJsonError } from "./strict-json.js";

export class RawJson {
  private constructor(
    /** The JSON text, in the form Go writes it. */
    readonly text: string,
    /** How deeply it nests (0 for a scalar): the writer checks the event's total depth. */
    readonly depth: number,
  ) {}

  /** Refuses (StrictJsonError) what Go's decoder refuses: bad JSON, case-equal keys, too deep. */
  static fromText(text: string): RawJson {
    return parseStrictJson(text, RAW_GUIDE) as RawJson;
  }

  /** @internal The decoder's constructor: `text` is already scanned and compacted. */
  static trusted(text: string, depth: number): RawJson {
    return new RawJson(text, depth);
  }

  /** Any JSON value written once, as Go would write it; what cannot be written exactly is refused. */
  static of(value: unknown): RawJson {
    if (value instanceof RawJson) return value;
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

function jsonText(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    if (e instanceof RangeError) throw new StrictJsonError("too_deep", "the value nests too deeply to be written");
    throw new StrictJsonError("malformed_json", `the value cannot be written as JSON: ${(e as Error).message}`);
  }
  if (text === undefined) throw new StrictJsonError("malformed_json", "the value cannot be written as JSON");
  try {
    checkWritable(value, 0);
  } catch (e) {
    if (e instanceof RangeError) throw new StrictJsonError("too_deep", "the value nests too deeply to be written");
    throw e;
  }
  return text;
}

/** What JSON.stringify would change silently: NaN and infinities (written null), -0 (written 0). */
function checkWritable(v: unknown, depth: number): void {
  if (typeof v === "number") {
    if (!Number.isFinite(v) || Object.is(v, -0)) {
      throw new StrictJsonError("inexact_number", `the number ${String(v)} cannot be written so that it reads back exactly`);
    }
    return;
  }
  if (v === null || typeof v !== "object" || depth > 10_001) return;
  if (Array.isArray(v)) for (const x of v) checkWritable(x, depth + 1);
  else for (const k in v) checkWritable((v as Record<string, unknown>)[k], depth + 1);
}
