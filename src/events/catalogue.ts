/**
 * The built-in event types: the Go runtime's tool events and the gate, step, turn, loop and
 * session events around them, each with every field the Go runtime defines for it. See
 * README.md in this folder for the model.
 */
import { z } from "zod";
import { wireField } from "../wire/wire.js";
import { checkCaptures, toolResultCaptureSchema, type ToolResultCapture } from "./capture.js";
import { aiMessageSchema, MAX_STEP_MESSAGES, stepMessageSchema, turnUsageSchema, userMessageSchema, type AIMessage, type StepMessage, type Usage, type UserMessage } from "./content.js";
import { gateAuditSchema, gateIdentity, gateSchema, gateSourceSchema, type Gate, type GateAudit, type GateSource } from "./gate.js";
import type { EventHeader } from "./header.js";
import { uuidSchema } from "./ids.js";
import { defineEventType, EventRegistry } from "./registry.js";
import { permissionRequestSchema, type PermissionRequest } from "./request.js";
import {
  agentRuntimeSchema,
  checkLoopRuntime,
  checkManifest,
  configFingerprintSchema,
  configManifestSchema,
  modelRuntimeSchema,
  type AgentRuntime,
  type ConfigFingerprint,
  type ConfigManifest,
  type ModelRuntime,
} from "./runtime.js";
import { text, utf8Length } from "./text.js";

/** The full Session/Loop/Turn/Step quartet. */
const STEP = { loopId: "required", turnId: "required", stepId: "required" } as const;
const TURN = { loopId: "required", turnId: "required", stepId: "forbidden" } as const;
const LOOP_ONLY = { loopId: "required", turnId: "forbidden", stepId: "forbidden" } as const;
/** Gates: which coordinates depends on the resolver, checked by `gateIdentity`. */
const GATE = { loopId: "optional", turnId: "optional", stepId: "optional" } as const;

// --- tool ---------------------------------------------------------------------

/** The definition of PermissionRequested (its schema, family, class and identity profile); the event is the PermissionRequested interface. */
export const PermissionRequested = defineEventType(
  {
    type: "PermissionRequested",
    family: "tool",
    class: "enduring",
    scope: "loop",
    identity: STEP,
    body: {
      toolExecutionId: uuidSchema,
      /** Written even when empty (`{}`): a pure tool asks with no requirements. */
      request: wireField(permissionRequestSchema.prefault({}), { always: true }),
    },
  },
  true,
);

/**
 * A gated ask is the gate lifecycle, not a decision: only approve or deny. (The runtime
 * reads any string here; jetloop refuses the others, as the tool events specification
 * says.) The runtime writes a decision without an effect too.
 */
export const permissionEffectSchema = z.enum(["approve", "deny"]);
/** A permission decision's effect. */
export type PermissionEffect = "approve" | "deny";

/** The definition of PermissionDecided (its schema, family, class and identity profile); the event is the PermissionDecided interface. */
export const PermissionDecided = defineEventType(
  {
    type: "PermissionDecided",
    family: "tool",
    class: "enduring",
    scope: "loop",
    identity: STEP,
    body: {
      toolExecutionId: uuidSchema,
      effect: permissionEffectSchema.optional(),
      reason: text().optional(),
      /** A summary of what was decided on, not the request itself. */
      subject: text().optional(),
      /** A summary for the audit trail. */
      audit: text().optional(),
    },
  },
  true,
);

/** The definition of UserInputRequested (its schema, family, class and identity profile); the event is the UserInputRequested interface. */
export const UserInputRequested = defineEventType(
  {
    type: "UserInputRequested",
    family: "tool",
    class: "enduring",
    scope: "loop",
    identity: STEP,
    body: {
      toolExecutionId: uuidSchema,
      question: text().optional(),
      choices: z.array(z.string()).optional(),
    },
  },
  true,
);

