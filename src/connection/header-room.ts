/**
 * The header room of a journal append: a fact of what goes over the connection (max_payload
 * counts headers), which the streams' declared max_msg_size and the publisher both need;
 * it lives below both so that streams/ need not import publish/.
 */
import { newId } from "../events/ids.js";
import { BatchHeaders, PubHeaders, TurnHeaders } from "../subjects/nats-names.js";
import { type JournalShard, sessionJournalSubject, UNSHARDED } from "../subjects/subjects.js";
import { TRACE_HEADER_ROOM } from "../telemetry/index.js";

const { MsgIdHdr, ExpectedStreamHdr, ExpectedLastSubjectSequenceHdr, ExpectedLastSubjectSequenceSubjectHdr } = PubHeaders;

/** A safe integer's decimal digits at most: an expected last sequence. */
const MAX_SEQ_DIGITS = String(Number.MAX_SAFE_INTEGER).length;
/** A canonical UUID: every event id. */
const EVENT_ID_LENGTH = 36;
/** An atomic batch's id (a NUID) and its largest sequence (atomic-batch.ts). */
const BATCH_ID_LENGTH = 22;
const BATCH_SEQ_DIGITS = 4;

/**
 * The most bytes jetloop's headers add to a journal append of `namespace` on `stream`:
 * what max_payload and the stream's max_msg_size (both count headers) must hold beyond
 * the event's own bytes. The fence subject is the longest header value that varies; every
 * session id is a 36-character UUID. An atomic batch's four headers (the server's three and
 * jetloop's batch size) are counted too, so an event at the cap fits inside a batch as well.
 */
export function journalHeaderRoom(stream: string, namespace: string, shard: JournalShard = UNSHARDED): number {
  const fenceSubjectLength = sessionJournalSubject(namespace, newId(), shard).length;
  const line = (key: string, valueLength: number) => key.length + 2 + valueLength + 2;
  return (
    "NATS/1.0\r\n".length +
    line(MsgIdHdr, EVENT_ID_LENGTH) +
    line(ExpectedStreamHdr, stream.length) +
    line(ExpectedLastSubjectSequenceHdr, MAX_SEQ_DIGITS) +
    line(ExpectedLastSubjectSequenceSubjectHdr, fenceSubjectLength) +
    line(BatchHeaders.Id, BATCH_ID_LENGTH) +
    line(BatchHeaders.Sequence, BATCH_SEQ_DIGITS) +
    line(BatchHeaders.Commit, 1) +
    line(TurnHeaders.Size, BATCH_SEQ_DIGITS) +
    TRACE_HEADER_ROOM +
    2
  );
}
