/**
 * The shapes of the tool activity projection: the deliveries it reads, the facts it
 * keeps per tool call and the status a UI renders. See README.md in this folder.
 */
import type { PermissionEffect, TurnError } from "../events/catalogue.js";
import type { StepMessage } from "../events/content.js";
import type { GatePrompt } from "../events/gate.js";
import type { PermissionRequest } from "../events/request.js";
import type { GateViolation } from "./gate-ledger.js";

/**
 * One delivery as a subscription yields it: structurally the subscription's
 * `Delivery<E>`, so those can be passed as they are.
 */
export interface ToolActivityDelivery {
  /** A validated event. Types the projection does not use are allowed (and skipped). */
  readonly event: { readonly type: string };
  /** The journal (stream) sequence of an enduring event; 0 for an ephemeral preview. */
  readonly journalSeq: number;
}

/** What a UI renders for one tool call. The table in README.md says what leads where. */
export type ToolStatus =
  /** Permission requested (PermissionRequested or an open permission gate), not decided. */
  | "awaiting_approval"
  /** The user is asked (UserInputRequested or another open gate guarding the call). */
  | "awaiting_input"
  /** Approved, no result yet, no live start seen: the outcome is pending. Never "running". */
  | "approved"
  /** Known, waiting on no one, not approved by a recorded decision, no result yet. */
  | "pending"
  /** A live ToolCallStarted was seen on this connection, after any approval, no completion yet. */
  | "running"
  /** A live ToolCallCompleted preview was seen; StepDone has not recorded the result yet. */
  | "completed"
  /** PermissionDecided deny, or a gate guarding the call resolved with the deny action. */
  | "denied"
  /** StepDone holds the tool's result. */
  | "finalized";

/** The (loop id, tool execution id) pair a tool call is keyed by. */
export interface ToolKey {
  readonly loopId: string;
  readonly toolExecutionId: string;
}

/** Where a fact came from in the journal. */
export interface JournalRef {
  /** The journal sequence of the enduring event that set the fact. */
  readonly journalSeq: number;
  readonly eventId: string;
  /** The event's `createdAt`. */
  readonly at?: string | undefined;
}

/** PermissionRequested: the typed prepared request (tool name, summary, requirements). */
export interface RequestFact extends JournalRef {
  readonly request: PermissionRequest;
}

/** PermissionDecided. */
export interface DecisionFact extends JournalRef {
  /** Absent when the runtime recorded a decision without an effect. */
  readonly effect?: PermissionEffect | undefined;
  readonly reason?: string | undefined;
  /** A summary of what was decided on. */
  readonly subject?: string | undefined;
  /** A summary for the audit trail. */
  readonly audit?: string | undefined;
}

/** UserInputRequested. */
export interface InputFact extends JournalRef {
  readonly question?: string | undefined;
  readonly choices?: readonly string[] | undefined;
}

/** GateResolved for a gate guarding the call. */
export interface GateResolutionFact extends JournalRef {
  /** answered, policy_response, abandoned, owner_closed, restore_unavailable, … */
  readonly reason?: string | undefined;
  /** The chosen action (the gate control's `action`, e.g. Approve). */
  readonly action?: string | undefined;
  readonly resolver?: string | undefined;
}

/** GateOpened guarding the call, and its resolution once resolved. */
export interface GateFact extends JournalRef {
  readonly id: string;
  /** `harness.permission`, `harness.ask_user`, `harness.form`, `harness.open_url`, … */
  readonly kind?: string | undefined;
  readonly resolver?: string | undefined;
  /** The gate's prompt, as the runtime wrote it (title, body, controls, form schema). */
  readonly prompt?: GatePrompt | undefined;
  readonly resolution?: GateResolutionFact | undefined;
}

/**
 * The StepDone that finalized the call's step. The runtime's messages name a tool call by
 * the model provider's id (`toolUseId`), never by tool execution id; only a gate's
 * subject links the two, so the tool message and the model's tool_use block are attached
 * only where a gate did.
 */
