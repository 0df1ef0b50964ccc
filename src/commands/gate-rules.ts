/**
 * The answer path's decisions, apart from NATS: which open gate an answer names, whether
 * it is taken, refused or a repeat of an earlier command, and what the journal records
 * when a gate closes (an answer, or the denial of a gate nobody answered in time).
 * `GateServer` does the publishing and the replying around these.
 */
import { CommandError } from "../errors.js";
import type { PermissionEffect } from "../events/catalogue.js";
import { AGENCY_USER } from "../events/header.js";
import type { GateAudit, GatePrompt } from "../events/gate.js";
import type { PermissionRequest } from "../events/request.js";
import { type Answer, type AnswerOutcome, decodeAnswer, type Reply } from "./protocol.js";

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

/** What the rules need to know of an open gate. */
export interface GateState extends StepCoordinates {
  readonly gateId: string;
  readonly kind: "permission" | "input";
  /** The choices of an input gate; an answer must be one of them. */
  readonly choices?: string[] | undefined;
  /** What the audit of a permission gate's resolution records. */
  readonly requirementDescriptions?: string[] | undefined;
}

/** How many answered commands and resolved gates are remembered for repeats. */
export const ANSWER_MEMORY = 10_000;

/** Why a gate closed without an answer; also the reason of its denial. */
export const NO_ANSWER = "no answer in time";

// The runtime's permission controls: the gate's actions are these words.
const APPROVE = "Approve";
const DENY = "Deny";
const PERMISSION_CONTROLS: NonNullable<GatePrompt["controls"]> = [
  { action: APPROVE, label: APPROVE },
  { action: DENY, label: DENY },
];

/** What to do with an answer command: reply at once, or resolve the gate first. */
export type Verdict<G extends GateState> = { readonly reply: Reply } | { readonly resolve: G; readonly answer: Answer };

const refused = (code: Extract<Reply, { status: "refused" }>["code"], message: string): Reply => ({ status: "refused", code, message });

/**
 * The open gates of one loop, the outcomes of answered commands and the gates already
 * resolved (both bounded by ANSWER_MEMORY, oldest forgotten first).
 */
export class GateBook<G extends GateState> {
  readonly #open = new Map<string, G>();
  readonly #resolved = new Map<string, AnswerOutcome>();
  readonly #commands = new Map<string, AnswerOutcome>();

  open(gate: G): void {
    this.#open.set(gate.gateId, gate);
  }

  /** True when `gate` was still open: it is closed now and is the caller's to resolve. */
  expire(gate: G): boolean {
    if (this.#open.get(gate.gateId) !== gate) return false;
    this.#open.delete(gate.gateId);
    return true;
  }

  /** Closes every gate (the server stops); returns them so their timers can be cleared. */
  closeAll(): G[] {
    const gates = [...this.#open.values()];
    this.#open.clear();
    return gates;
  }

  /**
   * Judges an answer command's bytes. A malformed command, an unknown or resolved gate, the
   * wrong kind of answer or a choice not offered is refused (refusals are not remembered);
   * a command id that was taken gets its outcome again, marked duplicate. Otherwise the gate
   * is claimed (closed, so a concurrent second answer is refused) and is the caller's to
   * resolve, then to `settle` or, when nothing was recorded, to `reopen`.
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
    if (earlier) return { reply: { ...earlier, duplicate: true } };
    const gate = this.#find(a);
    if (!gate) {
      const key = a.gateId ?? a.toolExecutionId!;
      return {
        reply: this.#resolved.has(key) ? refused("GATE_RESOLVED", `gate ${key} is already resolved`) : refused("GATE_UNKNOWN", `no open gate ${key} on this loop`),
      };
    }
    if (a.kind !== gate.kind) return { reply: refused("COMMAND_INVALID", `gate ${gate.gateId} asks for ${gate.kind}, not ${a.kind}`) };
    if (a.kind === "input" && gate.choices && !gate.choices.includes(a.answer)) {
      return { reply: refused("COMMAND_INVALID", "the answer is not one of the choices") };
    }
    this.#open.delete(gate.gateId);
    return { resolve: gate, answer: a };
  }

  /** A claimed gate whose resolution was not recorded: it stays answerable. */
  reopen(gate: G): void {
    this.open(gate);
  }

  /** Records the outcome of a resolved gate; a repeat of the command gets it again. */
  settle(gate: G, a: Answer, journalSeq: number): AnswerOutcome {
    const outcome: AnswerOutcome = {
      status: "ok",
      gateId: gate.gateId,
      toolExecutionId: gate.toolExecutionId,
      action: a.kind === "permission" ? a.effect : "answered",
      journalSeq,
      duplicate: false,
    };
    remember(this.#commands, a.commandId, outcome);
    remember(this.#resolved, gate.gateId, outcome);
    remember(this.#resolved, gate.toolExecutionId, outcome);
    return outcome;
  }

  #find(a: Answer): G | undefined {
    if (a.gateId) return this.#open.get(a.gateId);
    for (const g of this.#open.values()) if (g.toolExecutionId === a.toolExecutionId) return g;
    return undefined;
  }
}

function remember<K, V>(map: Map<K, V>, key: K, value: V): void {
  map.set(key, value);
  if (map.size > ANSWER_MEMORY) map.delete(map.keys().next().value!);
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

/** A permission gate's prompt: its title (else the request's summary, else the tool's name) and Approve/Deny. */
export function permissionPrompt(request: PermissionRequest, title: string | undefined): GatePrompt {
  return { title: title ?? request.summary ?? request.toolName, controls: PERMISSION_CONTROLS };
}

/** An input gate's prompt: the question, and a control per choice. */
export function inputPrompt(question: string, choices: string[] | undefined): GatePrompt {
  return { body: question, controls: choices?.map((c) => ({ action: c, label: c })) };
}

/** The reply to a command whose handling failed (the journal refused the resolution). */
export function failureReply(e: unknown): Reply {
  return refused("COMMAND_FAILED", e instanceof Error && e.message ? e.message.slice(0, 1000) : "failed");
}

/**
 * What the journal records when a gate closes: the GateResolved fields and, for a
 * permission gate, the PermissionDecided ones (without the step's coordinates). With no
 * answer the gate closed on its timeout: a permission is denied by policy.
 */
export function resolutionOf(gate: GateState, a: Answer | undefined) {
  const cause = a ? { commandId: a.commandId, toolExecutionId: gate.toolExecutionId, agency: AGENCY_USER } : { toolExecutionId: gate.toolExecutionId };
  // A chosen choice is an action; free text stays with the actor, out of the journal.
  const action =
    a === undefined ? (gate.kind === "permission" ? DENY : undefined) : a.kind === "permission" ? (a.effect === "approve" ? APPROVE : DENY) : gate.choices ? a.answer : "answered";
  const audit: GateAudit =
    gate.kind === "permission" ? { kind: "permission", data: { requirementDescriptions: gate.requirementDescriptions } } : { kind: "ask_user", data: {} };
  const resolved = {
    cause,
    gateId: gate.gateId,
    resolver: "loop",
    reason: a ? "answered" : "policy_response",
    action,
    source: a ? { kind: "user" } : { kind: "policy", reason: NO_ANSWER },
    audit,
  };
  if (gate.kind !== "permission") return { resolved };
  const effect: PermissionEffect = a?.kind === "permission" ? a.effect : "deny";
  const decided = { cause, toolExecutionId: gate.toolExecutionId, effect, reason: a?.kind === "permission" ? a.reason : NO_ANSWER };
  return { resolved, decided };
}
