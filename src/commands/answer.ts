/** The subscriber's side of the answer path: answer a gate and get the outcome. */
import { NoRespondersError, RequestError, TimeoutError } from "@nats-io/transport-node";
import { permissionViolation } from "../journal/consumer-errors.js";
import type { CommandsContext } from "./context.js";
import { CommandError } from "../errors.js";
import { commandSubject } from "../subjects/subjects.js";
import { type AnswerOptions, parseAnswerOptions } from "./options.js";
import { ANSWER_COMMAND, answerCommand, type AnswerInput, type AnswerOutcome, encodeAnswer, outcomeOf } from "./protocol.js";
import { tracedRequest } from "../telemetry/index.js";

export type { AnswerOptions };

/**
 * Sends an answer to the loop actor of (sessionId, loopId). Resolves with the outcome
 * (the first one again for a repeated command id); rejects with CommandError:
 * COMMAND_NO_LISTENER, GATE_UNKNOWN, GATE_RESOLVED, COMMAND_INVALID, PERMISSION_DENIED or COMMAND_FAILED.
 */
export async function answerGate<E>(bus: CommandsContext<E>, sessionId: string, loopId: string, input: AnswerInput, options?: AnswerOptions): Promise<AnswerOutcome> {
  const { timeoutMs } = parseAnswerOptions(options);
  const command = answerCommand(input);
  const subject = commandSubject(bus.settings.namespace, sessionId, loopId, ANSWER_COMMAND);
  let data: Uint8Array;
  try {
    data = (await tracedRequest("gate.answer", subject, (headers) => bus.nc.request(subject, encodeAnswer(command), { timeout: timeoutMs, headers }))).data;
  } catch (e) {
    throw requestFailure(e, sessionId, loopId, timeoutMs);
  }
  return outcomeOf(data);
}

/** What a failed request means to the answerer: nobody listens, nobody replied in time, or the request failed. */
export function requestFailure(e: unknown, sessionId: string, loopId: string, timeoutMs: number): CommandError {
  const cause = e instanceof RequestError ? e.cause : e;
  const denied = permissionViolation(e);
  if (denied) return new CommandError("PERMISSION_DENIED", `permission denied: publish on ${denied.subject}`, { cause: e });
  if (cause instanceof NoRespondersError) {
    return new CommandError("COMMAND_NO_LISTENER", `no loop actor is listening for session ${sessionId} loop ${loopId}`, { cause: e });
  }
  if (cause instanceof TimeoutError) return new CommandError("COMMAND_FAILED", `the loop actor did not reply within ${timeoutMs} ms`, { cause: e });
  return new CommandError("COMMAND_FAILED", `answer failed: ${(e as Error).message}`, { cause: e });
}
