/**
 * The one module that builds and parses NATS subjects. Nothing else concatenates
 * subject strings.
 *
 *   enduring   {ns}.journal.{sessionId}.{loopId|_}.{family}.{Type}
 *   ephemeral  {ns}.live.{sessionId}.{loopId|_}.{family}.{Type}
 *   feed       {ns}.feed.{sessionId}.{loopId|_}.{family}.{Type}   (the stream republishes the journal)
 *   commands   {ns}.cmd.{sessionId}.{loopId}.{command}
 *              {ns}.cmd.{sessionId}._.{command}                 (session controls: input, interrupt)
 *   parked     {ns}.parked.{durable}.{held|replay}.{journalSeq}
 *
 * A namespace whose journal is split over S > 1 streams (shards, src/streams/shards.ts)
 * stores shard k's events on `{ns}.journal-{k}-of-{S}.…` instead of `{ns}.journal.…`: the
 * count is in the token, so a publisher or reader that assumes another layout addresses
 * subjects no stream captures and is refused (no responders, stream not found) instead of
 * writing a session into the wrong shard. Feed, live and command subjects have no shard.
 *
 * `_` stands for "no loop" (session-scoped events, session-resolved gates). Ids are
 * canonical UUIDs, so no token can smuggle `.`, `*`, `>` or whitespace; the journal and
 * live roots are disjoint, so the stream over `{ns}.journal.>` never captures a preview.
 */
import { z } from "zod";
import { SubjectError } from "../errors.js";
import { idProblem } from "../events/ids.js";
import { FAMILY, TYPE } from "../events/registry.js";

/** `feed` is written by the server only: the events stream republishes each stored event there. */
export type Channel = "journal" | "live" | "feed";

/**
 * One journal shard of a namespace: shard `index` of `count`. A count of 1 is the layout of
 * a namespace that was never split (`{ns}.journal.…`); every journal subject function takes
 * one and defaults to it.
 */
export interface JournalShard {
  readonly index: number;
  readonly count: number;
}

/** The one shard of a namespace that is not split. */
export const UNSHARDED: JournalShard = Object.freeze({ index: 0, count: 1 });

const SHARD_TOKEN = /^journal-(\d{1,4})-of-(\d{1,4})$/;

/** The channel token of a shard's journal subjects: `journal`, or `journal-{k}-of-{S}`. */
export function journalToken(shard: JournalShard = UNSHARDED): string {
  return shard.count === 1 ? "journal" : `journal-${shard.index}-of-${shard.count}`;
}

/** The shard a journal channel token names, or undefined for a token that is none. */
export function shardOfToken(token: string): JournalShard | undefined {
  if (token === "journal") return UNSHARDED;
  const m = SHARD_TOKEN.exec(token);
  if (!m) return undefined;
  const index = Number(m[1]);
  const count = Number(m[2]);
  // One spelling per shard: no leading zeros, index below a count above 1.
  if (String(index) !== m[1] || String(count) !== m[2] || count < 2 || index >= count) return undefined;
  return { index, count };
}

/** The journal shard an event subject of namespace `ns` names; undefined for a subject that is none. */
export function journalShardOf(ns: string, subject: string): JournalShard | undefined {
  const prefix = `${ns}.`;
  if (!subject.startsWith(prefix)) return undefined;
  const end = subject.indexOf(".", prefix.length);
  return end < 0 ? undefined : shardOfToken(subject.slice(prefix.length, end));
}

/** The subject root of a shard's journal: `{ns}.journal` or `{ns}.journal-{k}-of-{S}`. */
export function journalRoot(ns: string, shard: JournalShard = UNSHARDED): string {
  return `${checkNamespace(ns)}.${journalToken(shard)}`;
}

/** The token that stands for "no loop". */
export const NO_LOOP = "_";

// No `_` inside tokens: the stream name joins tokens with `_`, and must not collide.
const NAMESPACE = /^[A-Za-z0-9-]{1,64}(\.[A-Za-z0-9-]{1,64}){0,3}$/;
const COMMAND = /^[a-z][a-z0-9_]{0,31}$/;

