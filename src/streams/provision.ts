/**
 * Creates or updates the declared streams (the events stream, the parked store) idempotently. A field the live stream has
 * differently is drift: updatable drift is applied (or, when verifying, reported);
 * drift the live stream cannot take (storage, retention) is refused with
 * ProvisionDriftError instead of being overwritten.
 */
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from "@nats-io/jetstream";
import { JetloopError, ProvisionDriftError } from "../errors.js";
import { declaredParkedStreamConfig, declaredStreamConfig, type StreamVars } from "./declared.js";

/** Fields a live stream cannot change. */
const IMMUTABLE = new Set(["name", "storage", "retention"]);

export interface FieldDrift {
  readonly field: string;
  readonly live: unknown;
  readonly desired: unknown;
  readonly updatable: boolean;
}

export interface ProvisionReport {
  readonly stream: string;
  /** `drifted` only when verifying: the live stream differs and nothing was changed. */
  readonly action: "created" | "updated" | "unchanged" | "drifted";
  readonly drift: readonly FieldDrift[];
}

export interface ProvisionOptions extends StreamVars {
  /** `apply` (default) creates or updates; `verify` only reports. */
  readonly mode?: "apply" | "verify";
}

const isZeroish = (v: unknown) => v === undefined || v === false || v === 0 || v === "";

function same(live: unknown, desired: unknown): boolean {
  if (isZeroish(live) && isZeroish(desired)) return true;
  return JSON.stringify(live) === JSON.stringify(desired);
}

/** The declared fields whose live value differs. */
export function diffStreamConfig(live: Record<string, unknown>, desired: Record<string, unknown>): FieldDrift[] {
  const drift: FieldDrift[] = [];
  for (const [field, value] of Object.entries(desired)) {
    if (!same(live[field], value)) drift.push({ field, live: live[field], desired: value, updatable: !IMMUTABLE.has(field) });
  }
  return drift;
}

/** The events stream from `streams/events.json`. */
export function provisionStream(jsm: JetStreamManager, options: ProvisionOptions): Promise<ProvisionReport> {
  return provisionDeclared(jsm, options.stream, declaredStreamConfig(options), options.mode);
}

/** The parked store from `streams/parked.json`. */
export function provisionParkedStream(
  jsm: JetStreamManager,
  options: Pick<ProvisionOptions, "namespace" | "stream" | "replicas" | "mode">,
): Promise<ProvisionReport> {
  return provisionDeclared(jsm, options.stream, declaredParkedStreamConfig(options), options.mode);
}

async function provisionDeclared(jsm: JetStreamManager, stream: string, desired: Record<string, unknown>, mode: ProvisionOptions["mode"]): Promise<ProvisionReport> {
  let live: Record<string, unknown> | undefined;
  try {
    live = (await jsm.streams.info(stream)).config;
  } catch (e) {
    if (!(e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound)) throw e;
  }
  if (!live) {
    if (mode === "verify") {
      return { stream, action: "drifted", drift: [{ field: "name", live: undefined, desired: stream, updatable: true }] };
    }
    try {
      await jsm.streams.add({ ...desired, name: stream });
    } catch (e) {
      // e.g. another stream already captures the journal subjects
      if (e instanceof JetStreamApiError) throw new JetloopError("PROVISION_DRIFT", `stream ${stream} could not be created (${e.message})`, { cause: e });
      throw e;
    }
    return { stream, action: "created", drift: [] };
  }
  const drift = diffStreamConfig(live, desired);
  if (drift.length === 0) return { stream, action: "unchanged", drift };
  const refused = drift.filter((d) => !d.updatable);
  if (refused.length > 0) throw new ProvisionDriftError(stream, refused);
  if (mode === "verify") return { stream, action: "drifted", drift };
  try {
    await jsm.streams.update(stream, { ...live, ...desired });
  } catch (e) {
    if (e instanceof JetStreamApiError) {
      throw new JetloopError("PROVISION_DRIFT", `stream ${stream} refused the update (${e.message}); drift: ${drift.map((d) => d.field).join(", ")}`, { cause: e });
    }
    throw e;
  }
  return { stream, action: "updated", drift };
}
