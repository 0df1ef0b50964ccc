import { z } from "zod";

/**
 * Caps on text fields, in UTF-16 code units. The Go runtime caps in UTF-8 bytes, and a
 * string of N bytes never has more than N code units, so its events always fit.
 */
export const limits = {
  /** Names, kinds, ids of things that are not UUIDs. */
  name: 256,
  /** Reasons, questions, descriptions, commands. */
  text: 4096,
  /** ToolCallStarted.summary and PermissionRequest.summary. */
  summary: 512,
  /** ToolCallCompleted.resultPreview. */
  resultPreview: 2048,
  /** Message content in StepDone. */
  content: 1 << 20,
  choices: 64,
  requirements: 64,
  candidates: 64,
  messages: 1024,
} as const;

// C0 controls other than tab, newline and carriage return, DEL, and lone surrogates.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const FORBIDDEN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function isCleanText(value: string): boolean {
  return !FORBIDDEN.test(value);
}

/** A non-empty, well-formed string of at most `max` code units. */
export function text(max: number = limits.text) {
  return z
    .string()
    .min(1, "must not be empty")
    // Not .max(): zod measures strings in code points, the caps are in code units.
    .refine((v) => v.length <= max, `must be at most ${max} UTF-16 code units`)
    .refine(isCleanText, "must be well-formed text without control characters");
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
