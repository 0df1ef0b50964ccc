/**
 * What a StepDone records about the bytes kept for each tool result (the runtime's
 * ToolResultCapture): a closed allowlist, read strictly as the runtime reads it, and the
 * runtime's rules tying the captures to the step's tool results.
 */
import { z } from "zod";
import { wireField } from "../wire/wire.js";
import { uuidSchema } from "./ids.js";
import type { Violation } from "./registry.js";
import { text, utf8Length } from "./text.js";

/** A step's captures: one per tool result at most (the messages' cap less the assistant's). */
export const MAX_STEP_CAPTURES = 9_999;
/** The runtime's cap on a capture's tool_use_id, in UTF-8 bytes. */
export const MAX_CAPTURE_ID_BYTES = 1024;

export const TOOL_RESULT_ENCODINGS = ["utf-8", "binary"] as const;
export const TRUNCATION_REASONS = ["capture_ceiling", "source_limit"] as const;

const count = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const always = <S extends z.ZodType>(schema: S) => wireField(schema, { always: true });

/**
 * Where the elided bytes are kept. The runtime's reader keeps only the members it
 * declares and drops the others, so unknown keys are ignored here too.
 */
export const objectReferenceSchema = z.object({ objectId: always(text().optional()) });

export const toolResultCaptureSchema = z.strictObject({
  toolExecutionId: uuidSchema,
  /** The model provider's id of the call whose result this is. */
  toolUseId: always(text().optional()),
  /** An empty `{}` is a reference without an object id: kept, so validation refuses it. */
  reference: wireField(objectReferenceSchema.optional(), { keepEmpty: true }),
  capturedBytes: always(count.optional()),
  /** Exact size; `null` (absent here) when only a lower bound is known. */
  originalBytes: wireField(count.optional(), { always: true, nullable: true }),
  originalBytesLowerBound: count.optional(),
  truncated: always(z.boolean().optional()),
  truncationReason: text().optional(),
  encoding: always(text().optional()),
});
/** What was kept of one tool result's bytes (StepDone's `captures`). */
export interface ToolResultCapture {
  toolExecutionId: string;
  /** The model provider's id of the call whose result this is. */
  toolUseId?: string | undefined;
  /** Where the bytes are kept; an empty `{}` (no object id) is kept, so validation refuses it. */
  reference?: { objectId?: string | undefined } | undefined;
  capturedBytes?: number | undefined;
  /** Exact size; absent when only a lower bound is known. */
  originalBytes?: number | undefined;
  originalBytesLowerBound?: number | undefined;
  truncated?: boolean | undefined;
  truncationReason?: string | undefined;
  encoding?: string | undefined;
}

const bad = (i: number, detail: string): Violation => ({ field: `captures.${i}`, rule: "is invalid", detail });

function checkCapture(c: ToolResultCapture, i: number, results: ReadonlyMap<string, number>): Violation | undefined {
  const id = c.toolUseId ?? "";
  if (id === "" || utf8Length(id) > MAX_CAPTURE_ID_BYTES) return bad(i, `tool_use_id must be 1 to ${MAX_CAPTURE_ID_BYTES} bytes`);
  if (results.get(id) !== 1) return bad(i, "tool_use_id must name exactly one tool result of the step");
  if (c.reference !== undefined && (c.reference.objectId ?? "") === "") return bad(i, "a reference needs an object id");
  const truncated = c.truncated ?? false;
  if (truncated && c.reference === undefined) return bad(i, "a truncated capture names the object that keeps the rest");
  if (!(TOOL_RESULT_ENCODINGS as readonly string[]).includes(c.encoding ?? "")) return bad(i, "encoding must be utf-8 or binary");
  const captured = c.capturedBytes ?? 0;
  const lower = c.originalBytesLowerBound ?? 0;
  if (c.originalBytes !== undefined) {
    if (lower !== 0 || c.originalBytes < captured) return bad(i, "an exact size has no lower bound and is at least the captured bytes");
    if (truncated !== c.originalBytes > captured) return bad(i, "truncated must say whether bytes were elided");
  } else if (!truncated || lower <= captured) return bad(i, "an unknown size is a truncation with a lower bound above the captured bytes");
  if (truncated ? !(TRUNCATION_REASONS as readonly string[]).includes(c.truncationReason ?? "") : (c.truncationReason ?? "") !== "") {
    return bad(i, "a truncation reason goes with a truncation, and only then");
  }
  return undefined;
}

/**
 * The runtime's StepDone capture rules: none, or exactly one per tool result, each naming
 * a distinct result and tool execution, with sizes that agree with `truncated`.
 */
export function checkCaptures(
  messages: readonly { role: string; toolUseId?: string | undefined }[],
  captures: readonly ToolResultCapture[] | undefined,
): Violation | undefined {
  if (captures === undefined || captures.length === 0) return undefined;
  if (captures.length > MAX_STEP_CAPTURES || captures.length !== messages.length - 1) {
    return { field: "captures", rule: "is invalid", detail: "a step has no captures or one per tool result" };
  }
  const results = new Map<string, number>();
  for (const m of messages.slice(1)) results.set(m.toolUseId ?? "", (results.get(m.toolUseId ?? "") ?? 0) + 1);
  const executions = new Set<string>();
  const uses = new Set<string>();
  for (const [i, c] of captures.entries()) {
    if (executions.has(c.toolExecutionId)) return bad(i, "duplicates an earlier capture's tool execution");
    if (uses.has(c.toolUseId ?? "")) return bad(i, "duplicates an earlier capture's tool_use_id");
    executions.add(c.toolExecutionId);
    uses.add(c.toolUseId ?? "");
    const v = checkCapture(c, i, results);
    if (v) return v;
  }
  return undefined;
}
