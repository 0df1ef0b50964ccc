/**
 * What a loop runs on and what a session was configured with, as the Go runtime records
 * them in LoopStarted and SessionStarted, with the runtime's own checks.
 */
import { z } from "zod";
import { goMapSchema } from "../wire/go-map-schema.js";
import { wireField } from "../wire/wire.js";
import { isSet, isTrimmedText, text, utf8Length } from "./text.js";
import type { Violation } from "./registry.js";

const tokens = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const always = <S extends z.ZodType>(name: string | undefined, schema: S) => wireField(schema, { ...(name ? { name } : {}), always: true });

/** Reasoning efforts a model runtime names (ModelRuntime.effort), lowest first. */
export const EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh", "max"] as const;

/** The model a loop calls and its context limits. */
export const modelRuntimeSchema = z.object({
  key: always(undefined, z.object({ provider: always("Provider", text().optional()), model: always("Model", text().optional()) }).optional()),
  limits: always(
    undefined,
    z
      .object({
        windowTokens: always("WindowTokens", tokens.optional()),
        maxInputTokens: always("MaxInputTokens", tokens.optional()),
        maxOutputTokens: always("MaxOutputTokens", tokens.optional()),
      })
      .optional(),
  ),
  effort: text().optional(),
  apiFormat: text().optional(),
  baseUrl: text().optional(),
});
/** The model a loop runs: provider and model, limits, effort, API format and endpoint (LoopStarted's `runtime`). */
export interface ModelRuntime {
  key?: { provider?: string | undefined; model?: string | undefined } | undefined;
  limits?: { windowTokens?: number | undefined; maxInputTokens?: number | undefined; maxOutputTokens?: number | undefined } | undefined;
  /** One of EFFORTS. */
  effort?: string | undefined;
  apiFormat?: string | undefined;
  baseUrl?: string | undefined;
}

/** The agent harness a loop runs in, and where its credentials come from. */
export const agentRuntimeSchema = z.object({
  harness: always(undefined, text().optional()),
  profile: always(undefined, text().optional()),
  /** native-auth or gateway-backed. */
  credentialMode: always(undefined, text().optional()),
  /** gateway or native. */
  source: text().optional(),
  /** explicit or harness-managed. */
  selectionKind: text().optional(),
  modelAlias: always(undefined, text().optional()),
  smallModelAlias: text().optional(),
  acpSessionId: text().optional(),
});
/** The agent harness a loop runs in (LoopStarted's `agentRuntime`). */
export interface AgentRuntime {
  harness?: string | undefined;
  profile?: string | undefined;
  /** native-auth or gateway-backed. */
  credentialMode?: string | undefined;
  /** gateway or native. */
  source?: string | undefined;
  /** explicit or harness-managed. */
  selectionKind?: string | undefined;
  modelAlias?: string | undefined;
  smallModelAlias?: string | undefined;
  acpSessionId?: string | undefined;
}

const isZeroRuntime = (r: ModelRuntime | undefined) =>
  r === undefined ||
  (!isSet(r.key?.provider) && !isSet(r.key?.model) && !r.limits?.windowTokens && !r.limits?.maxInputTokens && !r.limits?.maxOutputTokens && !isSet(r.effort) && !isSet(r.apiFormat) && !isSet(r.baseUrl));

function checkModelRuntime(r: ModelRuntime): Violation | undefined {
  if (!isSet(r.key?.provider)) return { field: "runtime.key.provider", rule: "must be set" };
  if (!isSet(r.key?.model)) return { field: "runtime.key.model", rule: "must be set" };
  const window = r.limits?.windowTokens ?? 0;
  if (window > 0 && ((r.limits?.maxInputTokens ?? 0) > window || (r.limits?.maxOutputTokens ?? 0) > window)) {
    return { field: "runtime.limits", rule: "is invalid", detail: "a limit exceeds the context window" };
  }
  if (isSet(r.effort) && !(EFFORTS as readonly string[]).includes(r.effort)) return { field: "runtime.effort", rule: "is invalid" };
  return undefined;
}

/** The runtime's cap on an identifier in an agent runtime or a manifest, in UTF-8 bytes. */
export const MAX_RUNTIME_IDENTIFIER_BYTES = 128;

// Go's unicode.IsControl (Cc) and unicode.IsSpace (White_Space), and `\` and `:`.
const FORBIDDEN_IN_SEGMENT = /[\p{Cc}\p{White_Space}\\:]/u;

/**
 * The runtime's identifier rule for runtime profiles, revisions and agent-runtime names:
 * empty, or at most 128 bytes of trimmed text whose `/`-separated segments are non-empty,
 * not `.` or `..`, and free of control characters, white space, `\` and `:`.
 */
