/**
 * The caller's side of the session controls: submit input to a session, interrupt it.
 * Expected outcomes are result values; the error says whether the command took effect:
 * COMMAND_NO_LISTENER (nobody serves the session: not sent), COMMAND_TIMEOUT (no reply in
 * time: unknown — retry with the same command id, which is safe), IDEMPOTENCY_CONFLICT,
 * INPUT_REFUSED, COMMAND_INVALID or COMMAND_FAILED (did not take effect).
 */
import { NoRespondersError, RequestError, TimeoutError } from "@nats-io/transport-node";
import { permissionViolation } from "../journal/consumer-errors.js";
import { z } from "zod";
import type { CommandsContext } from "./context.js";
import { toWireJson } from "../wire/wire.js";
import { CommandError } from "../errors.js";
import { type ContentBlock, contentBlockSchema } from "../events/content.js";
import { sessionCommandSubject } from "../subjects/subjects.js";
import {
  checkedCommand,
  type ControlRefusal,
  decodeInputReply,
  decodeInterruptReply,
  encodeInputCommand,
  encodeInterruptCommand,
  fingerprintOf,
  INPUT_COMMAND,
  inputCommandSchema,
  INTERRUPT_COMMAND,
  interruptCommandSchema,
} from "./controls-protocol.js";
import { type ControlOptions, type InterruptOptions, parseControlOptions, parseInterruptOptions } from "./options.js";
import { tracedRequest } from "../telemetry/index.js";

export type { ControlOptions, InterruptOptions };

/** A control's outcome as a result value: accepted (with its command id, and whether a retry found it already done) or refused with a typed `CommandError`. */
export type ControlResult<T> = ({ readonly ok: true; readonly commandId: string; readonly duplicate: boolean } & T) | { readonly ok: false; readonly error: CommandError };

const blocksSchema = z.array(contentBlockSchema);
const INTERRUPT_FINGERPRINT = fingerprintOf("interrupt");

/** Sends input to the session's actor: `{ ok: true, commandId }` once it took it. */
export async function submitInput<E>(bus: CommandsContext<E>, sessionId: string, blocks: ContentBlock[], given?: ControlOptions): Promise<ControlResult<object>> {
  const options = parseControlOptions(given);
  let command;
  try {
    command = checkedCommand(inputCommandSchema, { commandId: options.commandId, blocks, fingerprint: options.fingerprint ?? fingerprintOf(toWireJson(blocksSchema, blocks)) });
  } catch (e) {
    return { ok: false, error: e as CommandError };
  }
  const sent = await send(bus, sessionCommandSubject(bus.settings.namespace, sessionId, INPUT_COMMAND), encodeInputCommand(command), sessionId, options.timeoutMs);
  if (sent instanceof CommandError) return { ok: false, error: sent };
  return settle(() => decodeInputReply(sent), (r) => ({ ok: true, commandId: r.commandId, duplicate: r.duplicate }));
}

/** Interrupts the session's in-flight turns: `{ ok: true, interrupted }` says whether one was cancelled. */
export async function interruptSession<E>(bus: CommandsContext<E>, sessionId: string, given?: InterruptOptions): Promise<ControlResult<{ readonly interrupted: boolean }>> {
  const options = parseInterruptOptions(given);
  let command;
  try {
    command = checkedCommand(interruptCommandSchema, { commandId: options.commandId, fingerprint: INTERRUPT_FINGERPRINT });
  } catch (e) {
    return { ok: false, error: e as CommandError };
  }
  const sent = await send(bus, sessionCommandSubject(bus.settings.namespace, sessionId, INTERRUPT_COMMAND), encodeInterruptCommand(command), sessionId, options.timeoutMs);
  if (sent instanceof CommandError) return { ok: false, error: sent };
  return settle(
    () => decodeInterruptReply(sent),
    (r) => ({ ok: true, commandId: r.commandId, duplicate: r.duplicate, interrupted: r.interrupted }),
  );
}

async function send<E>(bus: CommandsContext<E>, subject: string, data: Uint8Array, sessionId: string, timeoutMs: number): Promise<Uint8Array | CommandError> {
  try {
    return (await tracedRequest("session.control", subject, (headers) => bus.nc.request(subject, data, { timeout: timeoutMs, headers }))).data;
  } catch (e) {
    const cause = e instanceof RequestError ? e.cause : e;
    const denied = permissionViolation(e);
    if (denied) return new CommandError("PERMISSION_DENIED", `permission denied: publish on ${denied.subject}`, { cause: e });
    if (cause instanceof NoRespondersError) return new CommandError("COMMAND_NO_LISTENER", `nobody serves the controls of session ${sessionId}`, { cause: e });
    if (cause instanceof TimeoutError) return new CommandError("COMMAND_TIMEOUT", `the session's actor did not reply within ${timeoutMs} ms; the command may have taken effect`, { cause: e });
    return new CommandError("COMMAND_FAILED", `the command failed: ${(e as Error).message}`, { cause: e });
  }
}

function settle<R extends { status: "ok" } | ControlRefusal, T>(decode: () => R, ok: (r: Extract<R, { status: "ok" }>) => T): T | { ok: false; error: CommandError } {
  let reply: R;
  try {
    reply = decode();
  } catch (e) {
    return { ok: false, error: e as CommandError };
  }
  if (reply.status === "refused") return { ok: false, error: new CommandError(reply.code, reply.message) };
  return ok(reply as Extract<R, { status: "ok" }>);
}