/** Checks a namespace: one to four dot-separated tokens of `[A-Za-z0-9-]`. */
export function checkNamespace(ns: string): string {
  if (typeof ns !== "string" || !NAMESPACE.test(ns)) {
    throw new SubjectError(`namespace ${JSON.stringify(ns)} must be 1-4 dot-separated tokens of [A-Za-z0-9-]`);
  }
  return ns;
}

/** The events stream's name for a namespace: `jetloop` → `jetloop_journal`. */
export function defaultStreamName(namespace: string): string {
  return `${checkNamespace(namespace).replaceAll(".", "_")}_journal`;
}

/** The most shards a namespace may have: each is a stream (a Raft group on a cluster). */
export const MAX_SHARDS = 64;

function id(kind: string, value: unknown): string {
  const problem = idProblem(value);
  if (problem) throw new SubjectError(`${kind} ${JSON.stringify(value)} ${problem}`);
  return value as string;
}

function token(kind: string, pattern: RegExp, value: unknown): string {
  if (typeof value !== "string" || !pattern.test(value)) throw new SubjectError(`${kind} ${JSON.stringify(value)} is not a valid subject token`);
  return value;
}

function channelToken(channel: unknown): Channel {
  if (channel !== "journal" && channel !== "live" && channel !== "feed") throw new SubjectError(`channel ${JSON.stringify(channel)} is not journal, live or feed`);
  return channel;
}

/** What an event's subject says: session, loop, family and type. */
export interface SubjectAddress {
  readonly sessionId: string;
  /** Absent for events with no loop. */
  readonly loopId?: string | undefined;
  readonly family: string;
  readonly type: string;
}

/** The subject an event is published on; a journal subject in `shard` (the session's). */
export function eventSubject(ns: string, channel: Channel, a: SubjectAddress, shard: JournalShard = UNSHARDED): string {
  checkNamespace(ns);
  channelToken(channel);
  id("session id", a.sessionId);
  if (a.loopId !== undefined) id("loop id", a.loopId);
  token("family", FAMILY, a.family);
  token("event type", TYPE, a.type);
  return validEventSubject(ns, channel, a, shard);
}

/**
 * `eventSubject` without its checks, for the publish and delivery hot paths, where every
 * part is known good already: the bus checked its namespace, the event's schema its ids,
 * the registry its family and type.
 */
export function validEventSubject(ns: string, channel: Channel, a: SubjectAddress, shard: JournalShard = UNSHARDED): string {
  return `${ns}.${channel === "journal" ? journalToken(shard) : channel}.${a.sessionId}.${a.loopId ?? NO_LOOP}.${a.family}.${a.type}`;
}

/** A subject read back into its parts (`parseEventSubject`): channel, shard, session, loop, family and type. */
export interface ParsedSubject extends SubjectAddress {
  readonly channel: Channel;
  /** The journal shard its channel token names; UNSHARDED for feed and live subjects. */
  readonly shard: JournalShard;
}

/** Parses an event subject of namespace `ns`; throws SubjectError for anything else. */
export function parseEventSubject(ns: string, subject: string): ParsedSubject {
  const prefix = `${checkNamespace(ns)}.`;
  if (!subject.startsWith(prefix)) throw new SubjectError(`subject ${JSON.stringify(subject)} is not in namespace ${ns}`);
  const parts = subject.slice(prefix.length).split(".");
  if (parts.length !== 5) throw new SubjectError(`subject ${JSON.stringify(subject)} is not an event subject`);
  const [channelText, sessionId, loop, family, type] = parts as [string, string, string, string, string];
  const shard = channelText === "live" || channelText === "feed" ? UNSHARDED : shardOfToken(channelText);
  if (!shard) throw new SubjectError(`subject ${JSON.stringify(subject)} is not an event subject`);
  const channel: Channel = channelText === "live" || channelText === "feed" ? channelText : "journal";
  return {
    channel,
    shard,
    sessionId: id("session id", sessionId),
    loopId: loop === NO_LOOP ? undefined : id("loop id", loop),
    family: token("family", FAMILY, family),
    type: token("event type", TYPE, type),
  };
}

