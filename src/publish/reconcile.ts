/**
 * Reconciling a producer's appends with the journal, at any delay. The stream's duplicate
 * window recognises a resent message id only within the window; a producer that crashed or
 * timed out and comes back later asks the journal instead which of its event ids it holds.
 * Bounded by session and time: per session, one ordered consumer over the session's
 * journal subjects (the create subject a per-session user can be granted) from `since`,
 * headers only, so the read costs the message ids, not the payloads.
 */
import type { Logger } from "pino";
import { PubHeaders } from "../subjects/nats-names.js";
import { sessionJournalSubject } from "../subjects/subjects.js";
import type { JournalShards } from "../journal/journal-shards.js";
import { readJournalRange, retryJournalRead } from "../journal/journal-range.js";
import { parseReconcileOptions, type ReconcileOptions } from "./options.js";

/** Sessions read at once: each holds one consumer on the server while it reads. */
const SESSIONS_AT_ONCE = 8;
const BATCH = 1024;

export type { ReconcileOptions };

/** Where the journal holds an event. */
export interface StoredEvent {
  readonly journalSeq: number;
  readonly subject: string;
}

export interface ReconcileContext {
  /** Each session is read in its own shard. */
  readonly shards: Pick<JournalShards, "of">;
  readonly namespace: string;
  readonly log: Logger;
}

/** The ids the read looks for, by session; an item without string ids is left out (its publish refuses it). */
function idsBySession(events: Iterable<unknown>): Map<string, Set<string>> {
  const bySession = new Map<string, Set<string>>();
  for (const e of events) {
    const { sessionId, eventId } = (e ?? {}) as { sessionId?: unknown; eventId?: unknown };
    if (typeof sessionId !== "string" || typeof eventId !== "string") continue;
    let ids = bySession.get(sessionId);
    if (!ids) bySession.set(sessionId, (ids = new Set()));
    ids.add(eventId);
  }
  return bySession;
}

/**
 * The events of `events` the journal holds, by event id: those stored since
 * `options.since` on their session's journal subjects. Previews are never stored, so
 * they are never found.
 */
export async function storedEvents(ctx: ReconcileContext, events: Iterable<unknown>, options: ReconcileOptions): Promise<Map<string, StoredEvent>> {
  const { since } = parseReconcileOptions(options);
  const bySession = idsBySession(events);
  // Checked before anything is read: a session id that is not a subject token is refused.
  const subjects = [...bySession.keys()].map((s) => {
    const home = ctx.shards.of(s);
    return [s, sessionJournalSubject(ctx.namespace, s, home.shard), home] as const;
  });
  const found = new Map<string, StoredEvent>();
  const log = ctx.log.child({ component: "reconcile" });
  let next = 0;
  const worker = async () => {
    while (next < subjects.length) {
      const [session, subject, home] = subjects[next++]!;
      const wanted = bySession.get(session)!;
      await retryJournalRead(
        async () => {
          for await (const m of readJournalRange(home.journal, { subjects: [subject], from: { time: since }, toSeq: Number.MAX_SAFE_INTEGER, batch: BATCH, headersOnly: true }, "reconciling appends")) {
            const id = m.headers?.get(PubHeaders.MsgIdHdr);
            if (id && wanted.has(id) && !found.has(id)) found.set(id, { journalSeq: m.seq, subject: m.subject });
          }
        },
        () => false,
        log,
      );
    }
  };
  await Promise.all(Array.from({ length: Math.min(SESSIONS_AT_ONCE, subjects.length) }, worker));
  return found;
}
