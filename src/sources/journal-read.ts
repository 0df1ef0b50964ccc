/**
 * The journal read into deliveries: the one path replay and a feed subscription's history
 * and catch-up share. A range of journal subjects is read with an ordered consumer
 * (journal-range.ts); each message is decoded, validated and checked against its subject
 * (delivery.ts); a malformed one is reported and skipped (reportPoison), an internal one
 * skipped unless the filter asked for it.
 */
import { type Decoded, type Delivery, decodeMessage, hiddenFrom } from "./delivery.js";
import { type JournalRange, readWholeTurns } from "../journal/journal-range.js";
import { reportPoison, type SourceContext } from "./source.js";
import type { TurnUnheldError } from "../errors.js";

/** What a journal read needs: the shard and where its reads go, how to decode, where poison goes. */
export type JournalReader<E> = Pick<SourceContext<E>, "shard" | "journal" | "decode" | "log" | "report">;

/**
 * One journal message as a delivery; undefined when it is skipped (malformed and reported,
 * or internal). `decoded`: the message decoded already (the feed decodes once for all its
 * viewers, whose `includeInternal` may differ).
 */
export function journalDelivery<E>(
  reader: JournalReader<E>,
  journalSeq: number,
  subject: string,
  data: Uint8Array,
  decoded: Decoded<E> = decodeMessage(reader.decode, subject, data),
): Delivery<E> | undefined {
  if (!decoded.ok) {
    reportPoison(reader, journalSeq, subject, decoded.error);
    return undefined;
  }
  return hiddenFrom(reader.decode, decoded) ? undefined : { event: decoded.event, journalSeq, shard: reader.shard.index, subject, data };
}

/**
 * The deliveries of a journal range, in order; ends with the range, or with the end of a
 * turn the range ends inside (readWholeTurns; never past `limit`, a bound the user gave).
 * `what` names the read in errors.
 */
export async function* readDeliveries<E>(reader: JournalReader<E>, range: JournalRange, what: string, limit?: number): AsyncGenerator<Delivery<E>, void, undefined> {
  // A turn its headers claim the journal does not hold is poison like a malformed message.
  const unheld = (m: { seq: number; subject: string }, e: TurnUnheldError) => reportPoison(reader, m.seq, m.subject, e);
  for await (const m of readWholeTurns(reader.journal, range, what, limit, undefined, unheld)) {
    const d = journalDelivery(reader, m.seq, m.subject, m.data);
    if (d) yield d;
  }
}
