/**
 * The built-in event types: the seed's tool events and the gate, step, turn, loop and
 * session events around them. See README.md in this folder for the model.
 */
import { z } from "zod";
import { defineEventType, EventRegistry, type EventOf } from "./registry.js";
import { uuidSchema } from "./ids.js";
import { permissionRequestSchema } from "./request.js";
import { limits, text } from "./text.js";

/** The full Session/Loop/Turn/Step quartet. */
const STEP = { loopId: "required", turnId: "required", stepId: "required" } as const;
const LOOP_ONLY = { loopId: "required", turnId: "forbidden", stepId: "forbidden" } as const;

// --- tool (seed) ---------------------------------------------------------------

export const PermissionRequested = defineEventType(
  {
    type: "PermissionRequested",
    family: "tool",
    class: "enduring",
    scope: "loop",
    identity: STEP,
    body: { toolExecutionId: uuidSchema, request: permissionRequestSchema },
  },
  true,
);

/** A gated ask is the gate lifecycle, not a decision: only approve or deny. */
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
      effect: permissionEffectSchema,
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
      choices: z
        .array(text(limits.name))
        .min(1)
        .max(limits.choices)
        .refine((c) => new Set(c).size === c.length, "choices must be distinct")
        .optional(),
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
      toolName: text(limits.name).optional(),
      /** For display; capped at construction by `createEvent`. */
      summary: text(limits.summary).optional(),
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
      resultPreview: text(limits.resultPreview).optional(),
    },
  },
  true,
);

// --- gate ----------------------------------------------------------------------

/** `loop` gates (permission, ask-user) need the full quartet; `session` gates only the session. */
export const gateResolverSchema = z.enum(["loop", "session"]);
export const gateResolutionReasonSchema = z.enum([
  "answered",
  "policy_response",
  "abandoned",
  "owner_closed",
  "restore_unavailable",
]);

/** Known kinds: harness.permission, harness.ask_user, harness.form, harness.open_url. */
export const gateSchema = z.object({
  id: uuidSchema,
  kind: text(limits.name),
  resolver: gateResolverSchema,
  /** The tool call the gate guards, when it guards one. */
  toolExecutionId: uuidSchema.optional(),
  title: text(limits.name).optional(),
  prompt: text().optional(),
  /** The actions a resolver may choose, e.g. approve and deny. */
  actions: z.array(text(limits.name)).min(1).max(limits.choices).optional(),
});
export type Gate = z.output<typeof gateSchema>;

const GATE_IDENTITY = { loopId: "optional", turnId: "optional", stepId: "optional" } as const;

function loopResolvedNeedsQuartet(resolver: "loop" | "session", e: { loopId?: string | undefined; turnId?: string | undefined; stepId?: string | undefined }) {
  if (resolver !== "loop") return undefined;
  for (const field of ["loopId", "turnId", "stepId"] as const) {
    if (e[field] === undefined) return { field, rule: "must be set" as const, detail: "a loop-resolved gate needs the full quartet" };
  }
  return undefined;
}

export const GateOpened = defineEventType(
  {
    type: "GateOpened",
    family: "gate",
    class: "enduring",
    scope: "loop",
    identity: GATE_IDENTITY,
    body: { gate: gateSchema },
    check: (e) => loopResolvedNeedsQuartet(e.gate.resolver, e),
  },
  true,
);

export const GateResolved = defineEventType(
  {
    type: "GateResolved",
    family: "gate",
    class: "enduring",
    scope: "loop",
    identity: GATE_IDENTITY,
    body: {
      gateId: uuidSchema,
      resolver: gateResolverSchema,
      reason: gateResolutionReasonSchema,
      /** The chosen action, e.g. approve or deny. */
      action: text(limits.name).optional(),
      source: z.object({ kind: text(limits.name), reason: text().optional() }).optional(),
    },
    check: (e) => loopResolvedNeedsQuartet(e.resolver, e),
  },
  true,
);

// --- step ----------------------------------------------------------------------

