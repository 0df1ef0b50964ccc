/**
 * The options of the command paths (answering a gate, input and interrupt, serving gates):
 * strict shapes parsed by the one options path (src/options.ts).
 */
import { z } from "zod";
import { parseOptions } from "../options.js";

/** How long to wait for the actor, in ms. Default 5000. */
const timeoutMs = z.number().int().min(1).max(2 ** 31 - 1).default(5000);

export const answerShape = z.strictObject({
  /** How long to wait for the loop actor. Default 5000 ms. */
  timeoutMs,
});

export const interruptShape = z.strictObject({
  /** Makes the command idempotent: the same id gets the first outcome. Default: a fresh id (each call is a new command). */
  commandId: z.string().optional(),
  /** How long to wait for the session's actor. Default 5000 ms. */
  timeoutMs,
});

export const controlShape = z.strictObject({
  ...interruptShape.shape,
  /**
   * What identifies the request under `commandId` (sha256, hex); another one under the same
   * id is IDEMPOTENCY_CONFLICT. Default: the digest of the command's blocks in the wire
   * form. The HTTP gateway passes the digest of the request body, as the Go runtime compares bodies.
   */
  fingerprint: z.string().optional(),
});

export const serveGatesShape = z.strictObject({
  /**
   * Before serving, close as `abandoned` the gates of this loop that an earlier actor
   * opened and never resolved (its process died). Refused (COMMAND_FAILED) when another
   * actor still answers on the loop's command subject. Default false.
   */
  closeOrphans: z.boolean("must be a boolean").default(false),
});

export type AnswerOptions = Readonly<z.input<typeof answerShape>>;
export type ControlOptions = Readonly<z.input<typeof controlShape>>;
export type InterruptOptions = Readonly<z.input<typeof interruptShape>>;
export type ServeGatesOptions = Readonly<z.input<typeof serveGatesShape>>;

export const parseAnswerOptions = (o: AnswerOptions | undefined) => parseOptions(answerShape, o);
export const parseControlOptions = (o: ControlOptions | undefined) => parseOptions(controlShape, o);
export const parseInterruptOptions = (o: InterruptOptions | undefined) => parseOptions(interruptShape, o);
export const parseServeGatesOptions = (o: ServeGatesOptions | undefined) => parseOptions(serveGatesShape, o);
