/**
 * The options of `provision` and `consumers`, checked before anything is sent: one strict
 * shape each (src/options.ts), then the checks a shape cannot make (Go durations, the
 * window against the publish deadline, strict durability against the server).
 */
import { z } from "zod";
import { OptionsError } from "../errors.js";
import { parseOptions } from "../options.js";
import { MAX_PARTITIONS } from "../partition/partition.js";
import { parseDuration } from "./declared.js";
import { checkMonitorUrls, type Durability } from "./durability.js";

/** What `bus.provision` creates or checks: the journal stream's settings, its retention and durability. */
export interface ProvisionRequest {
  /** `apply` creates or updates; `verify` only reports drift. Default `apply`. */
  mode?: "apply" | "verify" | undefined;
  /** Stream replicas. Default: 3 when the server is part of a cluster, else 1. */
  replicas?: number | undefined;
  /**
   * Retention, an explicit choice: remove journal events older than this Go duration
   * (`720h`). Default: no age limit, the journal is kept.
   */
  maxAge?: string | undefined;
  /** Retention: remove the oldest journal events past this many bytes. Default: no limit. */
  maxBytes?: number | undefined;
  /**
   * How long the stream recognises a resent event id (Go duration). Default `2m`. The
   * server keeps an entry per append for this long (on every replica; about 230 bytes
   * each, measured: docs/scale.md); past it, only a fenced append or `publishAll` with
   * `resume` recognises its first copy.
   */
  duplicateWindow?: string | undefined;
  /**
   * `strict`: replicas 3 (a cluster is required), file storage, and the server's sync
   * setting read from `monitor` and warned of unless it syncs before every ack. Default
   * `default`: replicas as given or 3 on a cluster, the sync setting checked only when
   * `monitor` is given.
   */
  durability?: "default" | "strict" | undefined;
  /** Monitoring URLs (`http://host:8222`) of the journal's servers: their /varz is read for the sync setting. */
  monitor?: string[] | undefined;
  /**
   * Partitioned durable groups: also provision the partitioned stream
   * (`streams/partitioned.json`, a copy of the journal split by session into this many
   * partitions) and the group membership store (`streams/members.json`). Fixed once the
   * stream exists. Default: neither is touched.
   */
  partitions?: number | undefined;
}

// The checking side of the interfaces above (documented there; test/unit/public-types.test.ts
// keeps each shape's input type and its interface the same).
/** Monitoring URLs (`http://host:8222`) of the journal's servers: their /varz is read for the sync setting. */
const monitor = z.array(z.string()).optional();

export const provisionShape = z.strictObject({
  mode: z.enum(["apply", "verify"]).default("apply"),
  replicas: z.number().int().min(1).max(5).optional(),
  maxAge: z.string().optional(),
  maxBytes: z.number().optional(),
  duplicateWindow: z.string().optional(),
  durability: z.enum(["default", "strict"], 'must be "default" or "strict"').default("default"),
  monitor,
  partitions: z.number().int().min(1).max(MAX_PARTITIONS).optional(),
});

/** A provision request checked: retention in ns and bytes, the profile, the monitoring URLs. */
export interface ProvisionSettings {
  readonly mode: "apply" | "verify";
  readonly replicas: number;
  readonly maxAge: number | undefined;
  readonly maxBytes: number | undefined;
  readonly duplicateWindow: number | undefined;
  readonly profile: Durability;
  readonly monitor: string[];
  readonly partitions: number | undefined;
}

/** What the check needs of the bus and its server. */
export interface ProvisionContext {
  readonly publishDeadlineMs: number;
  readonly clustered: boolean;
}

export function parseProvisionRequest(request: ProvisionRequest | undefined, ctx: ProvisionContext): ProvisionSettings {
  const r = parseOptions(provisionShape, request);
  const maxAge = r.maxAge === undefined ? undefined : retention("maxAge", () => parseDuration(r.maxAge!));
  const maxBytes = r.maxBytes === undefined ? undefined : retention("maxBytes", () => r.maxBytes!);
  const duplicateWindow = r.duplicateWindow === undefined ? undefined : retention("duplicateWindow", () => parseDuration(r.duplicateWindow!));
  if (duplicateWindow !== undefined && maxAge !== undefined && duplicateWindow > maxAge) throw new OptionsError("duplicateWindow", "must not exceed maxAge");
  if (duplicateWindow !== undefined && duplicateWindow < ctx.publishDeadlineMs * 1e6) {
    throw new OptionsError("duplicateWindow", `must be at least the publish deadline (${ctx.publishDeadlineMs} ms): an append resent after the window would be stored twice`);
  }
  const monitorUrls = checkMonitorUrls(r.monitor);
  if (r.durability === "strict") {
    if (!ctx.clustered) throw new OptionsError("durability", "strict needs a cluster (replicas 3); this server is not part of one");
    if (r.replicas !== undefined && r.replicas < 3) throw new OptionsError("replicas", "strict durability needs at least 3");
  }
  const replicas = r.replicas ?? (ctx.clustered ? 3 : 1);
  return { mode: r.mode, replicas, maxAge, maxBytes, duplicateWindow, profile: r.durability, monitor: monitorUrls, partitions: r.partitions };
}

export const consumersShape = z.strictObject({ monitor });

export type ConsumersOptions = z.input<typeof consumersShape>;

/** `consumers`' options: the monitoring URLs, checked. */
export function parseConsumersOptions(options: ConsumersOptions | undefined): { monitor: string[] } {
  return { monitor: checkMonitorUrls(parseOptions(consumersShape, options).monitor) };
}

/** A retention option: a positive number (ns or bytes), checked before anything is sent. */
function retention(option: string, read: () => number): number {
  let value: number;
  try {
    value = read();
  } catch (e) {
    throw new OptionsError(option, (e as Error).message);
  }
  if (!Number.isSafeInteger(value) || value <= 0) throw new OptionsError(option, "must be a positive duration or byte count");
  return value;
}
