/**
 * Creates or updates the declared streams (the events stream, the parked store) idempotently. A field the live stream has
 * differently is drift: updatable drift is applied (or, when verifying, reported);
 * drift the live stream cannot take (storage, retention) is refused with
 * ProvisionDriftError instead of being overwritten.
 */
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from "@nats-io/jetstream";
import { JetloopError, ProvisionDriftError, ServerUnsupportedError } from "../errors.js";
import {
  declaredMembersStreamConfig,
  declaredParkedStreamConfig,
  declaredPartitionedStreamConfig,
  declaredStreamConfig,
  type StreamVars,
} from "./declared.js";
import type { JournalShard } from "./shards.js";
import { refuseGoSessionOverlap } from "./foreign-subjects.js";

/** Fields a live stream cannot change. */
const IMMUTABLE = new Set(["name", "storage", "retention"]);
/**
 * The partitioned stream's sources carry its partition count: changing it on a live
 * stream would move sessions to other partitions while their events are being handled.
 */
const PARTITIONED_IMMUTABLE = new Set([...IMMUTABLE, "sources", "metadata"]);

/** One field of a stream's configuration that differs from what jetloop declares. */
export interface FieldDrift {
  readonly field: string;
  readonly live: unknown;
  readonly desired: unknown;
  readonly updatable: boolean;
}

/** What provisioning did to a stream: created, updated, unchanged, or (when verifying) drifted, with the fields that differ. */
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

/**
 * The declared value is what matters: a field the server adds inside an object or a list
 * of objects (a source's defaults, its own `_nats.*` metadata) is not drift.
 */
function same(live: unknown, desired: unknown): boolean {
  if (isZeroish(live) && isZeroish(desired)) return true;
  if (Array.isArray(desired) && Array.isArray(live)) return live.length === desired.length && desired.every((d, i) => same(live[i], d));
  if (desired && typeof desired === "object" && !Array.isArray(desired) && live && typeof live === "object" && !Array.isArray(live)) {
    return Object.entries(desired).every(([k, v]) => same((live as Record<string, unknown>)[k], v));
  }
  return JSON.stringify(live) === JSON.stringify(desired);
}

/** The declared fields whose live value differs. */
export function diffStreamConfig(live: Record<string, unknown>, desired: Record<string, unknown>, immutable: ReadonlySet<string> = IMMUTABLE): FieldDrift[] {
  const drift: FieldDrift[] = [];
  for (const [field, value] of Object.entries(desired)) {
    if (!same(live[field], value)) drift.push({ field, live: live[field], desired: value, updatable: !immutable.has(field) });
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
export async function provisionStream(jsm: JetStreamManager, options: ProvisionOptions): Promise<ProvisionReport> {
  const config = declaredStreamConfig(options);
  refuseGoSessionOverlap(options.stream, config);
  return provisionDeclared(jsm, options.stream, config, options.mode, options.serverVersion);
}

/** The parked store from `streams/parked.json`. */
export async function provisionParkedStream(
  jsm: JetStreamManager,
  options: Pick<ProvisionOptions, "namespace" | "stream" | "replicas" | "mode" | "serverVersion">,
): Promise<ProvisionReport> {
  const config = declaredParkedStreamConfig(options);
  refuseGoSessionOverlap(options.stream, config);
  return provisionDeclared(jsm, options.stream, config, options.mode, options.serverVersion);
}

/**
 * The partitioned stream (`streams/partitioned.json`) over the journal's shard streams
 * `journals`, with `partitions` partitions, and the group membership store
 * (`streams/members.json`). Its sources are immutable here: they carry the count, and the
 * journal's shards (another shard count is refused before this, bus.ts).
 */
export async function provisionPartitioned(
  jsm: JetStreamManager,
  options: Pick<ProvisionOptions, "namespace" | "replicas" | "maxAge" | "maxBytes" | "mode" | "serverVersion"> & {
    journals: readonly { readonly stream: string; readonly shard: JournalShard }[];
    stream: string;
    membersStream: string;
    partitions: number;
  },
): Promise<{ partitioned: ProvisionReport; members: ProvisionReport }> {
  const partitioned = await provisionDeclared(jsm, options.stream, declaredPartitionedStreamConfig(options), options.mode, options.serverVersion, PARTITIONED_IMMUTABLE);
  const members = await provisionDeclared(
    jsm,
    options.membersStream,
    declaredMembersStreamConfig({ namespace: options.namespace, stream: options.membersStream, replicas: options.replicas }),
    options.mode,
    options.serverVersion,
  );
  return { partitioned, members };
}

async function provisionDeclared(
  jsm: JetStreamManager,
  stream: string,
  desired: Record<string, unknown>,
  mode: ProvisionOptions["mode"],
  serverVersion: string,
  immutable: ReadonlySet<string> = IMMUTABLE,
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
  const drift = diffStreamConfig(live, desired, immutable);
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
