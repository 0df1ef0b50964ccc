/**
 * Tool activity rebuilt from deliveries: the state a (reconnecting) UI renders. Pure:
 * no NATS, no I/O, no clock; the same deliveries give the same state. See README.md in
 * this folder for the state machine and the "never infer running" rule.
 */
import type {
  GateOpened,
  GateResolved,
  JetloopEvent,
  PermissionDecided,
  PermissionRequested,
  StepDone,
  ToolCallCompleted,
  ToolCallStarted,
  UserInputRequested,
} from "../events/catalogue.js";
import { defaultRegistry } from "../events/catalogue.js";
import { ProjectionDeliveryError } from "../errors.js";
import { GateLedger, type GateViolation } from "./gate-ledger.js";
import { factsOf, PERMISSION_GATE_KIND, toView, type ToolFacts } from "./status.js";
import type { StepMessage } from "../events/content.js";
import type { ApplyResult, JournalRef, ResultFact, ToolActivity, ToolActivityDelivery, ToolKey, TurnOutcome } from "./types.js";

/** How many preview event ids are remembered for deduplication. */
const LIVE_ID_MEMORY = 10_000;

type GateSlot = "permissionGate" | "inputGate";
type Coordinates = Pick<ToolFacts, "sessionId" | "loopId" | "toolExecutionId" | "turnId" | "stepId">;
type Header = { sessionId: string; loopId?: string | undefined; turnId?: string | undefined; stepId?: string | undefined; eventId: string; createdAt?: string | undefined };

const keyOf = (loopId: string, toolExecutionId: string) => `${loopId} ${toolExecutionId}`;
const turnKeyOf = (loopId: string, turnId: string) => `${loopId} ${turnId}`;
const stepKeyOf = (loopId: string, stepId: string) => `${loopId} ${stepId}`;
const ref = (e: Header, journalSeq: number): JournalRef => ({ journalSeq, eventId: e.eventId, at: e.createdAt });

/** Built-in types narrowed by name: a registry cannot replace a built-in type. */
function isBuiltIn(event: { readonly type: string }): event is JetloopEvent {
  return defaultRegistry.get(event.type)?.builtIn === true;
}

function checkSeq(type: string, journalSeq: number, ephemeral: boolean | undefined): void {
  if (!Number.isSafeInteger(journalSeq) || journalSeq < 0) {
    throw new ProjectionDeliveryError(type, journalSeq, "a journal sequence is a non-negative integer");
  }
  if (ephemeral === true && journalSeq !== 0) throw new ProjectionDeliveryError(type, journalSeq, "an ephemeral event has journal sequence 0");
  if (ephemeral === false && journalSeq === 0) throw new ProjectionDeliveryError(type, journalSeq, "an enduring event has a journal sequence");
}

/**
 * Tool activity per (loop id, tool execution id), rebuilt from enduring events and
 * overlaid with the previews seen on the current connection.
 *
 * ```ts
 * const tools = new ToolActivityProjection();
 * for await (const d of sub) {
 *   const { changed } = tools.apply(d);
 *   render(changed);
 * }
 * // after a reconnect: tools.resetLive(), then resume from tools.lastJournalSeq + 1
 * ```
 */
export class ToolActivityProjection {
  readonly #entries = new Map<string, ToolActivity>();
  /** (loop, turn) → keys of the calls in that turn. */
  readonly #byTurn = new Map<string, Set<string>>();
  readonly #turns = new Map<string, TurnOutcome>();
  /** (loop, step) → keys of the calls in that step, which its StepDone finalizes. */
  readonly #byStep = new Map<string, Set<string>>();
  /** (loop, model provider's tool_use id) → key: the links gates record. */
  readonly #byToolUse = new Map<string, string>();
  /** (session, gate id) → the call and slot the gate guards. */
  readonly #gates = new Map<string, { key: string; slot: GateSlot }>();
  /** Which resolution may close which gate (the loop that opened it, once). */
  readonly #ledger = new GateLedger();
  #violations: GateViolation[] = [];
  readonly #liveIds = new Set<string>();
  #lastJournalSeq = 0;
  #changed = new Map<string, ToolActivity>();
  #removed = new Map<string, ToolKey>();

  /**
   * The highest journal sequence applied: resume a subscription after it. Enduring
   * deliveries at or below it are duplicates.
   */
  get lastJournalSeq(): number {
    return this.#lastJournalSeq;
  }

  /** How many calls the projection holds. */
  get size(): number {
    return this.#entries.size;
  }

  /** The activity of one tool call, or undefined when the projection holds none. */
  get(loopId: string, toolExecutionId: string): ToolActivity | undefined {
    return this.#entries.get(keyOf(loopId, toolExecutionId));
  }