/** The definition of ToolCallStarted (its schema, family, class and identity profile); the event is the ToolCallStarted interface. */
export const ToolCallStarted = defineEventType(
  {
    type: "ToolCallStarted",
    family: "tool",
    class: "ephemeral",
    scope: "loop",
    identity: STEP,
    body: {
      toolExecutionId: uuidSchema,
      toolName: text().optional(),
      /** For display; capped at construction by `createEvent`. */
      summary: text().optional(),
    },
  },
  true,
);

/** The definition of ToolCallCompleted (its schema, family, class and identity profile); the event is the ToolCallCompleted interface. */
export const ToolCallCompleted = defineEventType(
  {
    type: "ToolCallCompleted",
    family: "tool",
    class: "ephemeral",
    scope: "loop",
    identity: STEP,
    body: {
      toolExecutionId: uuidSchema,
      isError: z.boolean().default(false),
      /** For display; capped at construction by `createEvent`. */
      resultPreview: text().optional(),
    },
  },
  true,
);

// --- gate ----------------------------------------------------------------------

/** The definition of GateOpened (its schema, family, class and identity profile); the event is the GateOpened interface. */
export const GateOpened = defineEventType(
  {
    type: "GateOpened",
    family: "gate",
    class: "enduring",
    scope: "loop",
    identity: GATE,
    /** Absent reads as the empty gate (Go's zero): a subscriber always gets the object. */
    body: { gate: gateSchema.prefault({}) },
    check: (e) => gateIdentity(e.gate?.resolver, e),
  },
  true,
);

/** The definition of GateResolved (its schema, family, class and identity profile); the event is the GateResolved interface. */
export const GateResolved = defineEventType(
  {
    type: "GateResolved",
    family: "gate",
    class: "enduring",
    scope: "loop",
    identity: GATE,
    body: {
      gateId: uuidSchema.optional(),
      resolver: text().optional(),
      /** answered, policy_response, abandoned, owner_closed or restore_unavailable. */
      reason: text().optional(),
      /** The chosen action, e.g. Approve or Deny. */
      action: text().optional(),
      source: gateSourceSchema.optional(),
      audit: gateAuditSchema.optional(),
    },
    check: (e) => gateIdentity(e.resolver, e),
  },
  true,
);

// --- step ----------------------------------------------------------------------

/**
 * The model's finalized response and the tool results of the step: the first message is
 * the assistant's, every later one a tool result; with, optionally, what was kept of each
 * result's bytes.
 */
export const StepDone = defineEventType(
  {
    type: "StepDone",
    family: "step",
    class: "enduring",
    scope: "loop",
    identity: STEP,
    body: {
      messages: z.array(stepMessageSchema).min(1).max(MAX_STEP_MESSAGES),
      captures: z.array(toolResultCaptureSchema).optional(),
    },
    check: (e) => {
      for (const [i, m] of e.messages.entries()) {
        if ((i === 0) !== (m.role === "assistant") || (i > 0 && m.role !== "tool")) {
          return { field: `messages.${i}.role`, rule: "is invalid", detail: "a step is one assistant message, then tool results" };
        }
      }
      return checkCaptures(e.messages, e.captures);
    },
  },
  true,
);

// --- turn ----------------------------------------------------------------------

/** Per loop (absent means 0). */
const turnIndex = z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER).optional();

/** The definition of TurnStarted (its schema, family, class and identity profile); the event is the TurnStarted interface. */
export const TurnStarted = defineEventType(
  {
    type: "TurnStarted",
    family: "turn",
    class: "enduring",
    scope: "loop",
    identity: TURN,
    body: { turnIndex, message: wireField(userMessageSchema.optional(), { keepEmpty: true }) },
  },
  true,
);
/** The definition of TurnDone (its schema, family, class and identity profile); the event is the TurnDone interface. */
export const TurnDone = defineEventType(
  {
    type: "TurnDone",
    family: "turn",
    class: "enduring",
    scope: "loop",
    identity: TURN,
    endsTurn: true,
    body: { turnIndex, message: wireField(aiMessageSchema.optional(), { keepEmpty: true }), usage: turnUsageSchema.optional() },
  },
  true,
);

