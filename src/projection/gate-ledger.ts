/**
 * Which gates are open, from the journal's GateOpened and GateResolved: the one rule for
 * binding a resolution to its gate. A GateResolved closes a gate only when it comes from
 * the session and loop whose GateOpened opened it, and only once; anything else is a
 * violation, reported and not applied (a writer allowed on another loop's subjects must
 * not close this loop's gate). Pure; used by the tool activity projection, the gate
 * server's orphan scan and the gateway's session status.
 */

/** What the ledger knows of a gate from its GateOpened. */
export interface LedgerGate {
  readonly sessionId: string;
  readonly gateId: string;
  readonly loopId: string | undefined;
  readonly kind: string | undefined;
  readonly toolExecutionId: string | undefined;
  readonly turnId: string | undefined;
  readonly stepId: string | undefined;
  /** Whether a GateResolved bound to it was applied. */
  readonly resolved: boolean;
}

/** A GateResolved that did not close its gate, and why. */
export interface GateViolation {
  readonly gateId: string;
  readonly sessionId: string;
  /** The loop the resolution came from (undefined: none named). */
  readonly loopId: string | undefined;
  readonly rule: "other_session" | "other_loop" | "already_resolved";
  /** Which record broke the rule: a resolution, or a GateOpened reusing another loop's gate id. */
  readonly record: "GateOpened" | "GateResolved";
  readonly message: string;
}

/** What applying one event did. `unmatched`: a resolution of a gate whose GateOpened was not seen (a replay that began after it). */
export type LedgerVerdict =
  | { readonly kind: "opened"; readonly gate: LedgerGate }
  | { readonly kind: "resolved"; readonly gate: LedgerGate }
  | { readonly kind: "violation"; readonly violation: GateViolation }
  | { readonly kind: "unmatched" | "ignored" };

/** What the gate ledger reads of any event. */
export type LedgerEvent = { readonly type: string; readonly sessionId?: string; readonly loopId?: string | undefined; readonly turnId?: string | undefined; readonly stepId?: string | undefined };
/** What the gate ledger reads of a GateOpened. */
export type LedgerOpened = LedgerEvent & { readonly gate?: { readonly id?: string | undefined; readonly kind?: string | undefined; readonly subject?: { readonly toolExecutionId?: string | undefined } | undefined } | undefined; readonly cause?: { readonly toolExecutionId?: string | undefined } | undefined };
/** What the gate ledger reads of a GateResolved. */
export type LedgerResolved = LedgerEvent & { readonly gateId?: string | undefined };

/** A gate ledger's options. */
export interface GateLedgerOptions {
  /**
   * How many gates it remembers at most (default: every one). When a gate it does not
   * know opens with this many remembered, it forgets the first resolved one in the order
   * opened, else the first open one: what it holds is then bounded whatever a session
   * stores (the session catalog keeps it in an entry of bounded size). A forgotten gate is
   * one this ledger never saw: its resolution is `unmatched`, and a GateOpened reusing its
   * id opens it anew. Deterministic, so a ledger restored from `all()` goes on as one that
   * never stopped.
   */
  readonly capacity?: number | undefined;
}

/** The gates of a journal, from its GateOpened and GateResolved: which are open, and each resolution that does not bind to its gate (from another session or loop, or a second one), reported and not applied. */
export class GateLedger {
  /** By gate id alone (a UUID): a resolution naming it from another session is caught too. */
  readonly #gates = new Map<string, LedgerGate>();
  readonly #capacity: number;

  constructor(options: GateLedgerOptions = {}) {
    this.#capacity = options.capacity ?? Infinity;
  }

  /** Folds a GateOpened or GateResolved into the ledger and says what it made of it (opened, resolved, a violation of the gate rules, unmatched, ignored). */
  apply(event: LedgerOpened | LedgerResolved): LedgerVerdict {
    if (event.sessionId === undefined) return { kind: "ignored" };
    if (event.type === "GateOpened") return this.#opened(event, event.sessionId);
    if (event.type === "GateResolved") return this.#resolved(event, event.sessionId);
    return { kind: "ignored" };
  }

