/**
 * `GET /v1/sessions/{sid}/status` and `GET /v1/sessions`: the runtime's catalog
 * projection (reference §5), folded from the session's journal. No state is kept between
 * requests, so any number of gateways answer alike.
 */
import type { Jetloop } from "../bus.js";
import { goJson } from "../codec/wire.js";
import type { JetloopEvent } from "../events/catalogue.js";
import { parseEventSubject, streamSubjects } from "../subjects/subjects.js";
import { eventJson } from "./journal-page.js";

export type SessionState = "running" | "waiting_on_gate" | "idle" | "failed" | "interrupted" | "stopped";

interface Summary {
  readonly journalSeq: number;
  readonly json: string;
}

export interface SessionStatus {
  readonly sessionId: string;
  readonly state: SessionState | undefined;
  /** The session's last journal sequence, internal events included. */
  readonly lastJournalSeq: number;
  readonly activeTurnId: string | undefined;
  readonly waitingGateId: string | undefined;
  readonly lastTurn: Summary | undefined;
  readonly lastStep: Summary | undefined;
  /** `created_at` of the first and the last event. */
  readonly createdAt: string | undefined;
  readonly updatedAt: string | undefined;
}

const TURN_END: Partial<Record<string, SessionState>> = { TurnDone: "idle", TurnFailed: "failed", TurnInterrupted: "interrupted" };

/** Folds one session's public events; undefined when the journal has none. */
export async function readSessionStatus(bus: Jetloop, sessionId: string): Promise<SessionStatus | undefined> {
  let lastJournalSeq = 0;
  let first: string | undefined;
  let last: string | undefined;
  let lastTurn: Summary | undefined;
  let lastStep: Summary | undefined;
  let ended: SessionState | undefined;
  let stopped = false;
  const activeTurns = new Map<string, string>(); // loop → turn
  const openGates = new Set<string>();
  for await (const d of bus.session(sessionId).replay({ enduring: "all" })) {
    const e: JetloopEvent = d.event;
    lastJournalSeq = d.journalSeq;
    first ??= e.createdAt;
    last = e.createdAt ?? last;
    const loop = e.loopId ?? "";
    switch (e.type) {
      case "TurnStarted":
        if (e.turnId) activeTurns.set(loop, e.turnId);
        break;
      case "TurnDone":
      case "TurnFailed":
      case "TurnInterrupted":
        activeTurns.delete(loop);
        ended = TURN_END[e.type];
        lastTurn = { journalSeq: d.journalSeq, json: eventJson(e) };
        break;
      case "StepDone":
        lastStep = { journalSeq: d.journalSeq, json: eventJson(e) };
        break;
      case "GateOpened":
        if (e.gate?.id) openGates.add(e.gate.id);
        break;
      case "GateResolved":
        if (e.gateId) openGates.delete(e.gateId);
        break;
      case "SessionStopped":
        stopped = true;
        break;
    }
  }
  if (lastJournalSeq === 0) return undefined;
  const waitingGateId = stopped ? undefined : [...openGates].at(-1);
  const activeTurnId = stopped ? undefined : [...activeTurns.values()].at(-1);
  const state: SessionState = stopped ? "stopped" : waitingGateId ? "waiting_on_gate" : activeTurnId ? "running" : (ended ?? "idle");
  return { sessionId, state, lastJournalSeq, activeTurnId, waitingGateId, lastTurn, lastStep, createdAt: first, updatedAt: last };
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

/** The sessions that have journal messages, from the stream's per-subject counts. */
export async function journalSessions(bus: Jetloop): Promise<string[]> {
  const jsm = await bus.jetstreamManager();
  const info = await jsm.streams.info(bus.stream, { subjects_filter: streamSubjects(bus.namespace)[0]! });
  const sessions = new Set<string>();
  for (const subject of Object.keys(info.state.subjects ?? {})) sessions.add(parseEventSubject(bus.namespace, subject).sessionId);
  return [...sessions];
}

export interface SessionListPage {
  readonly sessions: readonly SessionStatus[];
  readonly skip: number;
  readonly limit: number;
}

/** Order: last activity descending, then session id ascending (reference §5). */
export function sortSessions(list: SessionStatus[]): SessionStatus[] {
  return list.sort((a, b) => (b.updatedAt ?? "").localeCompare(a.updatedAt ?? "") || a.sessionId.localeCompare(b.sessionId));
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
