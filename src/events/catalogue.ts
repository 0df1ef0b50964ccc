/**
 * The built-in event types: the Go runtime's tool events and the gate, step, turn, loop and
 * session events around them, each with every field the Go runtime defines for it. See
 * README.md in this folder for the model.
 */
import { z } from "zod";
import { wireField } from "../wire/wire.js";
import { checkCaptures, toolResultCaptureSchema } from "./capture.js";
import { aiMessageSchema, MAX_STEP_MESSAGES, stepMessageSchema, turnUsageSchema, userMessageSchema } from "./content.js";
import { gateAuditSchema, gateIdentity, gateSchema, gateSourceSchema } from "./gate.js";
import { uuidSchema } from "./ids.js";
import { defineEventType, EventRegistry, type EventOf } from "./registry.js";
import { permissionRequestSchema } from "./request.js";
import { agentRuntimeSchema, checkLoopRuntime, checkManifest, configFingerprintSchema, configManifestSchema, modelRuntimeSchema } from "./runtime.js";
import { text, utf8Length } from "./text.js";

/** The full Session/Loop/Turn/Step quartet. */
const STEP = { loopId: "required", turnId: "required", stepId: "required" } as const;
const TURN = { loopId: "required", turnId: "required", stepId: "forbidden" } as const;
const LOOP_ONLY = { loopId: "required", turnId: "forbidden", stepId: "forbidden" } as const;
/** Gates: which coordinates depends on the resolver, checked by `gateIdentity`. */
const GATE = { loopId: "optional", turnId: "optional", stepId: "optional" } as const;

// --- tool ---------------------------------------------------------------------

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
export type PermissionEffect = z.output<typeof permissionEffectSchema>;

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
export type TurnError = z.output<typeof turnErrorSchema>;

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
export const TurnInterrupted = defineEventType(
  { type: "TurnInterrupted", family: "turn", class: "enduring", scope: "loop", identity: TURN, endsTurn: true, body: { turnIndex } },
  true,
);

// --- loop and session ------------------------------------------------------------

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
export const LoopIdle = defineEventType(
  { type: "LoopIdle", family: "loop", class: "enduring", scope: "loop", identity: LOOP_ONLY, body: {} },
  true,
);
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
export const SessionIdle = defineEventType(
  { type: "SessionIdle", family: "session", class: "enduring", scope: "session", body: {} },
  true,
);
export const SessionStopped = defineEventType(
  { type: "SessionStopped", family: "session", class: "enduring", scope: "session", body: {} },
  true,
);

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

export type PermissionRequested = EventOf<typeof PermissionRequested>;
export type PermissionDecided = EventOf<typeof PermissionDecided>;
export type UserInputRequested = EventOf<typeof UserInputRequested>;
export type ToolCallStarted = EventOf<typeof ToolCallStarted>;
export type ToolCallCompleted = EventOf<typeof ToolCallCompleted>;
export type GateOpened = EventOf<typeof GateOpened>;
export type GateResolved = EventOf<typeof GateResolved>;
export type StepDone = EventOf<typeof StepDone>;
export type TurnStarted = EventOf<typeof TurnStarted>;
export type TurnDone = EventOf<typeof TurnDone>;
export type TurnFailed = EventOf<typeof TurnFailed>;
export type TurnInterrupted = EventOf<typeof TurnInterrupted>;
export type LoopStarted = EventOf<typeof LoopStarted>;
export type LoopIdle = EventOf<typeof LoopIdle>;
export type SessionStarted = EventOf<typeof SessionStarted>;
export type SessionIdle = EventOf<typeof SessionIdle>;
export type SessionStopped = EventOf<typeof SessionStopped>;

export type BuiltInDefinition<T extends string> = Extract<(typeof builtInTypes)[number], { readonly type: T }>;

/** Every built-in event, discriminated by `type`. */
export type JetloopEvent = EventOf<(typeof builtInTypes)[number]>;
export type EventType = JetloopEvent["type"];

/** The catalogue of built-in types; `defaultRegistry.with(def)` adds an application's own. */
export const defaultRegistry: EventRegistry<JetloopEvent> = new EventRegistry<JetloopEvent>(builtInTypes);
