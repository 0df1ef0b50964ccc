/**
 * A partitioned copy's place in the journal. The server stamps every sourced message
 * with `Nats-Stream-Source: {stream} {seq} {filter} {transform}[ {subject} {hash}]`
 * (2.10 writes the first four, 2.11+ all six): the journal's stream name and sequence
 * come from it, the journal subject from the copy's own subject (the partition token
 * taken out, the session's shard token put in). A copy that says it came from another
 * stream than its session's shard is not the journal's.
 */
import type { JsMsg } from "@nats-io/jetstream";
import { shardOfSession } from "../streams/shards.js";
import { journalSubjectOfPartitioned } from "../subjects/subjects.js";
import type { JournalOrigin } from "../sources/durable-source.js";

export const STREAM_SOURCE_HEADER = "Nats-Stream-Source";

/** The journal stream and sequence a `Nats-Stream-Source` value names, or undefined. */
export function parseStreamSource(value: string): { stream: string; seq: number } | undefined {
  const [name, seqText] = value.split(" ", 2);
  if (!name || !seqText || !/^[1-9]\d*$/.test(seqText)) return undefined;
  const seq = Number(seqText);
  if (!Number.isSafeInteger(seq)) return undefined;
  // A source from another domain or account is named `stream:hash`.
  const colon = name.indexOf(":");
  return { stream: colon < 0 ? name : name.slice(0, colon), seq };
}

/**
 * The origin of a partitioned copy of namespace `ns` in `partition`, over the journal's
 * shard streams `journals` (index k: shard k's; one for a namespace never split). The copy's
 * session names its shard; the stream the header names must be that shard's, so a copy
 * that says it came from another shard (or stream) is not the journal's, and its sequence
 * is a sequence of the session's own shard.
 */
export function partitionedOrigin(ns: string, journals: readonly string[], partition: number): JournalOrigin {
  const split = journals.length > 1;
  return (m: JsMsg) => {
    const source = parseStreamSource(m.headers?.get(STREAM_SOURCE_HEADER) ?? "");
    const at = journalSubjectOfPartitioned(ns, m.subject, split ? (sessionId) => shardOfSession(sessionId, journals.length) : undefined);
    if (!source || !at || at.partition !== partition || source.stream !== journals[at.shard.index]) return undefined;
    return { journalSeq: source.seq, subject: at.subject };
  };
}
