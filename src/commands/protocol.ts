/**
 * The answer path's wire protocol: a subscriber answers a gate over request/reply on
 * `{ns}.cmd.{sessionId}.{loopId}.answer`, and the loop actor replies with the outcome.
 * Both directions are strict JSON (snake_case), decoded like the journal's request:
 * unknown fields, duplicate keys and trailing data fail closed.
 */
import { z } from "zod";
import { parseStrictJson, StrictJsonError } from "../wire/strict-json.js";
import { fromWire, toWireJson, WireKeyError } from "../wire/wire.js";

/** Command text: non-empty (the wire omits "" like every zero value). */
const text = () => z.string().min(1);
import { CommandError, type CommandErrorCode } from "../errors.js";
import { permissionEffectSchema, type PermissionEffect } from "../events/catalogue.js";
import { newId, uuidSchema } from "../events/ids.js";


export const ANSWER_COMMAND = "answer";

const target = {
  /** A command id makes the answer idempotent: the same id always gets the first outcome. */
  commandId: uuidSchema,
  /** Which gate: by its id, or by the tool execution it guards. */
  gateId: uuidSchema.optional(),
  toolExecutionId: uuidSchema.optional(),
};

export const answerSchema = z
  .discriminatedUnion("kind", [
    z.strictObject({
      kind: z.literal("permission"),
      ...target,
      /** approve or deny: the first control the gate offers with that effect. */
      effect: permissionEffectSchema.optional(),
      /** The control chosen, one the gate's GateOpened listed (e.g. "Approve always for this workspace"). */
      action: text().max(256).optional(),
      reason: text().optional(),
    }),
    z.strictObject({ kind: z.literal("input"), ...target, answer: text() }),
  ])
  .refine((a) => a.gateId !== undefined || a.toolExecutionId !== undefined, "name the gate by gateId or toolExecutionId")
  .refine((a) => a.kind !== "permission" || a.effect !== undefined || a.action !== undefined, "name the effect or the control chosen");
/** What the gate's answer names: a command id, and the gate by its id or by the tool execution it guards. */
export interface AnswerTarget {
  /** A command id makes the answer idempotent: the same id always gets the first outcome. */
  commandId: string;
  gateId?: string | undefined;
  toolExecutionId?: string | undefined;
}

/** An answer to a permission gate: the effect, or the control chosen (one the gate's GateOpened listed). */
export interface PermissionGateAnswer extends AnswerTarget {
  kind: "permission";
  /** approve or deny: the first control the gate offers with that effect. */
  effect?: PermissionEffect | undefined;
  /** The control chosen, e.g. "Approve always for this workspace". */
  action?: string | undefined;
  reason?: string | undefined;
}

/** An answer to a user-input gate. */
export interface InputGateAnswer extends AnswerTarget {
  kind: "input";
  answer: string;
}

/** An answer to a gate, as the loop's actor reads it. */
export type Answer = PermissionGateAnswer | InputGateAnswer;
/** What a caller passes to `answer`; the command id is generated when omitted. */
export type AnswerInput = Answer extends infer A ? (A extends Answer ? Omit<A, "commandId"> & { commandId?: string } : never) : never;

