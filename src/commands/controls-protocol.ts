/**
 * The session controls' wire protocol: input and interrupt, over request/reply on
 * `{ns}.cmd.{sessionId}._.input` and `….interrupt` (session-scoped: the session's loop
 * actor decides which loop takes them, as the Go runtime's Session.Submit/Interrupt do).
 * Both directions are strict JSON (snake_case, blocks in the Go content codec), decoded
 * like the answer path's: unknown fields, duplicate keys and trailing data fail closed.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { contentBlockSchema, MAX_BLOCKS } from "../events/content.js";
import { newId, uuidSchema } from "../events/ids.js";
import { CommandError } from "../errors.js";
import { decodeMessage, encodeMessage } from "./protocol.js";

export const INPUT_COMMAND = "input";
export const INTERRUPT_COMMAND = "interrupt";

/** sha256, hex: what identifies a request for idempotency. */
const fingerprint = z.string().regex(/^[0-9a-f]{64}$/);

const base = {
  /** The same command id always gets the first outcome (or IDEMPOTENCY_CONFLICT for another request). */
  commandId: uuidSchema,
  /** Which request the command id was first used for; another one under the same id is a conflict. */
  fingerprint,
};

export const inputCommandSchema = z.strictObject({ ...base, blocks: z.array(contentBlockSchema).min(1).max(MAX_BLOCKS) });
export const interruptCommandSchema = z.strictObject(base);
export type InputCommand = z.output<typeof inputCommandSchema>;
export type InterruptCommand = z.output<typeof interruptCommandSchema>;

// `status`, not a boolean: the wire omits `false` like every zero value.
const okInput = z.strictObject({ status: z.literal("ok"), commandId: uuidSchema, duplicate: z.boolean().default(false) });
const okInterrupt = z.strictObject({ status: z.literal("ok"), commandId: uuidSchema, interrupted: z.boolean().default(false), duplicate: z.boolean().default(false) });
const refusal = z.strictObject({
  status: z.literal("refused"),
  code: z.enum(["COMMAND_INVALID", "COMMAND_FAILED", "IDEMPOTENCY_CONFLICT", "INPUT_REFUSED"]),
  message: z.string().min(1),
});
export const inputReplySchema = z.discriminatedUnion("status", [okInput, refusal]);
export const interruptReplySchema = z.discriminatedUnion("status", [okInterrupt, refusal]);
export type InputReply = z.output<typeof inputReplySchema>;
export type InterruptReply = z.output<typeof interruptReplySchema>;
export type ControlRefusal = z.output<typeof refusal>;

export const encodeInputCommand = (c: InputCommand): Uint8Array => encodeMessage(inputCommandSchema, c);
export const encodeInterruptCommand = (c: InterruptCommand): Uint8Array => encodeMessage(interruptCommandSchema, c);
export const encodeInputReply = (r: InputReply): Uint8Array => encodeMessage(inputReplySchema, r);
export const encodeInterruptReply = (r: InterruptReply): Uint8Array => encodeMessage(interruptReplySchema, r);
export const decodeInputCommand = (d: Uint8Array): InputCommand => decodeMessage(inputCommandSchema, d, "COMMAND_INVALID");
export const decodeInterruptCommand = (d: Uint8Array): InterruptCommand => decodeMessage(interruptCommandSchema, d, "COMMAND_INVALID");
export const decodeInputReply = (d: Uint8Array): InputReply => decodeMessage(inputReplySchema, d, "COMMAND_FAILED");
export const decodeInterruptReply = (d: Uint8Array): InterruptReply => decodeMessage(interruptReplySchema, d, "COMMAND_FAILED");

/** The sha256 of a request's bytes, as the fingerprint. */
export function fingerprintOf(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Checks a command before it is sent; throws CommandError COMMAND_INVALID naming the field. */
export function checkedCommand<S extends typeof inputCommandSchema | typeof interruptCommandSchema>(schema: S, value: Record<string, unknown>): z.output<S> {
  const parsed = schema.safeParse({ ...value, commandId: value.commandId ?? newId() });
  if (parsed.success) return parsed.data as z.output<S>;
  const issue = parsed.error.issues[0]!;
  throw new CommandError("COMMAND_INVALID", `${issue.path.join(".") || "command"}: ${issue.message}`);
}