/** The subjects a shard's events stream captures: its journal root only. */
export function streamSubjects(ns: string, shard: JournalShard = UNSHARDED): string[] {
  return [`${journalRoot(ns, shard)}.>`];
}

/**
 * Where a shard's events stream republishes what it stores (`streams/events.json` declares
 * it): every shard into the one feed, so a live viewer of a session never names a shard.
 */
export function feedRepublish(ns: string, shard: JournalShard = UNSHARDED): { src: string; dest: string } {
  return { src: `${journalRoot(ns, shard)}.>`, dest: `${ns}.feed.>` };
}

/**
 * The feed subject (or filter) of a journal subject (or filter) of `shard`, and back: the
 * two spaces differ only in the channel token, so a filter maps token for token.
 */
export function switchChannel(ns: string, subject: string, from: "journal" | "feed", to: "journal" | "feed", shard: JournalShard = UNSHARDED): string {
  const token = (c: "journal" | "feed") => (c === "journal" ? journalToken(shard) : c);
  const prefix = `${ns}.${token(from)}.`;
  if (!subject.startsWith(prefix)) throw new SubjectError(`subject ${JSON.stringify(subject)} is not a ${token(from)} subject of namespace ${ns}`);
  return `${ns}.${token(to)}.${subject.slice(prefix.length)}`;
}

/** The advisory the server sends when the events stream elects a leader. */
export function streamLeaderElectedSubject(stream: string): string {
  return `$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.${stream}`;
}

/** The API request that makes a stream's leader step down (nats-server 2.11+ takes a preferred successor). */
export function streamLeaderStepdownSubject(stream: string): string {
  return `$JS.API.STREAM.LEADER.STEPDOWN.${stream}`;
}

/** Every journal subject of one session, in its shard: the scope of fencing (last subject sequence). */
export function sessionJournalSubject(ns: string, sessionId: string, shard: JournalShard = UNSHARDED): string {
  return `${journalRoot(ns, shard)}.${id("session id", sessionId)}.>`;
}

/** What a filter subject selects; an omitted part is a wildcard. */
export interface SubjectSelector {
  readonly sessionId?: string | undefined;
  /** A loop id, NO_LOOP for loop-less events, or omitted for every loop. */
  readonly loopId?: string | undefined;
  readonly family?: string | undefined;
  readonly type?: string | undefined;
}

/** One filter subject (a journal one in `shard`); wildcards where the selector leaves a part open. */
export function filterSubject(ns: string, channel: Channel, s: SubjectSelector, shard: JournalShard = UNSHARDED): string {
  const session = s.sessionId === undefined ? "*" : id("session id", s.sessionId);
  const loop = s.loopId === undefined ? "*" : s.loopId === NO_LOOP ? NO_LOOP : id("loop id", s.loopId);
  const family = s.family === undefined ? "*" : token("family", FAMILY, s.family);
  const type = s.type === undefined ? "*" : token("event type", TYPE, s.type);
  if (s.type !== undefined && s.family === undefined) throw new SubjectError("a type filter needs its family");
  const root = channelToken(channel) === "journal" ? journalRoot(ns, shard) : `${checkNamespace(ns)}.${channel}`;
  if (family === "*" && type === "*") return `${root}.${session}.${loop}.>`;
  return `${root}.${session}.${loop}.${family}.${type}`;
}

/** The subject a loop actor serves `command` on. */
export function commandSubject(ns: string, sessionId: string, loopId: string, command: string): string {
  return `${checkNamespace(ns)}.cmd.${id("session id", sessionId)}.${id("loop id", loopId)}.${token("command", COMMAND, command)}`;
}

/** The subject a session's controls (input, interrupt) are served on: no loop, the session's actor routes them. */
export function sessionCommandSubject(ns: string, sessionId: string, command: string): string {
  return `${checkNamespace(ns)}.cmd.${id("session id", sessionId)}.${NO_LOOP}.${token("command", COMMAND, command)}`;
}

