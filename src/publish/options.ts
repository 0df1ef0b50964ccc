/**
 * The options of `publish`, `publishAll` and `storedEvents`: strict shapes parsed by the
 * one options path (src/options.ts). `publish` is the hot path: no options, no parse.
 */
import { z } from "zod";
import { noOptions, parseOptions } from "../options.js";

/** How `publish` appends an event (`bus.publish(event, options)`). */
export interface PublishOptions {
  /**
   * Fencing: append only if the session's last journal sequence is this (0: the session
   * has no events yet). Losing the race is PublishConflictError. Needs nats-server 2.11+.
   * Enduring events only. Default: no fence.
   */
  readonly expectedLastSeq?: number | undefined;
  /**
   * Previews only: send without waiting to learn whether the server refused it. By default
   * a preview waits for a round trip to the server and a refusal by the subject permissions
   * rejects with PermissionDeniedError; fire-and-forget resolves at once with
   * `unconfirmed: true`, and a refusal is only logged. Default false.
   */
  readonly fireAndForget?: boolean | undefined;
}

/** Where `storedEvents` (and `publishAll`'s `resume`) read the journal from. */
export interface ReconcileOptions {
  /**
   * Read the journal from this time (the server's clock). No later than the first attempt
   * to publish any of the events: an event stored before it is not found. Required.
   */
  readonly since: Date;
}

/** How `publishAll` appends a batch of events. */
export interface PublishAllOptions extends PublishOptions {
  /**
   * Resuming a batch that may be partly stored (the producer crashed, or appends failed
   * with PublishTimeoutError): the journal is read for the batch's sessions from
   * `since` (no later than the first attempt to publish any of them), and only the events it
   * does not hold are published; the others resolve as `duplicate: true` with their
   * journal sequence. Safe at any delay once the earlier attempt has ended (its process
   * is gone or its appends have settled): an append of it still in flight could land
   * after the read. Default: every event is published.
   */
  readonly resume?: ReconcileOptions | undefined;
  /**
   * Commit the events together in one atomic batch (nats-server 2.12+, a stream
   * provisioned with `allow_atomic`): all stored or none (a read started during the
   * commit can see part of it: docs/scale.md, "Readers during a commit"). Enduring
   * events only, at most 1,000 (more is BatchTooLargeError; never split). With
   * `expectedLastSeq`, all of one session, fenced as a whole. Default false: each event
   * is appended on its own.
   */
  readonly atomic?: boolean | undefined;
}

// The checking side of the interfaces above (documented there; test/unit/public-types.test.ts
// keeps each shape's input type and its interface the same).
export const publishShape = z.strictObject({
  expectedLastSeq: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER, "must be a non-negative integer").optional(),
  fireAndForget: z.boolean("must be a boolean").optional(),
});

export const reconcileShape = z.strictObject({
  since: z.date("must be a valid Date: the time of the first attempt to publish these events, or earlier"),
});

export const publishAllShape = z.strictObject({
  ...publishShape.shape,
  resume: reconcileShape.optional(),
  atomic: z.boolean("must be a boolean").optional(),
});

const NO_OPTIONS: PublishOptions = Object.freeze({});

/** `publish`'s options; none (the usual case) costs no parse. */
export function parsePublishOptions(options: PublishOptions | undefined): PublishOptions {
  return noOptions(options) ? NO_OPTIONS : parseOptions(publishShape, options);
}

export function parseReconcileOptions(options: ReconcileOptions | undefined): ReconcileOptions {
  return parseOptions(reconcileShape, options);
}

export function parsePublishAllOptions(options: PublishAllOptions | undefined): PublishAllOptions {
  return parseOptions(publishAllShape, options);
}
