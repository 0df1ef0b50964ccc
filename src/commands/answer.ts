/** The subscriber's side of the answer path: answer a gate and get the outcome. */
import { NoRespondersError, RequestError, TimeoutError } from "@nats-io/transport-node";
import type { BusContext } from "../bus-context.js";
import { CommandError } from "../errors.js";
import { newId } from "../events/ids.js";
import { commandSubject } from "../subjects/subjects.js";
import { ANSWER_COMMAND, type Answer, answerSchema, type AnswerInput, type AnswerOutcome, decodeReply, encodeAnswer } from "./protocol.js";

export interface AnswerOptions {
  /** How long to wait for the loop actor. Default 5000 ms. */
  readonly timeoutMs?: number;
}

/**
 * Sends an answer to the loop actor of (sessionId, loopId). Resolves with the outcome
 * (the first one again for a repeated command id); rejects with CommandError:
 * COMMAND_NO_LISTENER, GATE_UNKNOWN, GATE_RESOLVED, COMMAND_INVALID or COMMAND_FAILED.
 */
export async function answerGate<E>(bus: BusContext<E>, sessionId: string, loopId: string, input: AnswerInput, options: AnswerOptions = {}): Promise<AnswerOutcome> {
  const parsed = answerSchema.safeParse({ ...input, commandId: input.commandId ?? newId() });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new CommandError("COMMAND_INVALID", `${issue.path.join(".") || "answer"}: ${issue.message}`);
  }
  const command: Answer = parsed.data;
  const subject = commandSubject(bus.namespace, sessionId, loopId, ANSWER_COMMAND);
  let data: Uint8Array;
  try {
    data = (await bus.nc.request(subject, encodeAnswer(command), { timeout: options.timeoutMs ?? 5000 })).data;
  } catch (e) {
    const cause = e instanceof RequestError ? e.cause : e;
    if (cause instanceof NoRespondersError) {
      throw new CommandError("COMMAND_NO_LISTENER", `no loop actor is listening for session ${sessionId} loop ${loopId}`, { cause: e });
    }
    if (cause instanceof TimeoutError) throw new CommandError("COMMAND_FAILED", `the loop actor did not reply within ${options.timeoutMs ?? 5000} ms`, { cause: e });
    throw new CommandError("COMMAND_FAILED", `answer failed: ${(e as Error).message}`, { cause: e });
  }
  const reply = decodeReply(data);
  if (reply.status === "refused") throw new CommandError(reply.code, reply.message);
  return reply;
}
