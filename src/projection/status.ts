/**
 * The status of one tool call, derived from its facts alone. Enduring facts decide the
 * phase; previews only refine a call that waits on no one into running or
 * completed, and only until the call settles.
 */
import type { GateFact, InputFact, ToolActivity, ToolStatus, TurnOutcome } from "./types.js";

/** The facts of one call: everything in a ToolActivity except what is derived. */
export type ToolFacts = Omit<ToolActivity, "status" | "liveOnly" | "toolName" | "turnOutcome" | "endedWithoutResult">;

type PermissionPhase = "none" | "requested" | "approved" | "denied" | "closed";
type InputPhase = "none" | "requested" | "answered" | "denied" | "closed";

/** The gate kind that asks for permission; any other gate guarding a call asks for input. */
export const PERMISSION_GATE_KIND = "harness.permission";

// Gate actions are the controls' actions as the runtime writes them: "Approve",
// "Approve always for this workspace", "Deny".
const APPROVE = /^approve\b/i;
const DENY = /^deny\b/i;

/** A PermissionDecided is the loop's own record and wins over the gate that fed it. */
function permissionPhase(f: ToolFacts): PermissionPhase {
  if (f.decision?.effect) return f.decision.effect === "approve" ? "approved" : "denied";
  const resolution = f.permissionGate?.resolution;
  if (resolution) return APPROVE.test(resolution.action ?? "") ? "approved" : DENY.test(resolution.action ?? "") ? "denied" : "closed";
  return f.permissionGate || f.request ? "requested" : "none";
}

function inputPhase(gate: GateFact | undefined, input: InputFact | undefined): InputPhase {
  if (gate && !gate.resolution) return "requested";
  const resolution = gate?.resolution;
  // A question asked after the gate closed is a new question.
  if (resolution && !(input && input.journalSeq > resolution.journalSeq)) {
    if (DENY.test(resolution.action ?? "")) return "denied";
    return resolution.reason === "answered" ? "answered" : "closed";
  }
  return input ? "requested" : "none";
}

/** Settled: StepDone recorded the result, or the turn ended. Previews no longer apply. */
export function isSettled(f: ToolFacts, turn: TurnOutcome | undefined): boolean {
  return f.result !== undefined || turn !== undefined;
}

/** No enduring event names the call. */
export function hasNoDurableFact(f: ToolFacts): boolean {
  return !(f.request || f.decision || f.permissionGate || f.input || f.inputGate || f.result);
}

export function deriveStatus(f: ToolFacts): ToolStatus {
  const permission = permissionPhase(f);
  const input = inputPhase(f.inputGate, f.input);
  if (permission === "denied" || input === "denied") return "denied";
  if (f.result) return "finalized";
  if (permission === "requested") return "awaiting_approval";
  if (input === "requested") return "awaiting_input";
  // Only a call waiting on no one can be running: a start seen before the approval is
  // delivered (the live path can overtake the journal) shows once the approval arrives.
  if (f.live?.completed) return "completed";
  if (f.live?.started) return "running";
  return permission === "approved" ? "approved" : "pending";
}

/**
 * The view of a call: its facts, the live overlay unless settled, and the derived
 * fields. Returns undefined for a live-only call that has settled: nothing durable
 * remains to show.
 */
export function toView(facts: ToolFacts, turn: TurnOutcome | undefined): ToolActivity | undefined {
  let f = facts;
  if (isSettled(f, turn) && f.live) {
    const { live: _dropped, ...rest } = f;
    f = rest;
  }
  const liveOnly = hasNoDurableFact(f);
  if (liveOnly && !f.live) return undefined;
  return {
    ...f,
    status: deriveStatus(f),
    liveOnly,
    toolName:
      f.result?.toolName ?? f.request?.request.toolName ?? f.live?.started?.toolName,
    turnOutcome: turn,
    endedWithoutResult: turn !== undefined && f.result === undefined,
  };
}

/** The facts inside a view. */
export function factsOf(view: ToolActivity): ToolFacts {
  const { status: _s, liveOnly: _l, toolName: _n, turnOutcome: _t, endedWithoutResult: _e, ...facts } = view;
  return facts;
}