/** A durable consumer name: also a subject token of the parked store. */
export const DURABLE = /^[A-Za-z0-9_-]{1,64}$/;
/** The one schema of a durable consumer name, for every option that takes one. */
export const durableNameSchema = z.string().regex(DURABLE, "must be 1-64 characters of [A-Za-z0-9_-]");

/**
 * Where a parked entry waits: `held` until an operator replays it, `replay` while it is
 * on its way back to its durable's handlers.
 */
export type ParkedState = "held" | "replay";

/** The subjects the parked store captures. */
export function parkedStreamSubjects(ns: string): string[] {
  return [`${checkNamespace(ns)}.parked.>`];
}

/**
 * The subject of one parked entry: one per durable, state, shard and journal sequence. A
 * journal sequence is a shard's stream sequence, so an entry of a namespace split in S > 1
 * shards names its shard (`….{state}.journal-{k}-of-{S}.{seq}`); one never split keeps
 * `….{state}.{seq}`, exactly as before shards.
 */
export function parkedSubject(ns: string, durable: string, state: ParkedState, journalSeq: number, shard: JournalShard = UNSHARDED): string {
  if (!Number.isSafeInteger(journalSeq) || journalSeq < 1) throw new SubjectError(`journal sequence ${journalSeq} is not a positive integer`);
  return `${parkedFilter(ns, durable, state).slice(0, -1)}${shard.count === 1 ? "" : `${journalToken(shard)}.`}${journalSeq}`;
}

/**
 * Every parked entry of one durable (in one state, or both), or of every durable; with
 * `shard`, only that shard's (the one shard of a namespace never split: `….{state}.*`).
 */
export function parkedFilter(ns: string, durable?: string, state?: ParkedState, shard?: JournalShard): string {
  const d = durable === undefined ? "*" : token("durable name", DURABLE, durable);
  if (state !== undefined && state !== "held" && state !== "replay") throw new SubjectError(`parked state ${JSON.stringify(state)} is not held or replay`);
  const rest = shard === undefined ? ">" : shard.count === 1 ? "*" : `${journalToken(shard)}.*`;
  return `${checkNamespace(ns)}.parked.${d}.${state ?? "*"}.${rest}`;
}

/**
 * The replay consumer (on the parked store) of a plain durable of shard `shard` of a
 * namespace split in S > 1: `{durable}_journal-{k}-of-{S}`. Durables of one name on two
 * shards are two consumers, each replaying its own shard's entries; a durable of a
 * namespace never split, or a group's partition (which reads every shard), keeps its name.
 */
export function replayConsumerName(durable: string, shard: JournalShard): string {
  return shard.count === 1 ? durable : `${token("durable name", DURABLE, durable)}_${journalToken(shard)}`;
}

/** The durable, state, shard and journal sequence of a parked subject of namespace `ns`. */
export function parseParkedSubject(ns: string, subject: string): { durable: string; state: ParkedState; shard: JournalShard; journalSeq: number } {
  const prefix = `${checkNamespace(ns)}.parked.`;
  const parts = subject.startsWith(prefix) ? subject.slice(prefix.length).split(".") : [];
  const [durable, state] = parts;
  const shard = parts.length === 3 ? UNSHARDED : parts.length === 4 ? shardOfToken(parts[2]!) : undefined;
  const seq = parts[parts.length - 1];
  const journalSeq = Number(seq);
  // One spelling per entry: a decimal without leading zeros, a shard token of S > 1.
  if (!shard || (parts.length === 4 && shard.count === 1) || !DURABLE.test(durable!) || (state !== "held" && state !== "replay") || !Number.isSafeInteger(journalSeq) || journalSeq < 1 || String(journalSeq) !== seq) {
    throw new SubjectError(`subject ${JSON.stringify(subject)} is not a parked subject of namespace ${ns}`);
  }
  return { durable: durable!, state, shard, journalSeq };
}

/**
 * The shard a journal subject (or any subject on a journal root) of `ns` is in, read from
 * its channel token alone (a poison message's other tokens may be unreadable); undefined
 * for a subject on no journal root.
 */
