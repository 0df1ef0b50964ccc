/**
 * Gates as the Go runtime writes them: what GateOpened opens (kind, who resolves it,
 * what it blocks, its prompt and response policy) and how GateResolved closes it,
 * with its typed audit. The runtime checks none of the enumerations below when it
 * reads a gate; only `resolver` matters to validation (see `gateIdentity`).
 */
import { z } from "zod";
import { goMapSchema } from "../wire/go-map-schema.js";
import type { RawJson } from "../wire/raw-json.js";
import { rawJsonSchema } from "../wire/raw-json-schema.js";
import { wireField } from "../wire/wire.js";
import { uuidSchema } from "./ids.js";
import { text } from "./text.js";
import type { Violation } from "./registry.js";

/** Known values, for reference: the runtime also writes others. */
export const GATE_KINDS = ["harness.permission", "harness.ask_user", "harness.form", "harness.open_url"] as const;
/** Who resolves a gate: its loop, or the session (a session gate needs no loop coordinates). */
export const GATE_RESOLVERS = ["loop", "session"] as const;
/** Why a gate was resolved (GateResolved.reason), as the runtime writes them; it writes others too. */
export const GATE_RESOLUTION_REASONS = ["answered", "policy_response", "abandoned", "owner_closed", "restore_unavailable"] as const;

/** One field of a form gate's schema. */
export interface GateField {
  name?: string | undefined;
  label?: string | undefined;
  /** text, select, multi_select or confirm. */
  kind?: string | undefined;
  required?: boolean | undefined;
  options?: { value?: string | undefined; label?: string | undefined }[] | undefined;
  /** A json.RawMessage: kept as written (number forms, key order, escapes). */
  default?: RawJson | undefined;
}

/** An answer offered as a button: `action` is what the answer sends. */
export interface GateControl {
  action?: string | undefined;
  label?: string | undefined;
}

/** What a gate shows the person who answers it. In the runtime's field order: `origin` comes before the schema and the controls. */
export interface GatePrompt {
  title?: string | undefined;
  body?: string | undefined;
  origin?: string | undefined;
  /** A form's fields. */
  schema?: { fields?: GateField[] | undefined } | undefined;
  /** The answers offered as buttons. */
  controls?: GateControl[] | undefined;
}

/** An answer given by policy: the action and the form's values by field name. */
export interface GateResponse {
  action?: string | undefined;
  /** Answer values by field name (a Go map of json.RawMessage: sorted keys, each value kept as written). */
  values?: Record<string, RawJson> | undefined;
}

/** What happens when nobody answers a gate in time. */
export interface GateResponsePolicy {
  /** Nanoseconds (a Go time.Duration). */
  timeout?: number | undefined;
  /** wait, respond, suspend_session or model_decide. */
  onTimeout?: string | undefined;
  /** The answer given on `respond`. */
  response?: GateResponse | undefined;
  /** The model's choice on `model_decide`. */
  modelDecision?:
    | {
        prompt?: string | undefined;
        allowedActions?: string[] | undefined;
        default?: GateResponse | undefined;
        /** A json.RawMessage: kept as written. */
        metadata?: RawJson | undefined;
      }
    | undefined;
}

/** What a gate is about: the tool call, turn, step or input it holds. */
export interface GateSubject {
  toolExecutionId?: string | undefined;
  /** The model provider's id of the tool call. */
  toolUseId?: string | undefined;
  turnId?: string | undefined;
  stepId?: string | undefined;
  inputId?: string | undefined;
}

/**
 * A gate as GateOpened opens it. The text fields read as "" when absent (Go's zero,
 * omitted on the wire as before), so a subscriber gets a string, never undefined. `id`
 * stays optional: Go reads an absent id as the nil UUID, which names nothing (a gate
 * without one cannot be answered).
 */
export interface Gate {
  id?: string | undefined;
  /** harness.permission, harness.ask_user, harness.form, harness.open_url, or another the runtime writes. */
  kind: string;
  /** `session` gates belong to the session; any other value to a loop's step. */
  resolver: string;
  /** tool_call or session. */
  blocks: string;
  /** resume, initiate or control. */
  effect: string;
  /** critical or non_critical. */
  criticality: string;
  subject?: GateSubject | undefined;
  prompt?: GatePrompt | undefined;
  responsePolicy?: GateResponsePolicy | undefined;
  restorable?: boolean | undefined;
}

/**
 * What a resolution records for the audit trail, by gate kind. Read strictly, as the
 * runtime reads it: unknown kinds and keys are refused.
 */
