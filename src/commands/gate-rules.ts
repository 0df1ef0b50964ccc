/**
 * The answer path's decisions, apart from NATS: which gate an answer names, whether it is
 * taken, refused, or a repeat of a command already accepted, and what the journal records
 * when a gate closes (an answer, its timeout, its owner closing it, or a successor closing
 * a gate a dead actor left open). `GateServer` does the publishing and replying around
 * these. Pure and synchronous, so every interleaving can be fuzzed (test/unit).
 *
 * A gate's life: open → resolving (claimed by one answer, its timeout or a close) →
 * resolved (its GateResolved written), or back to open when nothing was written. Exactly
 * one claim at a time, so a gate is resolved once, ever.
 */
import { CommandError } from "../errors.js";
import type { PermissionEffect } from "../events/catalogue.js";
import { AGENCY_USER } from "../events/header.js";
import type { GateAudit, GatePrompt } from "../events/gate.js";
import type { PermissionRequestInput } from "../events/request.js";
import { type Answer, type AnswerOutcome, decodeAnswer, type Reply } from "./protocol.js";
import type { RuleCandidate } from "./workspace-rules.js";

/** Where a gate belongs in the session: its turn, step and tool execution. */
export interface StepCoordinates {
  readonly turnId: string;
  readonly stepId: string;
  readonly toolExecutionId: string;
  /**
   * The model provider's id of the tool call (`toolu_…`), recorded in the gate's subject:
   * the one link from a StepDone's messages to the tool execution.
   */
  readonly toolUseId?: string;
}

/** The permission controls of the Go gate model (gate.ApprovalAction): the only actions a permission gate offers. */
export const PERMISSION_ACTIONS = ["Approve", "Approve always for this workspace", "Deny"] as const satisfies readonly PermissionAction[];
/** The controls a permission gate offers, in the Go runtime's words. */
export type PermissionAction = "Approve" | "Approve always for this workspace" | "Deny";
/** What each permission control means to the tool call; "always" also persists the gate's rule candidates first (workspace-rules.ts). */
const EFFECT_OF: Record<PermissionAction, PermissionEffect> = { Approve: "approve", "Approve always for this workspace": "approve", Deny: "deny" };
/** The control that persists workspace rules before the approval is journaled. */
export const APPROVE_ALWAYS: PermissionAction = "Approve always for this workspace";
/**
 * The controls a permission gate offers unless told otherwise: the Go runtime's three
 * (gate.ApprovalControls), all honest, as its interactive evaluator requires: "always" has
 * a rule writer behind it (the namespace's rules bucket).
 */
export const DEFAULT_PERMISSION_ACTIONS: readonly PermissionAction[] = PERMISSION_ACTIONS;

/** What the rules need to know of a gate. */
export interface GateState extends StepCoordinates {
  readonly gateId: string;
  readonly kind: "permission" | "input";
  /** The choices of an input gate; an answer must be one of them. Never empty. */
  readonly choices?: readonly string[] | undefined;
  /** The controls of a permission gate; an answer must name one of them. Default Approve and Deny. */
  readonly controls?: readonly PermissionAction[] | undefined;
  /** What the audit of a permission gate's resolution records. */
  readonly requirementDescriptions?: string[] | undefined;
  /** The reusable candidates the gate displayed (its unmet requirements'): what "always" persists. */
  readonly candidates?: readonly RuleCandidate[] | undefined;
}

/** Why a gate closed: the Go gate model's close reasons jetloop writes. */
export type CloseReason = "answered" | "policy_response" | "owner_closed" | "abandoned";

/** How a claimed gate is to be resolved. */
export type Resolution =
  | { readonly reason: "answered"; readonly answer: Answer; /** The permission control chosen. */ readonly action?: PermissionAction | undefined }
  | { readonly reason: Exclude<CloseReason, "answered"> };

/** How many resolved gates and accepted commands are remembered for repeats. */
export const ANSWER_MEMORY = 10_000;