  /** The calls, optionally of one loop or one turn, in the order first seen. */
  list(filter: { readonly loopId?: string; readonly turnId?: string } = {}): ToolActivity[] {
    const out: ToolActivity[] = [];
    for (const a of this.#entries.values()) {
      if (filter.loopId !== undefined && a.loopId !== filter.loopId) continue;
      if (filter.turnId !== undefined && a.turnId !== filter.turnId) continue;
      out.push(a);
    }
    return out;
  }

  /** How the turn ended, once a TurnDone, TurnFailed or TurnInterrupted was applied. */
  turnOutcome(loopId: string, turnId: string): TurnOutcome | undefined {
    return this.#turns.get(turnKeyOf(loopId, turnId));
  }

  /**
   * Applies one delivery. Enduring events must arrive in journal order (as an ordered
   * consumer or a replay delivers them); one at or below `lastJournalSeq` is a duplicate
   * and changes nothing. Previews are deduplicated by event id and never override what
   * the journal says. Throws ProjectionDeliveryError when the journal sequence does not
   * fit the event's class (0 for ephemeral, positive for enduring).
   */
  apply(delivery: ToolActivityDelivery): ApplyResult {
    const { event, journalSeq } = delivery;
    const ephemeral = isBuiltIn(event) ? defaultRegistry.get(event.type)!.class === "ephemeral" : undefined;
    checkSeq(event.type, journalSeq, ephemeral);
    if (ephemeral ?? journalSeq === 0) return this.#applyLive(event);
    if (journalSeq <= this.#lastJournalSeq) return { status: "duplicate", changed: [], removed: [] };
    this.#lastJournalSeq = journalSeq;
    if (isBuiltIn(event)) this.#applyEnduring(event, journalSeq);
    return this.#flush("applied");
  }

  /**
   * Applies deliveries in order; returns the projection. Given an async iterable (what
   * `replay` returns), resolves with it once the iterable has ended.
   */
  applyAll(deliveries: Iterable<ToolActivityDelivery>): this;
  applyAll(deliveries: AsyncIterable<ToolActivityDelivery>): Promise<this>;
  applyAll(deliveries: Iterable<ToolActivityDelivery> | AsyncIterable<ToolActivityDelivery>): this | Promise<this> {
    if (Symbol.asyncIterator in deliveries) return this.#applyAllAsync(deliveries);
    for (const d of deliveries) this.apply(d);
    return this;
  }

  async #applyAllAsync(deliveries: AsyncIterable<ToolActivityDelivery>): Promise<this> {
    for await (const d of deliveries) this.apply(d);
    return this;
  }

  /**
   * Forgets everything learned from previews: call it when the live connection is
   * lost or replaced, since previews missed in between are gone for good. Running and
   * completed calls fall back to what the journal says (e.g. `approved`); live-only
   * calls are dropped. `lastJournalSeq` is kept, so the journal resumes where it was.
   */
  resetLive(): Omit<ApplyResult, "status"> {
    this.#liveIds.clear();
    for (const [key, a] of this.#entries) {
      if (!a.live) continue;
      const { live: _dropped, ...facts } = factsOf(a);
      this.#put(key, facts);
    }
    const { changed, removed } = this.#flush("applied");
    return { changed, removed };
  }

  // --- previews -----------------------------------------------------------

  #applyLive(event: { readonly type: string }): ApplyResult {
    if (!isBuiltIn(event) || (event.type !== "ToolCallStarted" && event.type !== "ToolCallCompleted")) {
      return { status: "ignored", changed: [], removed: [] };
    }
    if (this.#liveIds.has(event.eventId)) return { status: "duplicate", changed: [], removed: [] };
    this.#rememberLiveId(event.eventId);
    const coords = coordinatesOf(event, event.toolExecutionId);
    if (!coords) return { status: "ignored", changed: [], removed: [] };
    const key = keyOf(coords.loopId, coords.toolExecutionId);
    const prev = this.#entries.get(key);
    const turn = this.#turns.get(turnKeyOf(coords.loopId, prev?.turnId ?? coords.turnId));
    if (turn || prev?.result) return { status: "ignored", changed: [], removed: [] };
    const facts: ToolFacts = prev ? factsOf(prev) : coords;
    const live = facts.live ?? {};
    // The first preview of each kind wins; a later one with another id changes nothing.
    if (event.type === "ToolCallStarted" && !live.started) {
      this.#put(key, { ...facts, live: { ...live, started: liveStart(event) } });
    } else if (event.type === "ToolCallCompleted" && !live.completed) {
      this.#put(key, { ...facts, live: { ...live, completed: liveCompletion(event) } });
    }
    return this.#flush("applied");
  }

  #rememberLiveId(id: string): void {
    this.#liveIds.add(id);
    if (this.#liveIds.size > LIVE_ID_MEMORY) this.#liveIds.delete(this.#liveIds.values().next().value!);
  }

