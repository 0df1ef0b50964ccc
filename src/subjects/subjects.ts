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

export interface SubjectAddress {
  readonly sessionId: string;
  /** Absent for events with no loop. */
  readonly loopId?: string | undefined;
  readonly family: string;
  readonly type: string;
}

/** The subject an event is published on. */
export function eventSubject(ns: string, channel: Channel, a: SubjectAddress): string {
  checkNamespace(ns);
  channelToken(channel);
  id("session id", a.sessionId);
  if (a.loopId !== undefined) id("loop id", a.loopId);
  token("family", FAMILY, a.family);
  token("event type", TYPE, a.type);
  return validEventSubject(ns, channel, a);
}

/**
 * `eventSubject` without its checks, for the publish and delivery hot paths, where every
 * part is known good already: the bus checked its namespace, the event's schema its ids,
 * the registry its family and type.
 */
export function validEventSubject(ns: string, channel: Channel, a: SubjectAddress): string {
  return `${ns}.${channel}.${a.sessionId}.${a.loopId ?? NO_LOOP}.${a.family}.${a.type}`;
}

export interface ParsedSubject extends SubjectAddress {
  readonly channel: Channel;
}

/** Parses an event subject of namespace `ns`; throws SubjectError for anything else. */
export function parseEventSubject(ns: string, subject: string): ParsedSubject {
  const prefix = `${checkNamespace(ns)}.`;
  if (!subject.startsWith(prefix)) throw new SubjectError(`subject ${JSON.stringify(subject)} is not in namespace ${ns}`);
  const parts = subject.slice(prefix.length).split(".");
  if (parts.length !== 5) throw new SubjectError(`subject ${JSON.stringify(subject)} is not an event subject`);
  const [channel, sessionId, loop, family, type] = parts as [string, string, string, string, string];
  if (channel !== "journal" && channel !== "live" && channel !== "feed") throw new SubjectError(`subject ${JSON.stringify(subject)} is not an event subject`);
  return {
    channel,
    sessionId: id("session id", sessionId),
    loopId: loop === NO_LOOP ? undefined : id("loop id", loop),
    family: token("family", FAMILY, family),
    type: token("event type", TYPE, type),
  };
}

/** The subjects the events stream captures: the journal root only. */
export function streamSubjects(ns: string): string[] {
  return [`${checkNamespace(ns)}.journal.>`];
}

/** Where the events stream republishes what it stores (`streams/events.json` declares it). */
export function feedRepublish(ns: string): { src: string; dest: string } {
  return { src: `${checkNamespace(ns)}.journal.>`, dest: `${ns}.feed.>` };
}

/**
 * The feed subject (or filter) of a journal subject (or filter), and back: the two
 * spaces differ only in the channel token, so a filter maps token for token.
 */
export function switchChannel(ns: string, subject: string, from: "journal" | "feed", to: "journal" | "feed"): string {
  const prefix = `${ns}.${from}.`;
  if (!subject.startsWith(prefix)) throw new SubjectError(`subject ${JSON.stringify(subject)} is not a ${from} subject of namespace ${ns}`);
  return `${ns}.${to}.${subject.slice(prefix.length)}`;
}

/** The advisory the server sends when the events stream elects a leader. */
export function streamLeaderElectedSubject(stream: string): string {
  return `$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.${stream}`;
}

/** Every journal subject of one session: the scope of fencing (last subject sequence). */
export function sessionJournalSubject(ns: string, sessionId: string): string {
  return `${checkNamespace(ns)}.journal.${id("session id", sessionId)}.>`;
}

/** What a filter subject selects; an omitted part is a wildcard. */
export interface SubjectSelector {
  readonly sessionId?: string | undefined;
  /** A loop id, NO_LOOP for loop-less events, or omitted for every loop. */
  readonly loopId?: string | undefined;
  readonly family?: string | undefined;
  readonly type?: string | undefined;
}