/** The runtime's cap on a model-facing error detail, in UTF-8 bytes (256 KiB). */
export const MAX_MODEL_FACING_DETAIL_BYTES = 256 * 1024;

/**
 * The runtime's record of a turn's error: absent, it writes kind "unknown". The detail is
 * for the model only under the explicit `modelFacing` flag: the runtime's reader discards
 * a detail without it, and its writer bounds one to 256 KiB, so jetloop refuses both a
 * detail without the flag and one over the bound rather than keep what Go would not.
 */
export const turnErrorSchema = z
  .object({
    kind: wireField(z.string().default(""), { always: true }),
    message: wireField(z.string().default(""), { always: true }),
    /** Set when the error's detail may be shown to the model. */
    modelFacing: z.boolean().optional(),
    modelFacingDetail: text().optional(),
  })
  .superRefine((err, ctx) => {
    const detail = err.modelFacingDetail ?? "";
    if (detail !== "" && err.modelFacing !== true) {
      ctx.addIssue({ code: "custom", path: ["modelFacingDetail"], message: "a model-facing detail needs model_facing: true" });
    } else if (utf8Length(detail) > MAX_MODEL_FACING_DETAIL_BYTES) {
      ctx.addIssue({ code: "custom", path: ["modelFacingDetail"], message: `longer than ${MAX_MODEL_FACING_DETAIL_BYTES} bytes` });
    }
  });

/** The definition of TurnFailed (its schema, family, class and identity profile); the event is the TurnFailed interface. */
export const TurnFailed = defineEventType(
  {
    type: "TurnFailed",
    family: "turn",
    class: "enduring",
    scope: "loop",
    identity: TURN,
    endsTurn: true,
    body: { turnIndex, err: wireField(turnErrorSchema.default({ kind: "unknown", message: "" }), { always: true }) },
  },
  true,
);
/** The definition of TurnInterrupted (its schema, family, class and identity profile); the event is the TurnInterrupted interface. */
export const TurnInterrupted = defineEventType(
  { type: "TurnInterrupted", family: "turn", class: "enduring", scope: "loop", identity: TURN, endsTurn: true, body: { turnIndex } },
  true,
);

// --- loop and session ------------------------------------------------------------

/** The definition of LoopStarted (its schema, family, class and identity profile); the event is the LoopStarted interface. */
export const LoopStarted = defineEventType(
  {
    type: "LoopStarted",
    family: "loop",
    class: "enduring",
    scope: "loop",
    identity: LOOP_ONLY,
    body: {
      runtime: modelRuntimeSchema.optional(),
      /** A Go pointer: `{}` is an agent runtime with nothing set, which the rules refuse. */
      agentRuntime: wireField(agentRuntimeSchema.optional(), { keepEmpty: true }),
      /** The model provider's id of the tool call that started this loop (a sub-agent). */
      parentToolUseId: text().optional(),
      foreignSid: text().optional(),
      initialMode: text().optional(),
      initialRequestId: uuidSchema.optional(),
      displayName: text().optional(),
      description: text().optional(),
    },
    check: checkLoopRuntime,
  },
  true,
);
/** The definition of LoopIdle (its schema, family, class and identity profile); the event is the LoopIdle interface. */
export const LoopIdle = defineEventType(
  { type: "LoopIdle", family: "loop", class: "enduring", scope: "loop", identity: LOOP_ONLY, body: {} },
  true,
);
/** The definition of SessionStarted (its schema, family, class and identity profile); the event is the SessionStarted interface. */
export const SessionStarted = defineEventType(
  {
    type: "SessionStarted",
    family: "session",
    class: "enduring",
    scope: "session",
    body: { config: configFingerprintSchema.optional(), manifest: configManifestSchema.optional() },
    check: (e) => checkManifest(e.manifest),
  },
  true,
);
/** The definition of SessionIdle (its schema, family, class and identity profile); the event is the SessionIdle interface. */
export const SessionIdle = defineEventType(
  { type: "SessionIdle", family: "session", class: "enduring", scope: "session", body: {} },
  true,
);
/** The definition of SessionStopped (its schema, family, class and identity profile); the event is the SessionStopped interface. */
export const SessionStopped = defineEventType(
  { type: "SessionStopped", family: "session", class: "enduring", scope: "session", body: {} },
  true,
);

