/**
 * `GET /v1/sessions/{sid}/status`, the runtime's catalog projection (reference §5) folded
 * from the session's journal (catalog/fold.ts, the one fold), and `GET /v1/sessions`'s
 * JSON, from the session catalog (catalog/catalog.ts): the list reads one entry per
 * session, never a journal.
 */
import type { Jetloop } from "../bus.js";
import type { SessionPage } from "../catalog/catalog.js";
import { type SessionStatus, StatusFold, type Summary } from "../catalog/fold.js";
import { goJson } from "../wire/wire.js";

/** A summary of an internal event in `last_turn`/`last_step`: the Go handler answers 500, so does this. */
export class InternalSummaryError extends Error {
  override readonly name = "InternalSummaryError";
}

/**
 * The status route's view: a summary of an internal event cannot be served (Go's reader
 * refuses to rebuild it, 500). The list serves no summary, so it does not check.
 */
export function servableStatus(s: SessionStatus): SessionStatus {
  if (s.lastTurn?.internal || s.lastStep?.internal) throw new InternalSummaryError(`session ${s.sessionId}: an internal event is its last turn or step`);
  return s;
}

/** Folds one session's journal, internal events included; undefined when the journal has none. */
export async function readSessionStatus(bus: Jetloop, sessionId: string): Promise<SessionStatus | undefined> {
  const fold = new StatusFold();
  let any = false;
  for await (const d of bus.session(sessionId).replay({ enduring: "all", includeInternal: true })) {
    any = true;
    fold.apply(d);
  }
  if (!any) return undefined;
  return {
    sessionId,
    state: fold.state,
    lastJournalSeq: fold.lastJournalSeq,
    activeTurnId: fold.activeTurnId,
    waitingGateId: fold.waitingGateId,
    lastTurn: fold.lastTurn,
    lastStep: fold.lastStep,
    createdAt: fold.createdAt,
    updatedAt: fold.lastActiveAt,
  };
}

function summaryJson(s: Summary): string {
  return `{"journal_seq":${s.journalSeq},"event":${s.json}}`;
}

/** Fields in the Go struct's order, zero values omitted. */
export function statusJson(s: SessionStatus): string {
  const parts = [`"session_id":${goJson(s.sessionId)}`];
  if (s.state) parts.push(`"state":${goJson(s.state)}`);
  parts.push(`"last_journal_seq":${s.lastJournalSeq}`);
  if (s.activeTurnId) parts.push(`"active_turn_id":${goJson(s.activeTurnId)}`);
  if (s.waitingGateId) parts.push(`"waiting_gate_id":${goJson(s.waitingGateId)}`);
  if (s.lastTurn) parts.push(`"last_turn":${summaryJson(s.lastTurn)}`);
  if (s.lastStep) parts.push(`"last_step":${summaryJson(s.lastStep)}`);
  if (s.updatedAt) parts.push(`"updated_at":${goJson(s.updatedAt)}`);
  return `{${parts.join(",")}}`;
}

/**
 * The list's JSON (reference §5): each session's row as the catalog holds it, Go's fields
 * and order, zero values omitted. `skip` is the request's, echoed exactly as Go echoes its
 * int (it may be past what a JavaScript number holds: the page is then empty, done).
 */
export function sessionListJson(page: SessionPage, skip: bigint = BigInt(page.skip)): string {
  const done = page.sessions.length < page.limit;
  const items = page.sessions.map((s) => {
    const parts = [`"session_id":${goJson(s.sessionId)}`];
    if (s.state) parts.push(`"state":${goJson(s.state)}`);
    if (s.title !== "") parts.push(`"title":${goJson(s.title)}`);
    if (s.createdAt) parts.push(`"created_at":${goJson(s.createdAt)}`);
    if (s.lastActiveAt) parts.push(`"last_active_at":${goJson(s.lastActiveAt)}`);
    return `{${parts.join(",")}}`;
  });
  return `{"sessions":[${items.join(",")}],"skip":${skip},"limit":${page.limit},"next_skip":${done ? 0n : skip + BigInt(page.sessions.length)},"done":${String(done)}}`;
}