/** Why a gate closed without an answer; also the reason of its denial. */
export const NO_ANSWER = "no answer in time";

/** What to do with an answer command: reply at once, resolve the gate first, or wait for the first outcome of its command id. */
export type Verdict<G extends GateState> =
  | { readonly reply: Reply }
  | { readonly resolve: G; readonly resolution: Extract<Resolution, { reason: "answered" }> }
  | { readonly wait: string };

const refused = (code: Extract<Reply, { status: "refused" }>["code"], message: string, outcome?: AnswerOutcome): Reply =>
  outcome ? { status: "refused", code, message, outcome } : { status: "refused", code, message };

type Entry<G> = { readonly gate: G; state: "open" | "resolving" } | { readonly gate: G; state: "resolved"; readonly outcome: AnswerOutcome };
/** A command id's state, with the answer it was accepted with and the gate it claimed: a repeat must carry the same answer for the same gate. */
type Accepted = { readonly answer: string; readonly gateId: string; readonly toolExecutionId: string };
type CommandState = (Accepted & { readonly state: "pending" }) | (Accepted & { readonly state: "done"; readonly reply: Reply });

/**
 * Every gate of one loop this server opened (open and resolving ones always; resolved ones
 * up to ANSWER_MEMORY, oldest forgotten first) and the command ids accepted, bound to their
 * gate from the moment of acceptance, with the answer they carried.
 */
export class GateBook<G extends GateState> {
  readonly #gates = new Map<string, Entry<G>>();
  /** Tool execution id → its latest gate id. */
  readonly #byExecution = new Map<string, string>();
  readonly #commands = new Map<string, CommandState>();

  open(gate: G): void {
    this.#gates.set(gate.gateId, { gate, state: "open" });
    this.#byExecution.set(gate.toolExecutionId, gate.gateId);
  }

  /** The gate's state, or undefined when this book never opened it (or forgot it). */
  stateOf(gateId: string): Entry<G>["state"] | undefined {
    return this.#gates.get(gateId)?.state;
  }

