/**
 * `GET /v1/sessions/{sid}/status` and `GET /v1/sessions`: the runtime's catalog
 * projection (reference §5), folded from the session's journal. No state is kept between
 * requests, so any number of gateways answer alike.
 */
import type { Jetloop } from "../bus.js";
import { goJson } from "../wire/wire.js";
import type { JetloopEvent } from "../events/catalogue.js";
import { SubjectError } from "../errors.js";
import { GateLedger } from "../projection/gate-ledger.js";
import type { Delivery } from "../subscribe/delivery.js";
import { parseEventSubject } from "../subjects/subjects.js";
import { storedEventJson } from "./journal-page.js";

export type SessionState = "running" | "waiting_on_gate" | "idle" | "failed" | "interrupted" | "stopped";

interface Summary {
  readonly journalSeq: number;
  readonly json: string;
  /** An internal event: the status route cannot serve it (`servableStatus`). */
  readonly internal: boolean;
}

export interface SessionStatus {
  readonly sessionId: string;
  readonly state: SessionState | undefined;
  /** The highest sequence of an event the fold applied (internal ones included). */
  readonly lastJournalSeq: number;
  readonly activeTurnId: string | undefined;
  readonly waitingGateId: string | undefined;
  readonly lastTurn: Summary | undefined;
  readonly lastStep: Summary | undefined;
  /** SessionStarted's `created_at`; the last activity (TurnStarted, StepDone). */
  readonly createdAt: string | undefined;
  readonly updatedAt: string | undefined;
}

/**
 * The Go catalog's fold (`applyEvent` in looprig/harness pkg/sessionstore/catalog.go), one
 * event at a time, internal events included, field by field:
 * SessionStarted → idle (and `created_at`); TurnStarted → running, the active turn,
 * activity; GateOpened → waiting_on_gate, the waiting gate; GateResolved → no waiting gate,
 * running if a turn is active, else idle; TurnDone → idle, no active turn, `last_turn`;
 * TurnFailed → failed, `last_turn` (the active turn stays, as in Go); TurnInterrupted →
 * interrupted, nothing else; StepDone → `last_step`, activity; LoopStarted → no field
 * served here; SessionStopped → stopped. Every one of these advances `last_journal_seq`;
 * any other event changes nothing, not even that. jetloop adds one rule, the
 * projection's own (GateLedger): a GateResolved counts only from the loop whose GateOpened
 * opened that gate, and only once; a GateOpened taking over another loop's gate id does
 * not count either.
 */
export class StatusFold {
  state: SessionState | undefined;
  lastJournalSeq = 0;
  activeTurnId: string | undefined;
  waitingGateId: string | undefined;
  lastTurn: Summary | undefined;
  lastStep: Summary | undefined;
  createdAt: string | undefined;
  /** Go stamps its clock on TurnStarted, StepDone and RestoreDone; here, that event's `created_at`. */
  lastActiveAt: string | undefined;
  /** Which resolution may close which gate: the same rule as the tool activity projection's. */
  readonly #ledger = new GateLedger();

