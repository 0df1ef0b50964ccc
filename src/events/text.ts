import { z } from "zod";

/**
 * Display caps that `createEvent` applies at construction to the previews, in UTF-16
 * code units. The journal's own text fields have no cap below the event's byte cap (the
 * Go runtime writes tool output and model text of any length), except the few the runtime
 * caps itself: MODEL.md lists them.
 */
export const limits = {
  /** ToolCallStarted.summary. */
  summary: 512,
  /** ToolCallCompleted.resultPreview. */
  resultPreview: 2048,
} as const;

/**
 * Free text as the Go runtime stores it: any string. Control characters and NUL are
 * allowed (tool output carries ANSI escapes); "" is the wire's zero and means absent.
 */
export function text() {
  return z.string();
}

// Go's unicode.IsSpace: what strings.TrimSpace removes. Not U+200B, U+180E or U+FEFF.
const SPACE = "[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";
const UNTRIMMED = new RegExp(`^${SPACE}|${SPACE}$`);

/** The UTF-8 length of `value` in bytes (a lone surrogate counts as U+FFFD, as Go writes it). */
export function utf8Length(value: string): number {
  let n = value.length;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < value.length && (value.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 2; // a pair: 4 bytes for 2 code units
      i++;
    } else n += 2;
  }
  return n;
}

/** Set, in the wire's sense: "" is the zero value and means absent. */
export function isSet(v: string | undefined): v is string {
  return v !== undefined && v !== "";
}

/** Text the Go runtime's request validator checks: no surrounding white space, no NUL. */
export function isTrimmedText(value: string): boolean {
  return !UNTRIMMED.test(value) && !value.includes("\u0000");
}

/**
 * Cuts `value` to at most `max` code units without splitting a surrogate pair, so a
 * capped preview is still valid text.
 */
export function capText(value: string, max: number): string {
  if (value.length <= max) return value;
  let end = max;
  const last = value.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return value.slice(0, end);
}
