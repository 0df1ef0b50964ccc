/**
 * What a loop runs on and what a session was configured with, as the Go runtime records
 * them in LoopStarted and SessionStarted, with the runtime's own checks.
 */
import { z } from "zod";
import { wireField } from "../codec/wire.js";
import { isSet, text } from "./text.js";
import type { Violation } from "./registry.js";

const tokens = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const always = <S extends z.ZodType>(name: string | undefined, schema: S) => wireField(schema, { ...(name ? { name } : {}), always: true });

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
export type ModelRuntime = z.output<typeof modelRuntimeSchema>;

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
export type AgentRuntime = z.output<typeof agentRuntimeSchema>;

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

function checkAgentRuntime(a: AgentRuntime): Violation | undefined {
  const at = (f: string): string => `agentRuntime.${f}`;
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

/** A fingerprint of a session's configuration. */
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
});

export const MANIFEST_SCHEMA_VERSION = 3;

/** What a session was started with: its agent, model, tools and application fields. */
export const configManifestSchema = z.object({
  schemaVersion: z.number().int().min(0).max(0xffffffff).optional(),
  agentKind: text().optional(),
  modelId: text().optional(),
  tools: wireField(z.array(z.object({ name: text().optional(), inputSchemaRev: text().optional() })).optional(), { always: true, nullable: true }),
  hookPolicyRev: text().optional(),
  runtimeProfile: text().optional(),
  runtimeCatalogRev: text().optional(),
  runtimeIdentityRev: text().optional(),
  appFields: z.record(z.string(), z.string()).optional(),
});
export type ConfigManifest = z.output<typeof configManifestSchema>;

/** Which fields each manifest schema version may carry, as the runtime rules. */
export function checkManifest(m: ConfigManifest | undefined): Violation | undefined {
  if (m === undefined) return undefined;
  const v = m.schemaVersion ?? 0;
  const runtimeFields = isSet(m.runtimeProfile) || isSet(m.runtimeCatalogRev) || isSet(m.runtimeIdentityRev);
  const bad = { field: "manifest.schemaVersion", rule: "is invalid" as const };
  if (v > MANIFEST_SCHEMA_VERSION) return bad;
  if (v <= 1 && isSet(m.hookPolicyRev)) return bad;
  if (v <= 2 && runtimeFields) return { ...bad, detail: `schema version ${v} has no runtime fields` };
  return undefined;
}