/** The definitions of the seventeen built-in event types. */
export const builtInTypes = [
  PermissionRequested,
  PermissionDecided,
  UserInputRequested,
  ToolCallStarted,
  ToolCallCompleted,
  GateOpened,
  GateResolved,
  StepDone,
  TurnStarted,
  TurnDone,
  TurnFailed,
  TurnInterrupted,
  LoopStarted,
  LoopIdle,
  SessionStarted,
  SessionIdle,
  SessionStopped,
] as const;

// The built-in events as a subscriber reads them. Each is its schema's output with the
// coordinates its identity profile rules (a tool event has loop, turn and step; a turn
// event no step; a loop event only its loop; a session event none; a gate's depend on its
// resolver), which validation enforces: test/unit/public-types.test.ts keeps each the same
// as its schema and its profile.

/** The header of an event inside a step (tool and step events): loop, turn and step set. */
export interface StepEventHeader extends EventHeader {
  loopId: string;
  turnId: string;
  stepId: string;
}

/** The header of a turn's own events: loop and turn set, no step. */
export interface TurnEventHeader extends EventHeader {
  loopId: string;
  turnId: string;
  stepId?: undefined;
}

/** The header of a loop's own events: the loop set, no turn, no step. */
export interface LoopEventHeader extends EventHeader {
  loopId: string;
  turnId?: undefined;
  stepId?: undefined;
}

/** The header of a session's own events: no loop, turn or step. */
export interface SessionEventHeader extends EventHeader {
  loopId?: undefined;
  turnId?: undefined;
  stepId?: undefined;
}

/** A tool asks permission: what it wants to do and the requirements it has not met. Enduring. */
export interface PermissionRequested extends StepEventHeader {
  type: "PermissionRequested";
  toolExecutionId: string;
  request: PermissionRequest;
}

/** The permission decision for a tool call: approve or deny (absent when the runtime wrote none). Enduring. */
export interface PermissionDecided extends StepEventHeader {
  type: "PermissionDecided";
  toolExecutionId: string;
  effect?: PermissionEffect | undefined;
  reason?: string | undefined;
  /** A summary of what was decided on, not the request itself. */
  subject?: string | undefined;
  /** A summary for the audit trail. */
  audit?: string | undefined;
}

/** A tool asks the user a question. Enduring. */
export interface UserInputRequested extends StepEventHeader {
  type: "UserInputRequested";
  toolExecutionId: string;
  question?: string | undefined;
  choices?: string[] | undefined;
}

/** A tool call began (a preview, never journaled). */
export interface ToolCallStarted extends StepEventHeader {
  type: "ToolCallStarted";
  toolExecutionId: string;
  toolName?: string | undefined;
  /** For display; capped at construction by `createEvent`. */
  summary?: string | undefined;
}

/** A tool call ended (a preview, never journaled): the step's StepDone records its result. */
export interface ToolCallCompleted extends StepEventHeader {
  type: "ToolCallCompleted";
  toolExecutionId: string;
  isError: boolean;
  /** For display; capped at construction by `createEvent`. */
  resultPreview?: string | undefined;
}

/**
 * A gate opened: something waits on an answer. A session gate (`gate.resolver` is
 * `session`) needs only its session; every other gate has loop, turn and step. Enduring.
 */
export interface GateOpened extends EventHeader {
  type: "GateOpened";
  /** Absent on the wire reads as the empty gate (Go's zero): a subscriber always gets the object. */
  gate: Gate;
}

/** A gate was resolved: answered, by policy, abandoned, closed with its owner. Enduring. */
export interface GateResolved extends EventHeader {
  type: "GateResolved";
  gateId?: string | undefined;
  resolver?: string | undefined;
  /** answered, policy_response, abandoned, owner_closed or restore_unavailable. */
  reason?: string | undefined;
  /** The chosen action, e.g. Approve or Deny. */
  action?: string | undefined;
  source?: GateSource | undefined;
  audit?: GateAudit | undefined;
}

