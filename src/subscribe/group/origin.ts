/**
 * A partitioned copy's place in the journal. The server stamps every sourced message
 * with `Nats-Stream-Source: {stream} {seq} {filter} {transform}[ {subject} {hash}]`
 * (2.10 writes the first four, 2.11+ all six): the journal's stream name and sequence
 * come from it, the journal subject from the copy's own subject (the partition token
 * taken out). A copy that says it came from another stream is not the journal's.
 */
import type { JsMsg } from "@nats-io/jetstream";
import { journalSubjectOfPartitioned } from "../../subjects/subjects.js";
import type { JournalOrigin } from "../durable-source.js";

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

/** The origin of a partitioned copy of journal `journal` of namespace `ns`, in `partition`. */
export function partitionedOrigin(ns: string, journal: string, partition: number): JournalOrigin {
  return (m: JsMsg) => {
    const source = parseStreamSource(m.headers?.get(STREAM_SOURCE_HEADER) ?? "");
    const at = journalSubjectOfPartitioned(ns, m.subject);
    if (!source || source.stream !== journal || !at || at.partition !== partition) return undefined;
    return { journalSeq: source.seq, subject: at.subject };
  };
}
