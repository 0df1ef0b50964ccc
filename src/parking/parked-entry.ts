/**
 * A parked entry on the wire: the original message's bytes as the payload, and what an
 * operator needs to judge it in headers. Payloads are never copied into headers, logs or
 * error messages: an entry may be parked precisely because its bytes carry something
 * that must not leak.
 */
import { headers, type MsgHdrs } from "@nats-io/transport-node";
import { parsePartitionDurable } from "../partition/partition-durable.js";
import { SubjectError } from "../errors.js";
import { type JournalShard, type ParkedState, parseParkedSubject, shardOfJournalSubject } from "../subjects/subjects.js";

/** Why a delivery was parked. */
export type ParkReason = "max_deliver" | "terminated" | "poison";

const REASONS: readonly ParkReason[] = ["max_deliver", "terminated", "poison"];

/** What is kept of a delivery that is parked. */
export interface ParkInput {
  readonly durable: string;
  readonly journalSeq: number;
  /** The subject the original arrived on. */
  readonly subject: string;
  /** The original message's bytes, unchanged. */
  readonly data: Uint8Array;
  /** Deliveries of the original so far (the parking one included). */
  readonly deliveryCount: number;
  readonly reason: ParkReason;
  /** The last error's stable code, e.g. `EVENT_DECODE`, `HANDLER_FAILED`. */
  readonly errorCode: string;
  /** The last error's message, capped and on one line. */
  readonly errorMessage: string;
  /** Set when a partitioned group's partition parked it: the group and partition `durable` (`{group}_p{n}`) stands for. */
  readonly group?: { readonly name: string; readonly partition: number } | undefined;
}

/** A parked entry as the store holds it. */
export interface ParkedEntry extends ParkInput {
  /** `held` until replayed; `replay` while on its way back to the durable's handlers. */
  readonly state: ParkedState;
  /** The journal shard its journal sequence is of: its subject's (`index` 0 of 1 for a namespace never split). */
  readonly shard: JournalShard;
  readonly parkedAt: Date;
  /** The entry's sequence in the parked store. */
  readonly storeSeq: number;
}

const H = {
  subject: "Jetloop-Parked-Subject",
  seq: "Jetloop-Parked-Seq",
  durable: "Jetloop-Parked-Durable",
  deliveries: "Jetloop-Parked-Deliveries",
  reason: "Jetloop-Parked-Reason",
  code: "Jetloop-Parked-Error-Code",
  error: "Jetloop-Parked-Error",
  at: "Jetloop-Parked-At",
  group: "Jetloop-Parked-Group",
  partition: "Jetloop-Parked-Partition",
} as const;

/** Longest error message kept: enough to diagnose, too short to carry a payload. */
export const MAX_ERROR_CHARS = 512;

/** One line, capped: a header value cannot hold a line break. */
export function errorText(text: string): string {
  const line = text.replace(/[\r\n\t]+/g, " ").trim();
  return line.length > MAX_ERROR_CHARS ? `${line.slice(0, MAX_ERROR_CHARS - 1)}…` : line;
}

export function parkHeaders(p: ParkInput, at: Date): MsgHdrs {
  const h = headers();
  h.set(H.subject, p.subject);
  h.set(H.seq, String(p.journalSeq));
  h.set(H.durable, p.durable);
  h.set(H.deliveries, String(p.deliveryCount));
  h.set(H.reason, p.reason);
  h.set(H.code, errorText(p.errorCode));
  h.set(H.error, errorText(p.errorMessage));
  h.set(H.at, at.toISOString());
  if (p.group) {
    h.set(H.group, p.group.name);
    h.set(H.partition, String(p.group.partition));
  }
  return h;
}

/**
 * Reads the entry kept on parked subject `subject` of namespace `ns`; undefined for a
 * message that is not one (written by someone else), or whose headers name another
 * durable, journal sequence or shard than the subject it is kept under: it would be read
 * two ways (a shard's sequence taken for another shard's is another event).
 */
export function readParkedAt(ns: string, subject: string, storeSeq: number, h: MsgHdrs | undefined, data: Uint8Array): ParkedEntry | undefined {
  let at: ReturnType<typeof parseParkedSubject>;
  try {
    at = parseParkedSubject(ns, subject);
  } catch (e) {
    if (e instanceof SubjectError) return undefined;
    throw e;
  }
  const e = readParked(at.state, storeSeq, h, data);
  if (!e || e.durable !== at.durable || e.journalSeq !== at.journalSeq) return undefined;
  // An entry of a namespace never split was read without its subject's shard before shards: kept so.
  const shard = shardOfJournalSubject(ns, e.subject) ?? (at.shard.count === 1 ? at.shard : undefined);
  if (!shard || shard.index !== at.shard.index || shard.count !== at.shard.count) return undefined;
  return { ...e, shard: at.shard };
}

/** Reads an entry's headers back (its shard unknown: `readParkedAt` checks them against its subject); undefined for a message that is not one. */
export function readParked(state: ParkedState, storeSeq: number, h: MsgHdrs | undefined, data: Uint8Array): Omit<ParkedEntry, "shard"> | undefined {
  if (!h) return undefined;
  const journalSeq = Number(h.get(H.seq));
  const deliveryCount = Number(h.get(H.deliveries));
  const reason = h.get(H.reason) as ParkReason;
  const parkedAt = new Date(h.get(H.at));
  if (!Number.isSafeInteger(journalSeq) || journalSeq < 1 || !Number.isSafeInteger(deliveryCount) || !REASONS.includes(reason) || Number.isNaN(parkedAt.getTime())) {
    return undefined;
  }
  // Both group headers or neither: half of them is not an entry this library wrote.
  const groupName = h.get(H.group);
  const partitionText = h.get(H.partition);
  const partition = Number(partitionText);
  if ((groupName === "") !== (partitionText === "") || (partitionText !== "" && (!/^\d{1,3}$/.test(partitionText) || !Number.isSafeInteger(partition)))) return undefined;
  // And the durable it is kept under is that group's partition: an entry whose headers
  // name another partition (or group) than its durable would be read two ways.
  if (groupName !== "") {
    const named = parsePartitionDurable(h.get(H.durable));
    if (named?.group !== groupName || named.partition !== partition) return undefined;
  }
  return {
    durable: h.get(H.durable),
    journalSeq,
    subject: h.get(H.subject),
    data,
    deliveryCount,
    reason,
    errorCode: h.get(H.code),
    errorMessage: h.get(H.error),
    ...(groupName === "" ? {} : { group: { name: groupName, partition } }),
    state,
    parkedAt,
    storeSeq,
  };
}

/** The headers of an entry, for moving it to another state unchanged. */
export function entryHeaders(e: Omit<ParkedEntry, "shard">): MsgHdrs {
  return parkHeaders(e, e.parkedAt);
}