  apply(d: Delivery<JetloopEvent>): void {
    if (!this.#applied(d)) return;
    this.lastJournalSeq = Math.max(this.lastJournalSeq, d.journalSeq);
  }

  #applied(d: Delivery<JetloopEvent>): boolean {
    const e = d.event;
    const summary = () => ({ journalSeq: d.journalSeq, json: storedEventJson(d), internal: e.visibility === "internal" });
    switch (e.type) {
      case "SessionStarted":
        this.createdAt = e.createdAt;
        this.state = "idle";
        return true;
      case "TurnStarted":
        this.state = "running";
        this.activeTurnId = e.turnId;
        this.lastActiveAt = e.createdAt ?? this.lastActiveAt;
        return true;
      case "GateOpened":
        if (this.#ledger.apply(e).kind === "violation") return false;
        this.state = "waiting_on_gate";
        this.waitingGateId = e.gate?.id;
        return true;
      case "GateResolved":
        // Only the loop that opened the gate resolves it, once (anything else is not applied).
        if (this.#ledger.apply(e).kind !== "resolved") return false;
        this.waitingGateId = undefined;
        this.state = this.activeTurnId ? "running" : "idle";
        return true;
      case "TurnDone":
        this.state = "idle";
        this.activeTurnId = undefined;
        this.lastTurn = summary();
        return true;
      case "TurnFailed":
        this.state = "failed";
        this.lastTurn = summary();
        return true;
      case "TurnInterrupted":
        this.state = "interrupted";
        return true;
      case "StepDone":
        this.lastStep = summary();
        this.lastActiveAt = e.createdAt ?? this.lastActiveAt;
        return true;
      case "LoopStarted":
        return true; // Go counts loops; the served status has no such field
      case "SessionStopped":
        this.state = "stopped";
        return true;
      default:
        return false;
    }
  }
}

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

/** The session an event subject belongs to; undefined for a subject jetloop never writes. */
function subjectSession(ns: string, subject: string): string | undefined {
  try {
    return parseEventSubject(ns, subject).sessionId;
  } catch (e) {
    if (e instanceof SubjectError) return undefined;
    throw e;
  }
}

/**
 * The sessions that have journal messages, from the per-subject counts of every shard's
 * stream. A subject that is no event subject (anyone who may publish on the journal can
 * store one), or one of a session that lives in another shard (the publisher chooses the
 * shard: such a message was written past it), names no session: it is not listed, and the
 * sessions are.
 */
export async function journalSessions(bus: Jetloop): Promise<string[]> {
  const jsm = await bus.jetstreamManager();
  const sessions = new Set<string>();
  for (const journal of bus.journals()) {
    const info = await jsm.streams.info(journal.stream, { subjects_filter: journal.subject });
    for (const subject of Object.keys(info.state.subjects ?? {})) {
      const sid = subjectSession(bus.namespace, subject);
      if (sid !== undefined && bus.journalOf(sid).shard.index === journal.shard.index) sessions.add(sid);
    }
  }
  return [...sessions];
}

export interface SessionListPage {
  readonly sessions: readonly SessionStatus[];
  readonly skip: number;
  readonly limit: number;
}

/**
 * A timestamp in Go's form (`goTimestamp`) as [epoch seconds, nanoseconds], comparable
 * across offsets and fraction lengths; none is before every time.
 */
function instant(t: string | undefined): readonly [number, number] {
  if (t === undefined) return [-Infinity, 0];
  const dot = t[19] === "." ? 20 : -1;
  const zoneAt = t.search(/(?:Z|[+-]\d\d:\d\d)$/);
  const nanos = dot < 0 ? 0 : Number(t.slice(dot, zoneAt).padEnd(9, "0"));
  return [Date.parse(`${t.slice(0, 19)}${t.slice(zoneAt)}`) / 1000, nanos];
}

const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Order: last activity descending (as instants, as Go's time.Time sorts), then session id ascending (reference §5). */
export function sortSessions(list: SessionStatus[]): SessionStatus[] {
  const keys = new Map(list.map((s) => [s, instant(s.updatedAt)] as const));
  return list.sort((a, b) => {
    const [as, an] = keys.get(a)!;
    const [bs, bn] = keys.get(b)!;
    return bs - as || bn - an || byCodePoint(a.sessionId, b.sessionId);
  });
}

export function sessionListJson(page: SessionListPage): string {
  const done = page.sessions.length < page.limit;
  const items = page.sessions.map((s) => {
    const parts = [`"session_id":${goJson(s.sessionId)}`];
    if (s.state) parts.push(`"state":${goJson(s.state)}`);
    if (s.createdAt) parts.push(`"created_at":${goJson(s.createdAt)}`);
    if (s.updatedAt) parts.push(`"last_active_at":${goJson(s.updatedAt)}`);
    return `{${parts.join(",")}}`;
  });
  return `{"sessions":[${items.join(",")}],"skip":${page.skip},"limit":${page.limit},"next_skip":${done ? 0 : page.skip + page.sessions.length},"done":${String(done)}}`;
}
