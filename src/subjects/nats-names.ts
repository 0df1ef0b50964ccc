/**
 * The NATS names jetloop reads and writes beside its subjects: header names and JetStream
 * API error codes. NATS.js's enums are the source; this adds only the codes they lack, so
 * each name and code is spelled once.
 */
import { JetStreamApiCodes } from "@nats-io/jetstream";

export { PubHeaders, RepublishHeaders } from "@nats-io/jetstream";

/** JetStream API error codes: NATS.js's, and those a publish ack carries that it does not name. */
export const ApiCodes = {
  ...JetStreamApiCodes,
  /** The message is larger than the stream's max_msg_size. */
  MessageTooLarge: 10054,
  /** `Nats-Expected-Stream` names another stream than the one that captured the subject. */
  StreamMismatch: 10060,
} as const;
