/**
 * The one fold of a session's journal into what the status route and the session catalog
 * show (the Go catalog's `applyEvent`), and the pieces it needs: a stored event's JSON for
 * the summaries, the title Go derives. Pure: it sees deliveries, never NATS.
 */
import type { JetloopEvent } from "../events/catalogue.js";
import type { UserMessage } from "../events/content.js";
import { GateLedger, type LedgerGate } from "../projection/gate-ledger.js";
import type { Delivery } from "../sources/delivery.js";
import { compactJson } from "../wire/strict-json.js";

const decoder = new TextDecoder();

/**
 * An enduring event as the journal stores it, embedded as Go's json.Encoder embeds it
 * (compacted), from the delivery's stored bytes, not re-encoded: the delivery was decoded
 * (so the reader accepted it, and filtering saw it), and the bytes are what every other
 * reader of the journal gets.
 */
export function storedEventJson(d: Delivery<JetloopEvent>): string {
  if (d.data === undefined) throw new Error(`the delivery of journal sequence ${d.journalSeq} carries no stored bytes`);
  return compactJson(decoder.decode(d.data));
}

/** Go's `titleMaxLen`: a picker shows one line, cut to this many runes. */
export const TITLE_MAX_RUNES = 80;

/** Go's `unicode.IsSpace` (what `strings.TrimSpace` trims): not JavaScript's `trim`, which also trims U+FEFF and keeps U+0085. */
const GO_SPACE = "\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const TRIM = new RegExp(`^[${GO_SPACE}]+|[${GO_SPACE}]+$`, "gu");

/**
 * The Go catalog's `deriveTitle`: the text blocks of the user message concatenated, its
 * first line (split on "\\n") that is not blank once trimmed, trimmed, cut to
 * `TITLE_MAX_RUNES` code points. No message or no text: "".
 */
export function deriveTitle(message: UserMessage | undefined): string {
  if (message === undefined) return "";
  let text = "";
  for (const b of message.blocks ?? []) if (b.type === "text") text += b.text ?? "";
  for (const raw of text.split("\n")) {
    const line = raw.replace(TRIM, "");
    if (line !== "") {
      const runes = [...line];
      return runes.length <= TITLE_MAX_RUNES ? line : runes.slice(0, TITLE_MAX_RUNES).join("");
    }
  }
  return "";
}

const LEADING = new RegExp(`^[${GO_SPACE}]`, "u");
const TRAILING = new RegExp(`[${GO_SPACE}]$`, "u");

/**
 * Whether `t` is a title `deriveTitle` can return: not empty, one line, no Go space first,
 * at most `TITLE_MAX_RUNES` code points, and no Go space last unless the cut made it so.
 */
export function isDerivedTitle(t: string): boolean {
  const runes = [...t].length;
  if (t === "" || t.includes("\n") || runes > TITLE_MAX_RUNES || LEADING.test(t)) return false;
  return runes === TITLE_MAX_RUNES || !TRAILING.test(t);
}

/**
 * The gates the fold remembers at most (GateLedger's capacity): the catalog keeps them in
 * the session's entry, so this bounds the entry whatever the session stores. Far more than
 * a session has open at once; past it the fold forgets resolved gates first (a second
 * resolution of a forgotten one is not applied, as before, since the gate is unknown),
 * then the oldest open ones (whose late resolution is then not applied either).
 */
export const GATES_KEPT = 48;

/** Go's `SessionStatus`: the lifecycle phase kept beside the richer `state`. */
export type SessionLifecycle = "active" | "stopped";

/** What a fold is between runs: its fields and its gates (`StatusFold.resume`). */
export interface FoldState {
  readonly state: SessionState | undefined;
  readonly lastJournalSeq: number;
  readonly activeTurnId: string | undefined;
  readonly waitingGateId: string | undefined;
  readonly createdAt: string | undefined;
  readonly lastActiveAt: string | undefined;
  readonly title: string;
  readonly status: SessionLifecycle | undefined;
  readonly loopCount: number;
  readonly gates: readonly LedgerGate[];
}

/** A session's state as the Go runtime reports it, folded from its journal. */
export type SessionState = "running" | "waiting_on_gate" | "idle" | "failed" | "interrupted" | "stopped";

export interface Summary {
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
 * served by the status route, the catalog's `loop_count`; SessionStopped → stopped. The
 * catalog's fields come along: `title` from the first TurnStarted with text, `status`
 * (active, stopped), `loop_count`. Every one of these advances `last_journal_seq`;
 * any other event changes nothing, not even that. jetloop adds one rule, the
 * projection's own (GateLedger): a GateResolved counts only from the loop whose GateOpened
 * opened that gate, and only once; a GateOpened taking over another loop's gate id does
 * not count either. It remembers at most `GATES_KEPT` gates (GateLedger's capacity): a
 * fold from the start and one resumed from the catalog's entry forget the same ones.
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
  /** The first TurnStarted's user message with text, as Go cuts it (`deriveTitle`). */
  title = "";
  /** Go's older lifecycle phase: `active` from SessionStarted, `stopped` from SessionStopped. */
  status: SessionLifecycle | undefined;
  /** The loops of the session: the primary (counted by SessionStarted) and one per LoopStarted. */
  loopCount = 0;
  /** Which resolution may close which gate: the same rule as the tool activity projection's. */
  readonly #ledger = new GateLedger({ capacity: GATES_KEPT });

  /** Every gate the fold knows (its binding state), for `resume`. */
  gates(): LedgerGate[] {
    return this.#ledger.all();
  }

  /**
   * A fold that goes on where one stopped: its fields and its gates as that one had them
   * (the session catalog keeps them in the entry). The summaries are not kept there, so a
   * resumed fold has none until the next turn or step.
   */
  static resume(state: FoldState): StatusFold {
    const f = new StatusFold();
    f.state = state.state;
    f.lastJournalSeq = state.lastJournalSeq;
    f.activeTurnId = state.activeTurnId;
    f.waitingGateId = state.waitingGateId;
    f.createdAt = state.createdAt;
    f.lastActiveAt = state.lastActiveAt;
    f.title = state.title;
    f.status = state.status;
    f.loopCount = state.loopCount;
    for (const g of state.gates) f.#ledger.restore(g);
    return f;
  }

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
        this.status = "active";
        this.loopCount = Math.max(this.loopCount, 1);
        return true;
      case "TurnStarted":
        if (this.title === "") this.title = deriveTitle(e.message);
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
        this.loopCount++;
        return true;
      case "SessionStopped":
        this.state = "stopped";
        this.status = "stopped";
        return true;
      default:
        return false;
    }
  }
}