  /** A gate the ledger holds, or undefined. */
  get(gateId: string): LedgerGate | undefined {
    return this.#gates.get(gateId);
  }

  /** Every gate it knows, open or resolved, in the order opened: what `restore` takes back (a fold kept between runs, the session catalog). */
  all(): LedgerGate[] {
    return [...this.#gates.values()];
  }

  /** Takes back a gate `all()` gave, as it was: a fold resumed where it stopped binds resolutions as one that never stopped. */
  restore(gate: LedgerGate): void {
    this.#gates.set(gate.gateId, gate);
  }

  /** The gates still open, in the order opened; optionally of one loop. */
  open(filter: { readonly loopId?: string } = {}): LedgerGate[] {
    return [...this.#gates.values()].filter((g) => !g.resolved && (filter.loopId === undefined || g.loopId === filter.loopId));
  }

  #opened(e: LedgerOpened, sessionId: string): LedgerVerdict {
    const gateId = e.gate?.id;
    if (gateId === undefined) return { kind: "ignored" };
    // A gate id opened again by its own loop (the runtime's restore) starts over; by anyone
    // else it would take the gate over (its opener's resolution then refused as foreign).
    const known = this.#gates.get(gateId);
    if (known && known.sessionId !== sessionId) return violation(e, "GateOpened", gateId, sessionId, "other_session", `gate ${gateId} was opened in session ${known.sessionId}, not ${sessionId}`);
    if (known && known.loopId !== e.loopId) return violation(e, "GateOpened", gateId, sessionId, "other_loop", `gate ${gateId} was opened by loop ${known.loopId ?? "(none)"}, not ${e.loopId ?? "(none)"}`);
    const gate: LedgerGate = {
      sessionId,
      gateId,
      loopId: e.loopId,
      kind: e.gate?.kind,
      toolExecutionId: e.gate?.subject?.toolExecutionId ?? e.cause?.toolExecutionId,
      turnId: e.turnId,
      stepId: e.stepId,
      resolved: false,
    };
    this.#gates.delete(gateId);
    if (this.#gates.size >= this.#capacity) this.#forgetOne();
    this.#gates.set(gateId, gate);
    return { kind: "opened", gate };
  }

  /** Makes room for one: the first resolved gate in the order opened (what matters least), else the first open one. */
  #forgetOne(): void {
    let first: string | undefined;
    for (const [id, g] of this.#gates) {
      first ??= id;
      if (g.resolved) {
        this.#gates.delete(id);
        return;
      }
    }
    if (first !== undefined) this.#gates.delete(first);
  }

  #resolved(e: LedgerResolved, sessionId: string): LedgerVerdict {
    if (e.gateId === undefined) return { kind: "ignored" };
    const key = e.gateId;
    const gate = this.#gates.get(key);
    if (!gate) return { kind: "unmatched" };
    if (sessionId !== gate.sessionId) return violation(e, "GateResolved", key, sessionId, "other_session", `gate ${key} was opened in session ${gate.sessionId}, not ${sessionId}`);
    if (e.loopId !== gate.loopId) return violation(e, "GateResolved", key, sessionId, "other_loop", `gate ${key} was opened by loop ${gate.loopId ?? "(none)"}, not ${e.loopId ?? "(none)"}`);
    if (gate.resolved) return violation(e, "GateResolved", key, sessionId, "already_resolved", `gate ${key} is already resolved`);
    const closed = { ...gate, resolved: true };
    this.#gates.set(key, closed);
    return { kind: "resolved", gate: closed };
  }
}

function violation(e: LedgerEvent, record: GateViolation["record"], gateId: string, sessionId: string, rule: GateViolation["rule"], message: string): LedgerVerdict {
  return { kind: "violation", violation: { gateId, sessionId, loopId: e.loopId, rule, record, message } };
}