  /**
   * Forgets a gate that never became public (its records were not written): nothing can
   * answer it. One claimed meanwhile is forgotten too; its claimant learns it from the
   * failed open and forgets its command (`forgetCommand`).
   */
  discard(gate: G): void {
    const entry = this.#gates.get(gate.gateId);
    if (entry?.gate !== gate || entry.state === "resolved") return;
    this.#gates.delete(gate.gateId);
    if (this.#byExecution.get(gate.toolExecutionId) === gate.gateId) this.#byExecution.delete(gate.toolExecutionId);
  }

  /** True when `gate` was still open: it is claimed by its timeout now, the caller's to resolve. */
  expire(gate: G): boolean {
    return this.#claim(gate);
  }

  /** Claims every open gate (the server stops); returns them, the caller's to resolve. */
  closeAll(): G[] {
    const gates: G[] = [];
    for (const e of this.#gates.values()) if (e.state === "open" && this.#claim(e.gate)) gates.push(e.gate);
    return gates;
  }

  /**
   * Judges an answer command's bytes. A malformed command, a gate this loop never opened,
   * a resolving or resolved gate, the wrong kind of answer, a choice or control not
   * offered is refused (refusals are not remembered). A command id already accepted waits
   * for, or gets, its first outcome. Otherwise the gate is claimed for this command, the
   * caller's to resolve, then to `settle` or, when nothing was written, to `reopen`.
   */
  judge(data: Uint8Array): Verdict<G> {
    let a: Answer;
    try {
      a = decodeAnswer(data);
    } catch (e) {
      if (e instanceof CommandError) return { reply: refused("COMMAND_INVALID", e.message) };
      throw e;
    }
    const earlier = this.#commands.get(a.commandId);
    // The same id with another answer is no repeat: it must not be told the first one's outcome.
    if (earlier && !isRepeat(earlier, a)) return { reply: refused("COMMAND_INVALID", `command id ${a.commandId} was used for another answer`) };
    if (earlier?.state === "pending") return { wait: a.commandId };
    if (earlier) return { reply: earlier.reply.status === "ok" ? { ...earlier.reply, duplicate: true } : earlier.reply };
    const key = a.gateId ?? a.toolExecutionId!;
    const entry = this.#gates.get(a.gateId ?? this.#byExecution.get(a.toolExecutionId!) ?? "");
    if (!entry) return { reply: refused("GATE_UNKNOWN", `no gate ${key} was opened on this loop`) };
    if (entry.state === "resolving") return { reply: refused("GATE_RESOLVED", `gate ${entry.gate.gateId} is being resolved`) };
    if (entry.state === "resolved") return { reply: refused("GATE_RESOLVED", `gate ${entry.gate.gateId} is already resolved`, entry.outcome) };
    const gate = entry.gate;
    if (a.gateId !== undefined && a.toolExecutionId !== undefined && a.toolExecutionId !== gate.toolExecutionId) {
      return { reply: refused("COMMAND_INVALID", `gate ${gate.gateId} guards another tool execution than ${a.toolExecutionId}`) };
    }
    if (a.kind !== gate.kind) return { reply: refused("COMMAND_INVALID", `gate ${gate.gateId} asks for ${gate.kind}, not ${a.kind}`) };
    let action: PermissionAction | undefined;
    if (a.kind === "input") {
      if (gate.choices && !gate.choices.includes(a.answer)) return { reply: refused("COMMAND_INVALID", "the answer is not one of the choices") };
    } else {
      const chosen = controlFor(gate, a);
      if (typeof chosen !== "string") return { reply: refused("COMMAND_INVALID", chosen.message) };
      action = chosen;
    }
    this.#claim(gate);
    this.#commands.set(a.commandId, { state: "pending", ...accepted(gate, a) });
    return { resolve: gate, resolution: { reason: "answered", answer: a, action } };
  }

  /** Forgets a command id still pending: its gate was discarded, nothing written (the same id may try again). */
  forgetCommand(commandId: string): void {
    if (this.#commands.get(commandId)?.state === "pending") this.#commands.delete(commandId);
  }

  /** A claimed gate whose resolution was not written: open again, its command id forgotten (a retry may try again). */
  reopen(gate: G, commandId?: string): void {
    const entry = this.#gates.get(gate.gateId);
    if (entry?.gate !== gate || entry.state !== "resolving") throw new Error(`gate ${gate.gateId} is not being resolved`);
    entry.state = "open";
    if (commandId !== undefined && this.#commands.get(commandId)?.state === "pending") this.#commands.delete(commandId);
  }

  /**
   * Records the resolution of a claimed gate, its GateResolved written at `journalSeq`; a
   * repeat of its command gets the same reply. With `failure` the rest of the resolution
   * (its PermissionDecided) could not be written: the gate stays resolved, failed closed
   * (a permission counts as denied), and the command's reply is that failure.
   */
  settle(gate: G, resolution: Resolution, journalSeq: number, failure?: string): Reply {
    const entry = this.#gates.get(gate.gateId);
    if (entry?.gate !== gate || entry.state !== "resolving") throw new Error(`gate ${gate.gateId} is not being resolved`);
    const outcome = failure === undefined ? outcomeOf(gate, resolution, journalSeq) : { ...outcomeOf(gate, { reason: "policy_response" }, journalSeq), action: "deny" };
    this.#gates.delete(gate.gateId);
    this.#gates.set(gate.gateId, { gate, state: "resolved", outcome });
    const reply = failure === undefined ? outcome : refused("COMMAND_FAILED", failure.slice(0, 1000) || "failed");
    if (resolution.reason === "answered") this.#commands.set(resolution.answer.commandId, { state: "done", ...accepted(gate, resolution.answer), reply });
    this.#forget();
    return reply;
  }

  #claim(gate: G): boolean {
    const entry = this.#gates.get(gate.gateId);
    if (entry?.gate !== gate || entry.state !== "open") return false;
    entry.state = "resolving";
    return true;
  }

  /** Forgets the oldest resolved gates and finished commands past ANSWER_MEMORY; open and resolving ones stay. */
  #forget(): void {
    if (this.#gates.size > ANSWER_MEMORY) {
      for (const [id, e] of this.#gates) {
        if (this.#gates.size <= ANSWER_MEMORY) break;
        if (e.state !== "resolved") continue;
        this.#gates.delete(id);
        if (this.#byExecution.get(e.gate.toolExecutionId) === id) this.#byExecution.delete(e.gate.toolExecutionId);
      }
    }
    if (this.#commands.size > ANSWER_MEMORY) {
      for (const [id, c] of this.#commands) {
        if (this.#commands.size <= ANSWER_MEMORY) break;
        if (c.state === "done") this.#commands.delete(id);
      }
    }
  }
}

/** What a command says but its id and how it names its gate, canonically. */
function answerKey(a: Answer): string {
  const { commandId: _id, gateId: _gate, toolExecutionId: _execution, ...rest } = a;
  return JSON.stringify(Object.entries(rest).sort(([x], [y]) => (x < y ? -1 : 1)));
}

const accepted = (gate: GateState, a: Answer): Accepted => ({ answer: answerKey(a), gateId: gate.gateId, toolExecutionId: gate.toolExecutionId });

/** A repeat: the same answer naming the same gate (by its id or its tool execution), not a newer gate of that execution or another answer. */
function isRepeat(earlier: Accepted, a: Answer): boolean {
  if (earlier.answer !== answerKey(a)) return false;
  return a.gateId !== undefined ? a.gateId === earlier.gateId : a.toolExecutionId === earlier.toolExecutionId;
}

/** The control a permission answer chooses: its `action`, else the first offered control with its `effect`. */
function controlFor(gate: GateState, a: Extract<Answer, { kind: "permission" }>): PermissionAction | { message: string } {
  const offered = gate.controls ?? DEFAULT_PERMISSION_ACTIONS;
  if (a.action !== undefined) {
    const chosen = offered.find((c) => c === a.action);
    if (chosen === undefined) return { message: `"${a.action}" is not one of the gate's controls` };
    if (a.effect !== undefined && EFFECT_OF[chosen] !== a.effect) return { message: `the control "${chosen}" does not ${a.effect}` };
    return chosen;
  }
  const byEffect = offered.find((c) => EFFECT_OF[c] === a.effect);
  return byEffect ?? { message: `the gate offers no control that does ${a.effect}` };
}

/** The effect of a permission control. */
export const effectOf = (action: PermissionAction): PermissionEffect => EFFECT_OF[action];

function outcomeOf(gate: GateState, r: Resolution, journalSeq: number): AnswerOutcome {
  const base = { status: "ok" as const, gateId: gate.gateId, toolExecutionId: gate.toolExecutionId, journalSeq, duplicate: false };
  if (r.reason === "answered") {
    if (r.answer.kind === "input") return { ...base, action: "answered" };
    return { ...base, action: effectOf(r.action!), control: r.action };
  }
  // A permission nobody answered in time is denied; any other close is named by its reason.
  return { ...base, action: r.reason === "policy_response" && gate.kind === "permission" ? "deny" : r.reason };
}

/** The gate a GateOpened opens: resolved by the loop, blocking the tool call, resumed on an answer. */
export function openedGate(gateId: string, kind: GateState["kind"], c: StepCoordinates, prompt: GatePrompt) {
  return {
    id: gateId,
    kind: kind === "permission" ? "harness.permission" : "harness.ask_user",
    resolver: "loop",
    blocks: "tool_call",
    effect: "resume",
    subject: { toolExecutionId: c.toolExecutionId, toolUseId: c.toolUseId, turnId: c.turnId, stepId: c.stepId },
    prompt,
  };
}

/** A permission gate's prompt: its title (else the request's summary, else the tool's name) and its controls. */
export function permissionPrompt(request: PermissionRequestInput, title: string | undefined, controls: readonly PermissionAction[] = DEFAULT_PERMISSION_ACTIONS): GatePrompt {
  return { title: title ?? request.summary ?? request.toolName, controls: controls.map((c) => ({ action: c, label: c })) };
}

/** An input gate's prompt: the question, and a control per choice. */
export function inputPrompt(question: string, choices: readonly string[] | undefined): GatePrompt {
  return { body: question, controls: choices?.map((c) => ({ action: c, label: c })) };
}

/**
 * Why a gate's options cannot be opened, or undefined: permission controls are the Go
 * model's three actions, each once, at least one; an input gate's choices, when given,
 * are at least one non-empty text, each once (an empty list is refused, never read as
 * free text, so the journal and the checks agree).
 */
export function gateOptionsProblem(kind: GateState["kind"], list: readonly string[] | undefined): { option: string; message: string } | undefined {
  if (list === undefined) return undefined;
  const option = kind === "permission" ? "controls" : "choices";
  if (!Array.isArray(list) || list.length === 0) return { option, message: "must list at least one; omit it for the default" };
  if (new Set(list).size !== list.length) return { option, message: "must not repeat an entry" };
  for (const c of list) {
    if (typeof c !== "string" || c === "") return { option, message: "entries are non-empty strings" };
    if (kind === "permission" && !PERMISSION_ACTIONS.includes(c as PermissionAction)) {
      return { option, message: `"${c}" is not a permission control of the Go gate model (${PERMISSION_ACTIONS.join(", ")})` };
    }
  }
  return undefined;
}

/** The reply to a command whose handling failed (the journal refused the resolution). */
export function failureReply(e: unknown): Reply {
  return refused("COMMAND_FAILED", e instanceof Error && e.message ? e.message.slice(0, 1000) : "failed");
}

/**
 * What the journal records when a gate closes: the GateResolved fields and, for an
 * answered or timed-out permission gate, the PermissionDecided ones (without the step's
 * coordinates). With no answer in time a permission is denied by policy. A gate closed by
 * its owner or by a successor records only its reason, as the Go runtime's CloseGate does:
 * no action, so no decision either.
 */
export function resolutionOf(gate: GateState, r: Resolution) {
  const a = r.reason === "answered" ? r.answer : undefined;
  const cause = a ? { commandId: a.commandId, toolExecutionId: gate.toolExecutionId, agency: AGENCY_USER } : { toolExecutionId: gate.toolExecutionId };
  if (r.reason === "owner_closed" || r.reason === "abandoned") {
    return { resolved: { cause, gateId: gate.gateId, resolver: "loop", reason: r.reason }, decided: undefined };
  }
  // A chosen choice is an action; free text stays with the actor, out of the journal.
  const action = r.reason === "answered" ? (r.answer.kind === "permission" ? r.action : gate.choices ? r.answer.answer : "answered") : gate.kind === "permission" ? "Deny" : undefined;
  const audit: GateAudit =
    gate.kind === "permission" ? { kind: "permission", data: { requirementDescriptions: gate.requirementDescriptions } } : { kind: "ask_user", data: {} };
  const resolved = {
    cause,
    gateId: gate.gateId,
    resolver: "loop",
    reason: r.reason,
    action,
    source: a ? { kind: "user" } : { kind: "policy", reason: NO_ANSWER },
    audit,
  };
  if (gate.kind !== "permission") return { resolved, decided: undefined };
  const effect: PermissionEffect = r.reason === "answered" ? effectOf(r.action!) : "deny";
  const decided = { cause, toolExecutionId: gate.toolExecutionId, effect, reason: a?.kind === "permission" ? a.reason : NO_ANSWER };
  return { resolved, decided };
}