export const toolCallSchema = z.object({
  toolExecutionId: uuidSchema,
  toolName: text(limits.name),
});

/** The finalized AI message and the tool results, each bound to its tool execution id. */
export const messageSchema = z.discriminatedUnion("role", [
  z.object({
    role: z.literal("assistant"),
    content: text(limits.content).optional(),
    toolCalls: z.array(toolCallSchema).min(1).max(limits.messages).optional(),
  }),
  z.object({
    role: z.literal("tool"),
    toolExecutionId: uuidSchema,
    toolName: text(limits.name).optional(),
    content: text(limits.content).optional(),
    isError: z.boolean().default(false),
  }),
]);
export type Message = z.output<typeof messageSchema>;

export const StepDone = defineEventType(
  {
    type: "StepDone",
    family: "step",
    class: "enduring",
    scope: "loop",
    identity: STEP,
    body: { messages: z.array(messageSchema).min(1).max(limits.messages) },
    check: (e) => {
      const seen = new Set<string>();
      for (const [i, m] of e.messages.entries()) {
        if (m.role !== "tool") continue;
        if (seen.has(m.toolExecutionId)) return { field: `messages.${i}.toolExecutionId`, rule: "is invalid", detail: "a tool execution has one result" };
        seen.add(m.toolExecutionId);
      }
      return undefined;
    },
  },
  true,
);

// --- turn ----------------------------------------------------------------------

/** Per loop, from 0 (omitted on the wire when 0). */
const turnIndex = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).default(0);
const TURN = { loopId: "required", turnId: "required", stepId: "forbidden" } as const;
const TURN_END = { loopId: "required", turnId: "required", stepId: "optional" } as const;

export const TurnStarted = defineEventType(
  { type: "TurnStarted", family: "turn", class: "enduring", scope: "loop", identity: TURN, body: { turnIndex } },
  true,
);
export const TurnDone = defineEventType(
  { type: "TurnDone", family: "turn", class: "enduring", scope: "loop", identity: TURN_END, endsTurn: true, body: { turnIndex } },
  true,
);
export const TurnFailed = defineEventType(
  {
    type: "TurnFailed",
    family: "turn",
    class: "enduring",
    scope: "loop",
    identity: TURN_END,
    endsTurn: true,
    body: { turnIndex, err: z.object({ kind: text(limits.name), message: text().optional() }) },
  },
  true,
);
export const TurnInterrupted = defineEventType(
  {
    type: "TurnInterrupted",
    family: "turn",
    class: "enduring",
    scope: "loop",
    identity: TURN_END,
    endsTurn: true,
    body: { turnIndex, reason: text().optional() },
  },
  true,
);

// --- loop and session ------------------------------------------------------------

export const LoopStarted = defineEventType(
  { type: "LoopStarted", family: "loop", class: "enduring", scope: "loop", identity: LOOP_ONLY, body: {} },
  true,
);
export const LoopIdle = defineEventType(
  { type: "LoopIdle", family: "loop", class: "enduring", scope: "loop", identity: LOOP_ONLY, body: {} },
  true,
);
export const SessionStarted = defineEventType(
  { type: "SessionStarted", family: "session", class: "enduring", scope: "session", body: {} },
  true,
);
export const SessionStopped = defineEventType(
  { type: "SessionStopped", family: "session", class: "enduring", scope: "session", body: { reason: text().optional() } },
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
export type SessionStopped = EventOf<typeof SessionStopped>;

export type BuiltInDefinition<T extends string> = Extract<(typeof builtInTypes)[number], { readonly type: T }>;

/** Every built-in event, discriminated by `type`. */
export type JetloopEvent = EventOf<(typeof builtInTypes)[number]>;
export type EventType = JetloopEvent["type"];

/** The catalogue of built-in types; `defaultRegistry.with(def)` adds an application's own. */
export const defaultRegistry: EventRegistry<JetloopEvent> = new EventRegistry<JetloopEvent>(builtInTypes);