export interface ResultFact extends JournalRef {
  readonly stepId: string;
  /** The model provider's id of the call, when a gate linked it. */
  readonly toolUseId?: string | undefined;
  /** The tool name from the model's tool_use block, when linked. */
  readonly toolName?: string | undefined;
  /** The tool result message, when linked. */
  readonly message?: Extract<StepMessage, { role: "tool" }> | undefined;
  readonly isError?: boolean | undefined;
}

/** A live ToolCallStarted preview: presentation only, never journaled. */
export interface LiveStartFact {
  readonly eventId: string;
  readonly at?: string | undefined;
  readonly toolName?: string | undefined;
  readonly summary?: string | undefined;
}

/** A live ToolCallCompleted preview: presentation only, never journaled. */
export interface LiveCompletionFact {
  readonly eventId: string;
  readonly at?: string | undefined;
  readonly isError: boolean;
  readonly resultPreview?: string | undefined;
}

/**
 * What this projection saw live on the current connection. Dropped when the call
 * settles (its result is recorded or its turn ends) and by `resetLive()`.
 */
export interface LiveOverlay {
  readonly started?: LiveStartFact | undefined;
  readonly completed?: LiveCompletionFact | undefined;
}

/** How a turn ended: TurnDone, TurnFailed or TurnInterrupted. */
export interface TurnOutcome extends JournalRef {
  readonly loopId: string;
  readonly turnId: string;
  readonly kind: "done" | "failed" | "interrupted";
  readonly turnIndex?: number | undefined;
  /** TurnFailed's error. */
  readonly error?: TurnError | undefined;
}

/**
 * One tool call as a UI renders it. Immutable: the projection replaces the object when
 * anything about the call changes, so reference equality tells a UI what to re-render.
 */
export interface ToolActivity extends ToolKey {
  readonly sessionId: string;
  readonly turnId: string;
  readonly stepId: string;
  readonly status: ToolStatus;
  /**
   * Known only from previews (no enduring event names the call yet): shown for
   * display, gone after `resetLive()` or once its turn ends without a durable fact.
   */
  readonly liveOnly: boolean;
  /** The tool name from the journal (result, step, request), else from the live start. */
  readonly toolName?: string | undefined;
  readonly request?: RequestFact | undefined;
  readonly decision?: DecisionFact | undefined;
  /** The latest `harness.permission` gate guarding the call. */
  readonly permissionGate?: GateFact | undefined;
  readonly input?: InputFact | undefined;
  /** The latest gate of any other kind guarding the call (ask-user, form, open-url, …). */
  readonly inputGate?: GateFact | undefined;
  /** Set once the StepDone of the call's step was applied: the call is finalized. */
  readonly result?: ResultFact | undefined;
  /** Absent once the call has settled. */
  readonly live?: LiveOverlay | undefined;
  /** The outcome of the call's turn, once the turn has ended. */
  readonly turnOutcome?: TurnOutcome | undefined;
  /**
   * The turn ended and StepDone never recorded a result for the call: e.g. "turn failed;
   * tool never produced a result" for a call left `approved`.
   */
  readonly endedWithoutResult: boolean;
}

/** What `apply` did with a delivery. */
export interface ApplyResult {
  /**
   * `applied`: consumed (an enduring delivery always advances `lastJournalSeq`);
   * `duplicate`: an enduring journal sequence at or below `lastJournalSeq`, or a preview
   * event id already seen; `ignored`: a preview the projection does not use (an unknown
   * type, or a call or turn that has settled).
   */
  readonly status: "applied" | "duplicate" | "ignored";
  /** Entries created or replaced, in their new form. */
  readonly changed: readonly ToolActivity[];
  /** Live-only entries dropped. */
  readonly removed: readonly ToolKey[];
  /**
   * GateResolved events that were not applied because they break the binding rule: from
   * another loop than the one whose GateOpened opened the gate, or a second resolution.
   */
  readonly violations?: readonly GateViolation[];
}