// `status`, not a boolean: the wire omits `false` like every zero value.
export const outcomeSchema = z.strictObject({
  status: z.literal("ok"),
  gateId: uuidSchema,
  toolExecutionId: uuidSchema.optional(),
  /**
   * What took effect: `approve`/`deny` for a permission (the effect, whatever control was
   * chosen), `answered` for user input; for a gate closed without an answer its close
   * reason (`owner_closed`, `abandoned`; `deny` for a permission timed out). Not the control:
   * that is `control`. (An answer's own `action`, and the loop's decision's, are the control
   * chosen: the outcome keeps the wire's name for the effect.)
   */
  action: text(),
  /**
   * The permission control chosen, e.g. `Approve always for this workspace` (whose effect,
   * `approve`, is `action`); absent for input and for a gate closed without an answer.
   */
  control: text().optional(),
  /** Journal sequence of the GateResolved the answer produced. */
  journalSeq: z.number().int().min(1),
  /** The command id was answered before; this is that first outcome. */
  duplicate: z.boolean().default(false),
});
/** What an answer did. */
export interface AnswerOutcome {
  status: "ok";
  gateId: string;
  toolExecutionId?: string | undefined;
  /**
   * What took effect: `approve`/`deny` for a permission (the effect, whatever control was
   * chosen), `answered` for user input; for a gate closed without an answer its close
   * reason (`owner_closed`, `abandoned`; `deny` for a permission timed out). Not the
   * control: that is `control`.
   */
  action: string;
  /**
   * The permission control chosen, e.g. `Approve always for this workspace` (whose effect,
   * `approve`, is `action`); absent for input and for a gate closed without an answer.
   */
  control?: string | undefined;
  /** Journal sequence of the GateResolved the answer produced. */
  journalSeq: number;
  /** The command id was answered before; this is that first outcome. */
  duplicate: boolean;
}

const refusalSchema = z.strictObject({
  status: z.literal("refused"),
  // COMMAND_TIMEOUT: not applied as far as the actor knows, or not known yet (an attach
  // forwarding to a runtime that is busy, unreachable or slow): repeat the command.
  code: z.enum(["COMMAND_INVALID", "GATE_UNKNOWN", "GATE_RESOLVED", "COMMAND_FAILED", "COMMAND_TIMEOUT"]),
  message: text(),
  /** GATE_RESOLVED: how the gate was resolved; absent while it is being resolved. */
  outcome: outcomeSchema.optional(),
});
const replySchema = z.discriminatedUnion("status", [outcomeSchema, refusalSchema]);
export type Reply = z.output<typeof replySchema>;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

export function encodeMessage(schema: z.ZodType, value: unknown): Uint8Array {
  return encoder.encode(toWireJson(schema, value));
}

/** Strictly decodes a command or reply; any defect is a CommandError with `code`. */
export function decodeMessage<T>(schema: z.ZodType<T>, data: Uint8Array, code: CommandErrorCode): T {
  let json: unknown;
  try {
    json = parseStrictJson(decoder.decode(data));
    const r = schema.safeParse(fromWire(schema, json));
    if (r.success) return r.data;
    const issue = r.error.issues[0]!;
    throw new CommandError(code, `${issue.path.join(".") || "message"}: ${issue.message}`);
  } catch (e) {
    if (e instanceof CommandError) throw e;
    if (e instanceof StrictJsonError || e instanceof WireKeyError || e instanceof TypeError) {
      throw new CommandError(code, `malformed message: ${(e).message}`, { cause: e });
    }
    throw e;
  }
}

export const decodeAnswer = (data: Uint8Array): Answer => decodeMessage(answerSchema, data, "COMMAND_INVALID");
export const decodeReply = (data: Uint8Array): Reply => decodeMessage(replySchema, data, "COMMAND_FAILED");
export const encodeAnswer = (a: Answer): Uint8Array => encodeMessage(answerSchema, a);
export const encodeReply = (r: Reply): Uint8Array => encodeMessage(replySchema, r);

/** The command for an answer, with a fresh command id unless one is given; throws CommandError COMMAND_INVALID. */
export function answerCommand(input: AnswerInput): Answer {
  const parsed = answerSchema.safeParse({ ...input, commandId: input.commandId ?? newId() });
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new CommandError("COMMAND_INVALID", `${issue.path.join(".") || "answer"}: ${issue.message}`);
}

/** The outcome a reply carries; a refusal throws CommandError with the refusal's code. */
export function outcomeOf(data: Uint8Array): AnswerOutcome {
  const reply = decodeReply(data);
  if (reply.status === "refused") throw new CommandError(reply.code, reply.message, reply.outcome ? { outcome: reply.outcome } : {});
  return reply;
}