export function isRuntimeIdentifier(value: string): boolean {
  if (value === "") return true;
  if (utf8Length(value) > MAX_RUNTIME_IDENTIFIER_BYTES || !isTrimmedText(value)) return false;
  for (const segment of value.split("/")) {
    if (segment === "" || segment === "." || segment === ".." || FORBIDDEN_IN_SEGMENT.test(segment)) return false;
  }
  return true;
}

/**
 * An agent runtime's identifiers: the rule above, and no URL, no absolute, home or
 * relative path, and — except in the profile, which may be a `team/name` path (without a
 * backslash) — no `/` at all.
 */
function isAgentRuntimeIdentifier(value: string, allowSlash: boolean): boolean {
  if (value === "") return true;
  if (value.includes("://") || /^(?:\/|~\/|\.\/|\.\.\/)/.test(value)) return false;
  if (!allowSlash && value.includes("/")) return false;
  return isRuntimeIdentifier(value);
}

const AGENT_IDENTIFIERS = ["harness", "profile", "credentialMode", "source", "selectionKind", "modelAlias", "smallModelAlias", "acpSessionId"] as const;

function checkAgentRuntime(a: AgentRuntime): Violation | undefined {
  const at = (f: string): string => `agentRuntime.${f}`;
  for (const f of AGENT_IDENTIFIERS) {
    if (!isAgentRuntimeIdentifier(a[f] ?? "", f === "profile")) return { field: at(f), rule: "is invalid", detail: "not a runtime identifier" };
  }
  for (const f of ["harness", "profile", "credentialMode"] as const) if (!isSet(a[f])) return { field: at(f), rule: "must be set" };
  if (a.credentialMode !== "native-auth" && a.credentialMode !== "gateway-backed") return { field: at("credentialMode"), rule: "is invalid" };
  if (isSet(a.source) !== isSet(a.selectionKind)) return { field: at("selectionKind"), rule: "is invalid", detail: "source and selection kind go together" };
  if (isSet(a.source) && a.source !== "gateway" && a.source !== "native") return { field: at("source"), rule: "is invalid" };
  if (isSet(a.selectionKind) && a.selectionKind !== "explicit" && a.selectionKind !== "harness-managed") return { field: at("selectionKind"), rule: "is invalid" };
  if ((a.source === "gateway" && a.credentialMode !== "gateway-backed") || (a.source === "native" && a.credentialMode !== "native-auth")) {
    return { field: at("credentialMode"), rule: "is invalid", detail: "does not match the source" };
  }
  if (a.selectionKind === "harness-managed") {
    if (a.source !== "native" || isSet(a.modelAlias) || isSet(a.smallModelAlias)) return { field: at("selectionKind"), rule: "is invalid" };
  } else if (!isSet(a.modelAlias)) return { field: at("modelAlias"), rule: "must be set" };
  return undefined;
}

const harnessManaged = (a: AgentRuntime) => a.source === "native" && a.selectionKind === "harness-managed";

/**
 * The runtime's LoopStarted rules: a record with neither runtime nor agent runtime is a
 * legacy one and passes; a harness-managed agent runtime has no model runtime; any other
 * has a valid one.
 */
export function checkLoopRuntime(e: { runtime?: ModelRuntime | undefined; agentRuntime?: AgentRuntime | undefined }): Violation | undefined {
  const zero = isZeroRuntime(e.runtime);
  if (e.agentRuntime === undefined) return zero ? undefined : checkModelRuntime(e.runtime!);
  const agent = checkAgentRuntime(e.agentRuntime);
  if (agent) return agent;
  if (zero) return harnessManaged(e.agentRuntime) ? undefined : { field: "runtime", rule: "must be set" };
  if (harnessManaged(e.agentRuntime)) return { field: "runtime", rule: "must be zero", detail: "a harness-managed loop has no model runtime" };
  return checkModelRuntime(e.runtime!);
}

/** A fingerprint of a session's configuration (every field omitted when zero). */
export const configFingerprintSchema = z.object({
  topologyRev: text().optional(),
  agentKind: text().optional(),
  modelId: text().optional(),
  systemPromptRev: text().optional(),
  toolPolicyRev: text().optional(),
  runtimeSkills: z.boolean().optional(),
  workspaceRoot: text().optional(),
  agentAdapter: text().optional(),
  permissionPosture: text().optional(),
  nativePermissionPolicyRev: text().optional(),
  externalCapabilityRev: text().optional(),
  runtimeProfile: text().optional(),
  runtimeCatalogRev: text().optional(),
  runtimeIdentityRev: text().optional(),
});

/** The configuration manifest version this jetloop writes and reads (ConfigManifest.schemaVersion). */
export const MANIFEST_SCHEMA_VERSION = 3;

/** An ordered posture supplied by the application (a Go uint8; 0 is unknown). */
const strictness = z.number().int().min(0).max(255).optional();

/**
 * What a session was started with: its agent, model, tools, posture and application
 * fields, in the runtime's field order. `schema_version` is written even when 0; `tools`
 * and `app_fields` are omitted only when absent (an empty list or map is written).
 */