/** One filter subject; wildcards where the selector leaves a part open. */
export function filterSubject(ns: string, channel: Channel, s: SubjectSelector): string {
  const session = s.sessionId === undefined ? "*" : id("session id", s.sessionId);
  const loop = s.loopId === undefined ? "*" : s.loopId === NO_LOOP ? NO_LOOP : id("loop id", s.loopId);
  const family = s.family === undefined ? "*" : token("family", FAMILY, s.family);
  const type = s.type === undefined ? "*" : token("event type", TYPE, s.type);
  if (s.type !== undefined && s.family === undefined) throw new SubjectError("a type filter needs its family");
  if (family === "*" && type === "*") return `${checkNamespace(ns)}.${channelToken(channel)}.${session}.${loop}.>`;
  return `${checkNamespace(ns)}.${channelToken(channel)}.${session}.${loop}.${family}.${type}`;
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

/** The subject of one parked entry: one per durable, state and journal sequence. */
export function parkedSubject(ns: string, durable: string, state: ParkedState, journalSeq: number): string {
  if (!Number.isSafeInteger(journalSeq) || journalSeq < 1) throw new SubjectError(`journal sequence ${journalSeq} is not a positive integer`);
  return `${parkedFilter(ns, durable, state).slice(0, -1)}${journalSeq}`;
}

/** Every parked entry of one durable (in one state, or both), or of every durable. */
export function parkedFilter(ns: string, durable?: string, state?: ParkedState): string {
  const d = durable === undefined ? "*" : token("durable name", DURABLE, durable);
  if (state !== undefined && state !== "held" && state !== "replay") throw new SubjectError(`parked state ${JSON.stringify(state)} is not held or replay`);
  return `${checkNamespace(ns)}.parked.${d}.${state ?? "*"}.>`;
}

/** The durable and state of a parked subject of namespace `ns`. */
export function parseParkedSubject(ns: string, subject: string): { durable: string; state: ParkedState; journalSeq: number } {
  const prefix = `${checkNamespace(ns)}.parked.`;
  const parts = subject.startsWith(prefix) ? subject.slice(prefix.length).split(".") : [];
  const [durable, state, seq] = parts;
  const journalSeq = Number(seq);
  if (parts.length !== 3 || !DURABLE.test(durable!) || (state !== "held" && state !== "replay") || !Number.isSafeInteger(journalSeq) || journalSeq < 1) {
    throw new SubjectError(`subject ${JSON.stringify(subject)} is not a parked subject of namespace ${ns}`);
  }
  return { durable: durable!, state, journalSeq };
}

/** The prefix every subject of one channel of a namespace starts with: `{ns}.{channel}.`. */
export function channelPrefix(ns: string, channel: Channel): string {
  return `${ns}.${channel}.`;
}

/**
 * The partitioned stream (partitioned durable groups, src/subscribe/group/) stores a copy
 * of the journal on `{ns}.partition.{p}.{session}.…`: the journal subject with the channel
 * token replaced by `partition` and the session's partition. The server maps it (a subject
 * transform on the stream's source, `partitionTransform`), so the journal stays as it is.
 */
export function partitionTransform(ns: string, partitions: number): { src: string; dest: string } {
  return { src: `${checkNamespace(ns)}.journal.*.>`, dest: `${ns}.partition.{{partition(${partitions},1)}}.{{wildcard(1)}}.>` };
}

/** One partition's subjects, or those of a journal filter within it. */
export function partitionFilter(ns: string, partition: number, journalFilter?: string): string {
  const rest = journalFilter === undefined ? ">" : switchChannelRest(ns, journalFilter, "journal");
  return `${checkNamespace(ns)}.partition.${partition}.${rest}`;
}

/** The journal subject a partitioned copy was made from, or undefined for another subject. */
export function journalSubjectOfPartitioned(ns: string, subject: string): { partition: number; subject: string } | undefined {
  const prefix = `${ns}.partition.`;
  if (!subject.startsWith(prefix)) return undefined;
  const dot = subject.indexOf(".", prefix.length);
  const partition = Number(subject.slice(prefix.length, dot));
  if (dot < 0 || !Number.isSafeInteger(partition) || partition < 0) return undefined;
  return { partition, subject: `${ns}.journal.${subject.slice(dot + 1)}` };
}

function switchChannelRest(ns: string, subject: string, from: "journal"): string {
  const prefix = `${ns}.${from}.`;
  if (!subject.startsWith(prefix)) throw new SubjectError(`subject ${JSON.stringify(subject)} is not a ${from} subject of namespace ${ns}`);
  return subject.slice(prefix.length);
}

/** The subjects of the group membership store: one lease per group member. */
export function memberSubject(ns: string, group: string, member?: string): string {
  return `${checkNamespace(ns)}.members.${token("durable name", DURABLE, group)}.${member === undefined ? "*" : token("member id", DURABLE, member)}`;
}
