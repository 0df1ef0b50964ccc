/**
 * The NATS names jetloop reads and writes beside its subjects: header names and JetStream
 * API error codes. NATS.js's enums are the source; this adds only the codes they lack, so
 * each name and code is spelled once.
 */
import { JetStreamApiCodes } from "@nats-io/jetstream";

export { PubHeaders, RepublishHeaders } from "@nats-io/jetstream";

/** The headers of an atomic batch (ADR-50); NATS.js spells them only inside its batch publisher. */
export const BatchHeaders = {
  Id: "Nats-Batch-Id",
  Sequence: "Nats-Batch-Sequence",
  Commit: "Nats-Batch-Commit",
} as const;

/**
 * jetloop's own header on every message of its atomic batches: the batch's message count.
 * With the server-kept `Nats-Batch-Sequence` it says where a stored message's batch should
 * end (journal/turn-span.ts), so readers never end or begin inside a turn. Any writer can
 * set it: it is where a read looks, never a count it waits for (SECURITY.md).
 */
export const TurnHeaders = {
  Size: "Jetloop-Batch-Size",
} as const;

/** JetStream API error codes: NATS.js's, and those a publish ack carries that it does not name. */
export const ApiCodes = {
  ...JetStreamApiCodes,
  /** The message is larger than the stream's max_msg_size. */
  MessageTooLarge: 10054,
  /** `Nats-Expected-Stream` names another stream than the one that captured the subject. */
  StreamMismatch: 10060,
  /** An atomic batch's fence on a subject an earlier message of the batch already wrote. */
  StreamWrongLastSequenceConstant: 10164,
  /** An atomic batch the server did not see whole (a message lost, or too many batches open on the stream): nothing stored. */
  AtomicPublishIncomplete: 10176,
  /** The stream does not allow atomic batches (`allow_atomic` off). */
  AtomicPublishDisabled: 10174,
  /** More messages in an atomic batch than the server commits at once. */
  AtomicPublishTooLarge: 10199,
  /** An atomic batch holds a message id the duplicate window (or the batch itself) already has. */
  AtomicPublishDuplicateId: 10201,
} as const;
