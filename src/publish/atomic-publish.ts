/**
 * `publishAll(events, { atomic: true })`: a turn's events in one atomic batch
 * (atomic-batch.ts) with publish's idempotency rules. A batch the server refuses because it
 * holds ids the duplicate window already has was stored before (a retry after a lost
 * answer, or an earlier call): the journal is read for its sessions over the window, and
 * if every event is there they resolve as `duplicate: true` with their sequences; if only
 * some are, nothing of the batch was stored and the refusal names them.
 */
import { OptionsError, PublishError } from "../errors.js";
import { requireFeature } from "../subjects/server-features.js";
import { ApiCodes } from "../subjects/nats-names.js";
import { type JournalShard, UNSHARDED } from "../subjects/subjects.js";
import { type AtomicBatchWriter, checkAtomicBatchSize } from "./atomic-batch.js";
import type { PublishOptions } from "./options.js";
import type { Publisher, PublishResult } from "./publisher.js";
import type { StoredEvent } from "./reconcile.js";

/** Allowance for the producer's clock behind the server's when reading the window back. */
const CLOCK_SKEW_MS = 5000;

export interface AtomicPublishDeps<E> {
  readonly publisher: Publisher<E>;
  /** The batch writer of a shard's stream: a batch is committed by one stream. */
  batches(shard: JournalShard): AtomicBatchWriter;
  readonly serverVersion: string;
  /** Which of `events` the journal holds since `since` (reconcile.ts). */
  storedEvents(events: readonly E[], since: Date): Promise<Map<string, StoredEvent>>;
  /** The duplicate window in ms of a shard's stream (read from the server once). */
  duplicateWindowMs(shard: JournalShard): Promise<number>;
}

/**
 * Commits `events` whole. `held`: events already found stored (resume), resolved as
 * duplicates without being sent. With `expectedLastSeq`, every event is of one session
 * and the fence holds for the batch: the session's last sequence before it.
 */
export async function publishAtomic<E>(deps: AtomicPublishDeps<E>, events: readonly E[], options: PublishOptions, held?: ReadonlyMap<string, StoredEvent>): Promise<PublishResult[]> {
  if (options.fireAndForget) throw new OptionsError("fireAndForget", "applies to previews only: an atomic batch is acknowledged");
  checkAtomicBatchSize(events.length);
  requireFeature(deps.serverVersion, "atomicBatch");
  // Every append started to be sent is ended (its publish trace closed), whatever is
  // refused after it: an invalid event further on, or the checks of the whole batch.
  const appends: ReturnType<Publisher<E>["journalAppend"]>[] = [];
  const results: (PublishResult | undefined)[] = [];
  try {
    for (const e of events) appends.push(deps.publisher.journalAppend(e, options.expectedLastSeq));
    for (const { request } of appends) {
      const h = held?.get(request.eventId);
      results.push(h && { journalSeq: h.journalSeq, duplicate: true, subject: h.subject, eventId: request.eventId });
    }
    const todo = appends.filter((_, i) => results[i] === undefined);
    const requests = todo.map((a) => a.request);
    checkBatch(requests, options.expectedLastSeq !== undefined);
    const shard = oneShard(todo.length > 0 ? todo : appends);
    const outcome = await deps.batches(shard).commit(requests);
    let stored: PublishResult[];
    if (outcome.kind === "ids-held") {
      stored = await findHeld(deps, shard, events.filter((_, i) => results[i] === undefined), requests);
    } else {
      stored = requests.map((r, i) => ({ journalSeq: outcome.seqs[i]!, duplicate: outcome.kind === "stored-before", subject: r.subject, eventId: r.eventId }));
    }
    let next = 0;
    const all = results.map((r) => r ?? stored[next++]!);
    todo.forEach((a, i) => a.end(stored[i]!));
    return all;
  } catch (e) {
    appends.forEach((a, i) => results[i] === undefined && a.end(e as Error));
    throw e;
  }
}

/**
 * Refuses, before anything is sent, a batch the server would refuse whole for what it
 * holds: one event id twice (10201, which would read as "already stored"), or a fence
 * over more than one session.
 */
function checkBatch(requests: readonly { eventId: string; sessionId: string }[], fenced: boolean): void {
  const ids = new Set<string>();
  for (const r of requests) {
    if (ids.has(r.eventId)) throw new OptionsError("atomic", `event ${r.eventId} is in the batch twice: an atomic batch holds each event once`);
    ids.add(r.eventId);
  }
  if (fenced && new Set(requests.map((r) => r.sessionId)).size > 1) {
    throw new OptionsError("expectedLastSeq", "with atomic, fences one session: every event of the batch must be of the same session");
  }
}

/**
 * The shard every append of the batch is in: a batch is committed by one stream, so one
 * whose sessions live in several shards is refused before anything is sent.
 */
function oneShard(appends: readonly { shard: JournalShard }[]): JournalShard {
  const first = appends[0]?.shard ?? UNSHARDED;
  const other = appends.find((a) => a.shard.index !== first.index);
  if (other) throw new OptionsError("atomic", `an atomic batch is committed by one journal shard: its sessions live in shards ${first.index} and ${other.shard.index} of ${first.count}`);
  return first;
}

async function findHeld<E>(deps: AtomicPublishDeps<E>, shard: JournalShard, events: readonly E[], requests: readonly { eventId: string; subject: string }[]): Promise<PublishResult[]> {
  const since = new Date(Date.now() - (await deps.duplicateWindowMs(shard)) - CLOCK_SKEW_MS);
  const found = await deps.storedEvents(events, since);
  const missing = requests.filter((r) => !found.has(r.eventId));
  if (missing.length > 0) {
    const held = requests.filter((r) => found.has(r.eventId)).map((r) => r.eventId);
    throw new PublishError(
      requests[requests.length - 1]!.subject,
      `the atomic batch was refused whole: it holds event ids the journal already has (${held.length > 0 ? held.slice(0, 5).join(", ") : "stored within the duplicate window, not found by reading it back"}); ` +
        // The window is stream-wide: an id the refusal counted but none of the batch's sessions
        // holds is another subject's message (another session's writer published it first).
        `ids not in their sessions (${missing.slice(0, 5).map((r) => r.eventId).join(", ")}) are unstored or held by another subject's message within the window (those need new event ids); ` +
        "nothing of it was stored — publish the others with resume.since to store only what is missing",
      ApiCodes.AtomicPublishDuplicateId,
    );
  }
  return requests.map((r) => ({ journalSeq: found.get(r.eventId)!.journalSeq, duplicate: true, subject: found.get(r.eventId)!.subject, eventId: r.eventId }));
}