export const configManifestSchema = z.object({
  schemaVersion: wireField(z.number().int().min(0).max(0xffffffff).optional(), { always: true }),
  agentKind: text().optional(),
  topologyRev: text().optional(),
  modelId: text().optional(),
  systemPromptRev: text().optional(),
  tools: wireField(
    z.array(z.object({ name: wireField(text().optional(), { always: true }), inputSchemaRev: text().optional(), outputSchemaRev: text().optional() })).optional(),
    { keepEmpty: true },
  ),
  runtimeSkills: z.boolean().optional(),
  workspaceRoot: text().optional(),
  workspaceTrust: text().optional(),
  agentAdapter: text().optional(),
  permissionPosture: text().optional(),
  nativePermissionPolicyRev: text().optional(),
  permissionStrictness: strictness,
  permissionReviewConfigured: z.boolean().optional(),
  permissionReviewPolicyRev: text().optional(),
  confinementRev: text().optional(),
  confinementStrictness: strictness,
  externalCapabilityRev: text().optional(),
  hookPolicyRev: text().optional(),
  runtimeProfile: text().optional(),
  runtimeCatalogRev: text().optional(),
  runtimeIdentityRev: text().optional(),
  appFields: wireField(goMapSchema(z.string()).optional(), { keepEmpty: true }),
});
/** The configuration a session started with, as revisions (SessionStarted's `config`). */
export interface ConfigFingerprint {
  topologyRev?: string | undefined;
  agentKind?: string | undefined;
  modelId?: string | undefined;
  systemPromptRev?: string | undefined;
  toolPolicyRev?: string | undefined;
  runtimeSkills?: boolean | undefined;
  workspaceRoot?: string | undefined;
  agentAdapter?: string | undefined;
  permissionPosture?: string | undefined;
  nativePermissionPolicyRev?: string | undefined;
  externalCapabilityRev?: string | undefined;
  runtimeProfile?: string | undefined;
  runtimeCatalogRev?: string | undefined;
  runtimeIdentityRev?: string | undefined;
}

/** The session's configuration manifest, versioned (SessionStarted's `manifest`; MANIFEST_SCHEMA_VERSION). */
export interface ConfigManifest {
  schemaVersion?: number | undefined;
  agentKind?: string | undefined;
  topologyRev?: string | undefined;
  modelId?: string | undefined;
  systemPromptRev?: string | undefined;
  tools?: { name?: string | undefined; inputSchemaRev?: string | undefined; outputSchemaRev?: string | undefined }[] | undefined;
  runtimeSkills?: boolean | undefined;
  workspaceRoot?: string | undefined;
  workspaceTrust?: string | undefined;
  agentAdapter?: string | undefined;
  permissionPosture?: string | undefined;
  nativePermissionPolicyRev?: string | undefined;
  permissionStrictness?: number | undefined;
  permissionReviewConfigured?: boolean | undefined;
  permissionReviewPolicyRev?: string | undefined;
  confinementRev?: string | undefined;
  confinementStrictness?: number | undefined;
  externalCapabilityRev?: string | undefined;
  hookPolicyRev?: string | undefined;
  runtimeProfile?: string | undefined;
  runtimeCatalogRev?: string | undefined;
  runtimeIdentityRev?: string | undefined;
  /** The application's own fields (a Go map: sorted keys). */
  appFields?: Record<string, string> | undefined;
}

const RUNTIME_MANIFEST_FIELDS = ["runtimeProfile", "runtimeCatalogRev", "runtimeIdentityRev"] as const;

/**
 * Which fields each manifest schema version may carry, as the runtime rules: version 0 (a
 * legacy record) no hook policy; 1 neither hook policy nor runtime fields; 2 no runtime
 * fields; 3 runtime fields that are runtime identifiers; nothing newer.
 */
export function checkManifest(m: ConfigManifest | undefined): Violation | undefined {
  if (m === undefined) return undefined;
  const v = m.schemaVersion ?? 0;
  const runtimeFields = RUNTIME_MANIFEST_FIELDS.some((f) => isSet(m[f]));
  const bad = { field: "manifest.schemaVersion", rule: "is invalid" as const };
  if (v > MANIFEST_SCHEMA_VERSION) return bad;
  if (v <= 1 && isSet(m.hookPolicyRev)) return { ...bad, detail: `schema version ${v} has no hook policy` };
  if ((v === 1 || v === 2) && runtimeFields) return { ...bad, detail: `schema version ${v} has no runtime fields` };
  if (v === MANIFEST_SCHEMA_VERSION) {
    for (const f of RUNTIME_MANIFEST_FIELDS) {
      if (!isRuntimeIdentifier(m[f] ?? "")) return { field: `manifest.${f}`, rule: "is invalid", detail: "not a runtime identifier" };
    }
  }
  return undefined;
}