  // --- enduring events -----------------------------------------------------------

  #applyEnduring(event: JetloopEvent, seq: number): void {
    switch (event.type) {
      case "PermissionRequested":
        return this.#onPermissionRequested(event, seq);
      case "PermissionDecided":
        return this.#onPermissionDecided(event, seq);
      case "UserInputRequested":
        return this.#onUserInputRequested(event, seq);
      case "GateOpened":
        return this.#onGateOpened(event, seq);
      case "GateResolved":
        return this.#onGateResolved(event, seq);
      case "StepDone":
        return this.#onStepDone(event, seq);
      case "TurnDone":
      case "TurnFailed":
      case "TurnInterrupted":
        return this.#onTurnEnded(event, seq);
      default:
        return;
    }
  }

  #onPermissionRequested(e: PermissionRequested, seq: number): void {
    this.#update(e, e.toolExecutionId, (f) => ({ ...f, request: { ...ref(e, seq), request: e.request } }));
  }

  #onPermissionDecided(e: PermissionDecided, seq: number): void {
    this.#update(e, e.toolExecutionId, (f) => ({
      ...f,
      decision: { ...ref(e, seq), effect: e.effect, reason: e.reason, subject: e.subject, audit: e.audit },
    }));
  }

  #onUserInputRequested(e: UserInputRequested, seq: number): void {
    this.#update(e, e.toolExecutionId, (f) => ({ ...f, input: { ...ref(e, seq), question: e.question, choices: e.choices } }));
  }

  #onGateOpened(e: GateOpened, seq: number): void {
    const verdict = this.#ledger.apply(e);
    if (verdict.kind === "violation") {
      this.#violations.push(verdict.violation);
      return;
    }
    const { gate } = e;
    const toolExecutionId = gate?.subject?.toolExecutionId ?? e.cause?.toolExecutionId;
    if (gate?.id === undefined || toolExecutionId === undefined) return;
    const slot: GateSlot = gate.kind === PERMISSION_GATE_KIND ? "permissionGate" : "inputGate";
    const key = this.#update(e, toolExecutionId, (f) => ({
      ...f,
      [slot]: { ...ref(e, seq), id: gate.id!, kind: gate.kind, resolver: gate.resolver, prompt: gate.prompt },
    }));
    if (key === undefined) return;
    this.#gates.set(`${e.sessionId} ${gate.id}`, { key, slot });
    if (gate.subject?.toolUseId && e.loopId !== undefined) this.#byToolUse.set(`${e.loopId} ${gate.subject.toolUseId}`, key);
  }

  #onGateResolved(e: GateResolved, seq: number): void {
    const verdict = this.#ledger.apply(e);
    if (verdict.kind === "violation") {
      this.#violations.push(verdict.violation);
      return;
    }
    if (verdict.kind !== "resolved") return;
    const target = this.#gates.get(`${e.sessionId} ${e.gateId}`);
    const prev = target && this.#entries.get(target.key);
    if (!target || !prev) return;
    const gate = prev[target.slot];
    // A newer gate in the same slot replaced this one, or it already resolved.
    if (!gate || gate.id !== e.gateId || gate.resolution) return;
    const resolution = { ...ref(e, seq), reason: e.reason, action: e.action, resolver: e.resolver };
    this.#put(target.key, { ...factsOf(prev), [target.slot]: { ...gate, resolution } });
  }

  /**
   * A StepDone finalizes every call of its step. Its messages name calls by the model
   * provider's id only; a tool message and tool_use block are attached to a call where a
   * gate's subject linked that id to the call, and nowhere else.
   */
  #onStepDone(e: StepDone, seq: number): void {
    const { loopId, stepId } = e;
    if (loopId === undefined || stepId === undefined) return;
    const linked = new Map<string, { toolName?: string | undefined; message?: Extract<StepMessage, { role: "tool" }> }>();
    for (const m of e.messages) {
      if (m.role === "assistant") {
        for (const b of m.blocks ?? []) {
          if (b.type === "tool_use" && b.id) linked.set(b.id, { ...linked.get(b.id), toolName: b.name });
        }
      } else if (m.role === "tool" && m.toolUseId) linked.set(m.toolUseId, { ...linked.get(m.toolUseId), message: m });
    }
    const results = new Map<string, Partial<ResultFact>>();
    for (const [toolUseId, link] of linked) {
      const key = this.#byToolUse.get(`${loopId} ${toolUseId}`);
      if (key !== undefined) results.set(key, { toolUseId, toolName: link.toolName, message: link.message, isError: link.message?.isError });
    }
    for (const key of new Set([...(this.#byStep.get(stepKeyOf(loopId, stepId)) ?? []), ...results.keys()])) {
      const prev = this.#entries.get(key);
      // A call known only from previews is not the journal's to finalize.
      if (!prev || prev.result || prev.liveOnly) continue;
      this.#put(key, { ...factsOf(prev), result: { ...ref(e, seq), stepId, ...results.get(key) } });
    }
  }

  #onTurnEnded(e: Extract<JetloopEvent, { type: "TurnDone" | "TurnFailed" | "TurnInterrupted" }>, seq: number): void {
    const { loopId, turnId } = e;
    if (loopId === undefined || turnId === undefined) return;
    const turnKey = turnKeyOf(loopId, turnId);
    if (this.#turns.has(turnKey)) return;
    const outcome: TurnOutcome = {
      ...ref(e, seq),
      loopId,
      turnId,
      kind: e.type === "TurnDone" ? "done" : e.type === "TurnFailed" ? "failed" : "interrupted",
      turnIndex: e.turnIndex,
      error: e.type === "TurnFailed" ? e.err : undefined,
    };
    this.#turns.set(turnKey, outcome);
    for (const key of this.#byTurn.get(turnKey) ?? []) {
      const a = this.#entries.get(key);
      if (a) this.#put(key, factsOf(a));
    }
  }

  // --- entries -------------------------------------------------------------------

  /**
   * Applies `change` to the call's facts, creating the entry from the event's
   * coordinates if needed. A live-only entry takes the coordinates of the first enduring
   * event that names it. Returns the key, or undefined when the event lacks the
   * coordinates a new entry needs.
   */
  #update(e: Header, toolExecutionId: string, change: (facts: ToolFacts) => ToolFacts): string | undefined {
    if (e.loopId === undefined) return undefined;
    const key = keyOf(e.loopId, toolExecutionId);
    const prev = this.#entries.get(key);
    let facts: ToolFacts | undefined;
    if (prev && !prev.liveOnly) facts = factsOf(prev);
    else {
      const coords = coordinatesOf(e, toolExecutionId);
      facts = coords && { ...coords, live: prev?.live };
    }
    if (!facts) return undefined;
    const next = change(facts);
    // Nothing new (a fact kept from an earlier event): keep the same object.
    if (next !== facts || !prev || prev.liveOnly) this.#put(key, next);
    return key;
  }

  /** Stores the view of `facts` (or drops a settled live-only call) and records the change. */
  #put(key: string, facts: ToolFacts): void {
    const prev = this.#entries.get(key);
    const turnKey = turnKeyOf(facts.loopId, facts.turnId);
    const view = toView(facts, this.#turns.get(turnKey));
    if (prev && prev.turnId !== facts.turnId) this.#byTurn.get(turnKeyOf(prev.loopId, prev.turnId))?.delete(key);
    if (!view) {
      this.#entries.delete(key);
      this.#byTurn.get(turnKey)?.delete(key);
      this.#changed.delete(key);
      if (prev) this.#removed.set(key, { loopId: prev.loopId, toolExecutionId: prev.toolExecutionId });
      return;
    }
    this.#entries.set(key, view);
    let keys = this.#byTurn.get(turnKey);
    if (!keys) this.#byTurn.set(turnKey, (keys = new Set()));
    keys.add(key);
    const stepKey = stepKeyOf(facts.loopId, facts.stepId);
    let stepKeys = this.#byStep.get(stepKey);
    if (!stepKeys) this.#byStep.set(stepKey, (stepKeys = new Set()));
    stepKeys.add(key);
    this.#removed.delete(key);
    this.#changed.set(key, view);
  }

  #flush(status: ApplyResult["status"]): ApplyResult {
    const violations = this.#violations;
    const result: ApplyResult = {
      status,
      changed: [...this.#changed.values()],
      removed: [...this.#removed.values()],
      ...(violations.length > 0 ? { violations } : {}),
    };
    this.#changed = new Map();
    this.#removed = new Map();
    this.#violations = [];
    return result;
  }
}

/** A projection of `deliveries`, applied in order: e.g. a replay of the journal. */
export function rebuildToolActivity(deliveries: Iterable<ToolActivityDelivery>): ToolActivityProjection {
  return new ToolActivityProjection().applyAll(deliveries);
}

function coordinatesOf(e: Header, toolExecutionId: string): Coordinates | undefined {
  if (e.loopId === undefined || e.turnId === undefined || e.stepId === undefined) return undefined;
  return { sessionId: e.sessionId, loopId: e.loopId, toolExecutionId, turnId: e.turnId, stepId: e.stepId };
}

function liveStart(e: ToolCallStarted) {
  return { eventId: e.eventId, at: e.createdAt, toolName: e.toolName, summary: e.summary };
}

function liveCompletion(e: ToolCallCompleted) {
  return { eventId: e.eventId, at: e.createdAt, isError: e.isError, resultPreview: e.resultPreview };
}