/**
 * The model's finalized response and the tool results of the step: the first message is
 * the assistant's, every later one a tool result; with, optionally, what was kept of each
 * result's bytes. Enduring.
 */
export interface StepDone extends StepEventHeader {
  type: "StepDone";
  messages: StepMessage[];
  captures?: ToolResultCapture[] | undefined;
}

/** A turn began with the user's message. Enduring. */
export interface TurnStarted extends TurnEventHeader {
  type: "TurnStarted";
  /** Per loop (absent means 0). */
  turnIndex?: number | undefined;
  message?: UserMessage | undefined;
}

/** A turn ended with the model's final message and the turn's usage. Enduring; ends the turn. */
export interface TurnDone extends TurnEventHeader {
  type: "TurnDone";
  turnIndex?: number | undefined;
  message?: AIMessage | undefined;
  usage?: Usage | undefined;
}

/**
 * The runtime's record of a turn's error: absent, it writes kind "unknown". The detail is
 * for the model only under the explicit `modelFacing` flag.
 */
export interface TurnError {
  kind: string;
  message: string;
  /** Set when the error's detail may be shown to the model. */
  modelFacing?: boolean | undefined;
  modelFacingDetail?: string | undefined;
}

/** A turn failed. Enduring; ends the turn. */
export interface TurnFailed extends TurnEventHeader {
  type: "TurnFailed";
  turnIndex?: number | undefined;
  err: TurnError;
}

/** A turn was interrupted. Enduring; ends the turn. */
export interface TurnInterrupted extends TurnEventHeader {
  type: "TurnInterrupted";
  turnIndex?: number | undefined;
}

/** A loop started: its model and agent runtime, and where it came from. Enduring. */
export interface LoopStarted extends LoopEventHeader {
  type: "LoopStarted";
  runtime?: ModelRuntime | undefined;
  /** A Go pointer: `{}` is an agent runtime with nothing set, which the rules refuse. */
  agentRuntime?: AgentRuntime | undefined;
  /** The model provider's id of the tool call that started this loop (a sub-agent). */
  parentToolUseId?: string | undefined;
  foreignSid?: string | undefined;
  initialMode?: string | undefined;
  initialRequestId?: string | undefined;
  displayName?: string | undefined;
  description?: string | undefined;
}

/** A loop went idle. Enduring. */
export interface LoopIdle extends LoopEventHeader {
  type: "LoopIdle";
}

/** A session started, with its configuration. Enduring. */
export interface SessionStarted extends SessionEventHeader {
  type: "SessionStarted";
  config?: ConfigFingerprint | undefined;
  manifest?: ConfigManifest | undefined;
}

/** A session went idle. Enduring. */
export interface SessionIdle extends SessionEventHeader {
  type: "SessionIdle";
}

/** A session stopped. Enduring. */
export interface SessionStopped extends SessionEventHeader {
  type: "SessionStopped";
}

/** The definition of the built-in type named T. */
export type BuiltInDefinition<T extends string> = Extract<(typeof builtInTypes)[number], { readonly type: T }>;

/** Every built-in event, discriminated by `type`. */
export type JetloopEvent =
  | PermissionRequested
  | PermissionDecided
  | UserInputRequested
  | ToolCallStarted
  | ToolCallCompleted
  | GateOpened
  | GateResolved
  | StepDone
  | TurnStarted
  | TurnDone
  | TurnFailed
  | TurnInterrupted
  | LoopStarted
  | LoopIdle
  | SessionStarted
  | SessionIdle
  | SessionStopped;
/** The name of a built-in event type. */
export type EventType = JetloopEvent["type"];

/** The catalogue of built-in types; `defaultRegistry.with(def)` adds an application's own. */
export const defaultRegistry: EventRegistry<JetloopEvent> = new EventRegistry<JetloopEvent>(builtInTypes);
