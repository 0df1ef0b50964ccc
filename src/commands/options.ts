/**
 * The options of the command paths (answering a gate, input and interrupt, serving gates):
 * strict shapes parsed by the one options path (src/options.ts).
 */
import { z } from "zod";
import { parseOptions } from "../options.js";

/** How long to wait for the actor, in ms. Default 5000. */
const timeoutMs = z.number().int().min(1).max(2 ** 31 - 1).default(5000);

/** How `session.answer` waits for the loop's actor. */
export interface AnswerOptions {
  /** How long to wait for the loop actor, in ms. Default 5000. */
  readonly timeoutMs?: number | undefined;
}

/** How `session.interrupt` sends its command. */
export interface InterruptOptions {
  /** Makes the command idempotent: the same id gets the first outcome. Default: a fresh id (each call is a new command). */
  readonly commandId?: string | undefined;
  /** How long to wait for the session's actor, in ms. Default 5000. */
  readonly timeoutMs?: number | undefined;
}

/** How `session.submitInput` sends its command. */
export interface ControlOptions extends InterruptOptions {
  /**
   * What identifies the request under `commandId` (sha256, hex); another one under the same
   * id is IDEMPOTENCY_CONFLICT. Default: the digest of the command's blocks in the wire
   * form. The HTTP gateway passes the digest of the request body, as the Go runtime compares bodies.
   */
  readonly fingerprint?: string | undefined;
}

/** How `bus.serveGates` starts serving a loop's gates. */
export interface ServeGatesOptions {
  /**
   * Before serving, close as `abandoned` the gates of this loop that an earlier actor
   * opened and never resolved (its process died). Refused (COMMAND_FAILED) when another
   * actor still answers on the loop's command subject. Default false.
   */
  readonly closeOrphans?: boolean | undefined;
}

// The checking side of the interfaces above (documented there; test/unit/public-types.test.ts
// keeps each shape's input type and its interface the same).
export const answerShape = z.strictObject({ timeoutMs });

export const interruptShape = z.strictObject({ commandId: z.string().optional(), timeoutMs });

export const controlShape = z.strictObject({ ...interruptShape.shape, fingerprint: z.string().optional() });

export const serveGatesShape = z.strictObject({ closeOrphans: z.boolean("must be a boolean").default(false) });

export const parseAnswerOptions = (o: AnswerOptions | undefined) => parseOptions(answerShape, o);
export const parseControlOptions = (o: ControlOptions | undefined) => parseOptions(controlShape, o);
export const parseInterruptOptions = (o: InterruptOptions | undefined) => parseOptions(interruptShape, o);
export const parseServeGatesOptions = (o: ServeGatesOptions | undefined) => parseOptions(serveGatesShape, o);