export type GateAudit =
  | { kind: "permission"; data: { requirementDescriptions?: string[] | undefined; candidateDescriptions?: string[] | undefined } }
  | { kind: "ask_user"; data: { answerPreview?: string | undefined } }
  | { kind: "form"; data: { values?: Record<string, string> | undefined } };

/** Who or what resolved a gate, and why. */
export interface GateSource {
  kind?: string | undefined;
  reason?: string | undefined;
}

// The checking side of the types above (documented there; test/unit/public-types.test.ts
// keeps each schema's output type and its interface the same).
const label = z.object({ action: text().optional(), label: text().optional() });

export const gateFieldSchema = z.object({
  name: text().optional(),
  label: text().optional(),
  /** text, select, multi_select or confirm. */
  kind: text().optional(),
  required: z.boolean().optional(),
  options: z.array(z.object({ value: text().optional(), label: text().optional() })).optional(),
  /** A json.RawMessage: kept as written (number forms, key order, escapes). */
  default: rawJsonSchema().optional(),
});

/** In the runtime's field order: `origin` comes before the schema and the controls. */
export const gatePromptSchema = z.object({
  title: text().optional(),
  body: text().optional(),
  origin: text().optional(),
  schema: z.object({ fields: z.array(gateFieldSchema).optional() }).optional(),
  /** The answers offered as buttons; `action` is what an answer sends. */
  controls: z.array(label).optional(),
});

/** Answer values by field name (a Go map of json.RawMessage: sorted keys, each value kept as written). */
const values = goMapSchema(rawJsonSchema());
const response = z.object({ action: text().optional(), values: values.optional() });

export const gateResponsePolicySchema = z.object({
  /** Nanoseconds (a Go time.Duration). */
  timeout: z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER).optional(),
  /** wait, respond, suspend_session or model_decide. */
  onTimeout: text().optional(),
  response: response.optional(),
  modelDecision: z
    .object({
      prompt: text().optional(),
      allowedActions: z.array(z.string()).optional(),
      default: response.optional(),
      /** A json.RawMessage: kept as written. */
      metadata: rawJsonSchema().optional(),
    })
    .optional(),
});

/**
 * The text fields read as "" when absent (Go's zero, omitted on the wire as before), so a
 * subscriber gets a string, never undefined. `id` stays optional: Go reads an absent id as
 * the nil UUID, which names nothing.
 */
export const gateSchema = z.object({
  id: uuidSchema.optional(),
  kind: text().default(""),
  /** `session` gates belong to the session; any other value to a loop's step. */
  resolver: text().default(""),
  /** tool_call or session. */
  blocks: text().default(""),
  /** resume, initiate or control. */
  effect: text().default(""),
  /** critical or non_critical. */
  criticality: text().default(""),
  subject: z
    .object({
      toolExecutionId: uuidSchema.optional(),
      /** The model provider's id of the tool call. */
      toolUseId: text().optional(),
      turnId: uuidSchema.optional(),
      stepId: uuidSchema.optional(),
      inputId: uuidSchema.optional(),
    })
    .optional(),
  prompt: gatePromptSchema.optional(),
  responsePolicy: gateResponsePolicySchema.optional(),
  restorable: z.boolean().optional(),
});

const data = <S extends z.ZodRawShape>(shape: S) => wireField(z.strictObject(shape), { always: true });

/**
 * What a resolution records for the audit trail, by gate kind. Read strictly, as the
 * runtime reads it: unknown kinds and keys are refused.
 */
export const gateAuditSchema = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("permission"),
    data: data({ requirementDescriptions: z.array(z.string()).optional(), candidateDescriptions: z.array(z.string()).optional() }),
  }),
  z.strictObject({ kind: z.literal("ask_user"), data: data({ answerPreview: text().optional() }) }),
  z.strictObject({ kind: z.literal("form"), data: data({ values: goMapSchema(z.string()).optional() }) }),
]);

export const gateSourceSchema = z.object({ kind: text().optional(), reason: text().optional() });

/** A gate event's coordinates, as gateIdentity reads them. */
export interface GateCoordinates {
  loopId?: string | undefined;
  turnId?: string | undefined;
  stepId?: string | undefined;
}

/**
 * A session gate needs only its session; every other gate (a resolver of `loop`, none, or
 * one the runtime does not know) needs the full quartet, as the runtime rules.
 */
export function gateIdentity(resolver: string | undefined, e: GateCoordinates): Violation | undefined {
  if (resolver === "session") return undefined;
  for (const field of ["loopId", "turnId", "stepId"] as const) {
    if (e[field] === undefined) return { field, rule: "must be set", detail: "a gate that is not a session gate needs the full quartet" };
  }
  return undefined;
}