export function shardOfJournalSubject(ns: string, subject: string): JournalShard | undefined {
  const prefix = `${ns}.`;
  if (!subject.startsWith(prefix)) return undefined;
  const dot = subject.indexOf(".", prefix.length);
  return dot < 0 ? undefined : shardOfToken(subject.slice(prefix.length, dot));
}

/** The prefix every subject of one channel of a namespace (a journal one: of `shard`) starts with. */
export function channelPrefix(ns: string, channel: Channel, shard: JournalShard = UNSHARDED): string {
  return `${ns}.${channel === "journal" ? journalToken(shard) : channel}.`;
}

/**
 * The partitioned stream (partitioned durable groups, src/group/) stores a copy
 * of the journal on `{ns}.partition.{p}.{session}.…`: the journal subject with the channel
 * token replaced by `partition` and the session's partition. The server maps it (a subject
 * transform on the stream's source of each shard, `partitionTransform`), so the journal
 * stays as it is. The copy names no shard: the session's shard is computed from its id.
 */
export function partitionTransform(ns: string, partitions: number, shard: JournalShard = UNSHARDED): { src: string; dest: string } {
  return { src: `${journalRoot(ns, shard)}.*.>`, dest: `${ns}.partition.{{partition(${partitions},1)}}.{{wildcard(1)}}.>` };
}

/** One partition's subjects, or those of a journal filter (of any shard) within it. */
export function partitionFilter(ns: string, partition: number, journalFilter?: string): string {
  const rest = journalFilter === undefined ? ">" : journalRest(ns, journalFilter);
  return `${checkNamespace(ns)}.partition.${partition}.${rest}`;
}

/**
 * The journal subject a partitioned copy was made from, or undefined for another subject.
 * The copy names no shard: `shardOf` gives its session's (streams/shards.ts
 * `shardOfSession`, the partition hash of the session's id) on a namespace split in shards,
 * so there a copy whose session token is no id has no journal subject. Without it, the
 * namespace was never split.
 */
export function journalSubjectOfPartitioned(ns: string, subject: string, shardOf?: (sessionId: string) => JournalShard): { partition: number; subject: string; shard: JournalShard } | undefined {
  const prefix = `${ns}.partition.`;
  if (!subject.startsWith(prefix)) return undefined;
  const dot = subject.indexOf(".", prefix.length);
  const partition = Number(subject.slice(prefix.length, dot));
  if (dot < 0 || !Number.isSafeInteger(partition) || partition < 0) return undefined;
  const rest = subject.slice(dot + 1);
  if (shardOf === undefined) return { partition, subject: `${ns}.journal.${rest}`, shard: UNSHARDED };
  const session = rest.slice(0, Math.max(0, rest.indexOf(".")));
  if (idProblem(session) !== undefined) return undefined;
  const shard = shardOf(session);
  return { partition, subject: `${journalRoot(ns, shard)}.${rest}`, shard };
}

function journalRest(ns: string, subject: string): string {
  const shard = shardOfJournalSubject(ns, subject);
  if (!shard) throw new SubjectError(`subject ${JSON.stringify(subject)} is not a journal subject of namespace ${ns}`);
  return subject.slice(`${ns}.${journalToken(shard)}.`.length);
}

/** The subjects of the group membership store: one lease per group member. */
export function memberSubject(ns: string, group: string, member?: string): string {
  return `${checkNamespace(ns)}.members.${token("durable name", DURABLE, group)}.${member === undefined ? "*" : token("member id", DURABLE, member)}`;
}

/** Whether a NATS subject filter (tokens, `*` one token, `>` one or more at the end) selects `subject`. */
export function filterSelects(filter: string, subject: string): boolean {
  const f = filter.split(".");
  const s = subject.split(".");
  for (let i = 0; i < f.length; i++) {
    if (f[i] === ">") return s.length > i;
    if (i >= s.length || (f[i] !== "*" && f[i] !== s[i])) return false;
  }
  return f.length === s.length;
}
