/**
 * Creates or updates the declared streams (the events stream, the parked store) idempotently. A field the live stream has
 * differently is drift: updatable drift is applied (or, when verifying, reported);
 * drift the live stream cannot take (storage, retention) is refused with
 * ProvisionDriftError instead of being overwritten.
 */
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from "@nats-io/jetstream";
import { JetloopError, ProvisionDriftError, ServerUnsupportedError } from "../errors.js";
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
  /** The connected server's version, named in the error when it cannot republish. */
  readonly serverVersion: string;
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

/**
 * Feed subscriptions follow the stream's republished feed. A server that does not know
 * `republish` (before 2.9) ignores the field and stores the stream without it: refuse
 * that, or feed subscriptions would wait for a feed that never comes.
 */
function requireRepublish(config: { republish?: unknown }, desired: Record<string, unknown>, serverVersion: string): void {
  if (desired.republish !== undefined && !same(config.republish, desired.republish)) {
    throw new ServerUnsupportedError("republishing the journal to the feed (stream republish)", "2.9.0", serverVersion);
  }
}

/** The events stream from `streams/events.json`. */
export function provisionStream(jsm: JetStreamManager, options: ProvisionOptions): Promise<ProvisionReport> {
  return provisionDeclared(jsm, options.stream, declaredStreamConfig(options), options.mode, options.serverVersion);
}

/** The parked store from `streams/parked.json`. */
export function provisionParkedStream(
  jsm: JetStreamManager,
  options: Pick<ProvisionOptions, "namespace" | "stream" | "replicas" | "mode" | "serverVersion">,
): Promise<ProvisionReport> {
  return provisionDeclared(jsm, options.stream, declaredParkedStreamConfig(options), options.mode, options.serverVersion);
}

async function provisionDeclared(
  jsm: JetStreamManager,
  stream: string,
  desired: Record<string, unknown>,
  mode: ProvisionOptions["mode"],
  serverVersion: string,
): Promise<ProvisionReport> {
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
      requireRepublish((await jsm.streams.add({ ...desired, name: stream })).config, desired, serverVersion);
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
    requireRepublish((await jsm.streams.update(stream, { ...live, ...desired })).config, desired, serverVersion);
  } catch (e) {
    if (e instanceof JetStreamApiError) {
      throw new JetloopError("PROVISION_DRIFT", `stream ${stream} refused the update (${e.message}); drift: ${drift.map((d) => d.field).join(", ")}`, { cause: e });
    }
    throw e;
  }
  return { stream, action: "updated", drift };
}
