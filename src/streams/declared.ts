/**
 * The declarative JetStream configuration in `streams/` (beside src/ in the repository,
 * shipped in the package), rendered for one namespace. JSON so operators can read and
 * review it without reading code.
 */
import { readFileSync } from "node:fs";
import { OptionsError } from "../errors.js";
import { checkNamespace, type JournalShard, partitionTransform, streamSubjects, UNSHARDED } from "../subjects/subjects.js";
import { checkPartitions } from "../partition/partition.js";
import { journalHeaderRoom } from "../connection/header-room.js";
import { type Feature, supports } from "../subjects/server-features.js";
import { SHARD_METADATA_KEY, SHARDS_METADATA_KEY } from "./shards.js";

const STREAMS_DIR = new URL("../../streams/", import.meta.url);

function load(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(new URL(name, STREAMS_DIR), "utf8")) as Record<string, unknown>;
}

const UNITS: Record<string, number> = { ns: 1, us: 1e3, µs: 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

/** A Go duration ("2m", "1h30m", "250ms") in nanoseconds. */
export function parseDuration(text: string): number {
  if (text === "0") return 0;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let matched = 0;
  for (const m of text.matchAll(re)) {
    total += Number(m[1]) * UNITS[m[2]!]!;
    matched += m[0].length;
  }
  if (matched === 0 || matched !== text.length) throw new OptionsError("duration", `${JSON.stringify(text)} is not a duration like 30s or 2m`);
  return Math.round(total);
}

const DURATION_FIELDS = new Set(["duplicate_window", "max_age", "ack_wait", "inactive_threshold"]);

function render(value: unknown, vars: Record<string, unknown>, key = ""): unknown {
  if (typeof value === "string") {
    const whole = /^\$\{(\w+)\}$/.exec(value);
    if (whole) return vars[whole[1]!];
    const s = value.replace(/\$\{(\w+)\}/g, (_, v: string) => String(vars[v]));
    return DURATION_FIELDS.has(key) ? parseDuration(s) : s;
  }
  if (Array.isArray(value)) return value.map((v) => (key === "backoff" ? parseDuration(String(v)) : render(v, vars)));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (!k.startsWith("$")) out[k] = render(v, vars, k);
    return out;
  }
  return value;
}

/** The parked store's name for a namespace: `jetloop` → `jetloop_parked`. */
export function defaultParkedStreamName(namespace: string): string {
  return `${checkNamespace(namespace).replaceAll(".", "_")}_parked`;
}

/** The values a namespace's declared stream configurations (`streams/*.json`) are filled with. */
export interface StreamVars {
  namespace: string;
  stream: string;
  maxEventBytes: number;
  replicas: number;
  /**
   * Retention, an explicit choice: events older than this (ns) are removed. Default 0,
   * no age limit: the journal is kept.
   */
  maxAge?: number;
  /** Retention: the oldest events are removed past this many bytes. Default -1, no limit. */
  maxBytes?: number;
  /** How long (ns) the stream recognises a resent message id. Default 2 minutes. */
  duplicateWindow?: number;
  /**
   * The connected server's version: `allow_atomic` and `allow_batched` are declared where
   * it has them (subjects/server-features.ts). Default: neither (a stream any server takes).
   */
  serverVersion?: string;
  /** Which shard of the namespace this stream is (src/streams/shards.ts). Default: the only one. */
  shard?: JournalShard;
}

/** The stream's default duplicate window, in ns (streams/events.json's fallback). */
export const DEFAULT_DUPLICATE_WINDOW_NS = 120e9;

/**
 * The stream's max_msg_size: an event at the codec's cap plus jetloop's headers (the
 * server counts headers against it), so an event the codec accepts is never refused.
 */
export function journalMaxMsgSize(vars: Pick<StreamVars, "namespace" | "stream" | "maxEventBytes" | "shard">): number {
  return vars.maxEventBytes + journalHeaderRoom(vars.stream, vars.namespace, vars.shard);
}

/** The declared events stream configuration, in JetStream API form (durations in ns). */
export function declaredStreamConfig(vars: StreamVars): Record<string, unknown> {
  const { serverVersion, shard = UNSHARDED, ...rest } = vars;
  const has = (f: Feature) => serverVersion !== undefined && supports(serverVersion, f);
  const config = render(load("events.json"), { ...rest, journalSubjects: streamSubjects(vars.namespace, shard)[0]!, allowAtomic: String(has("atomicBatch")), allowBatched: String(has("fastBatch")), maxMsgSize: journalMaxMsgSize(vars), maxAge: vars.maxAge ?? 0, maxBytes: vars.maxBytes ?? -1, duplicateWindow: vars.duplicateWindow ?? DEFAULT_DUPLICATE_WINDOW_NS }) as Record<string, unknown>;
  // A server before 2.12 / 2.14 does not know the fields: they are left out, not sent false.
  for (const field of ["allow_atomic", "allow_batched"]) {
    if (config[field] === "true") config[field] = true;
    else delete config[field];
  }
  // A stream never split carries none, so a namespace provisioned before shards is unchanged.
  if (shard.count > 1) config.metadata = { [SHARDS_METADATA_KEY]: String(shard.count), [SHARD_METADATA_KEY]: String(shard.index) };
  return config;
}

/** The declared parked store configuration (`streams/parked.json`), in JetStream API form. */
export function declaredParkedStreamConfig(vars: Pick<StreamVars, "namespace" | "stream" | "replicas">): Record<string, unknown> {
  return render(load("parked.json"), { ...vars }) as Record<string, unknown>;
}

/** The declared consumer templates (`durable`, `ordered`), in JetStream API form. */
export function declaredConsumerTemplates(): { durable: Record<string, unknown>; ordered: Record<string, unknown> } {
  return render(load("consumers.json"), {}) as { durable: Record<string, unknown>; ordered: Record<string, unknown> };
}

/** The partitioned stream's name for a namespace: `jetloop` → `jetloop_partitioned`. */
export function defaultPartitionedStreamName(namespace: string): string {
  return `${checkNamespace(namespace).replaceAll(".", "_")}_partitioned`;
}

/** The session catalog's KV bucket for a namespace: `jetloop` → `jetloop_catalog` (its stream `KV_jetloop_catalog`). */
export function defaultCatalogBucketName(namespace: string): string {
  return `${checkNamespace(namespace).replaceAll(".", "_")}_catalog`;
}

/** The attach lease's KV bucket for a namespace: `jetloop` → `jetloop_attach` (attach/lease.ts). */
export function defaultAttachLeaseBucketName(namespace: string): string {
  return `${checkNamespace(namespace).replaceAll(".", "_")}_attach`;
}

/** The group membership store's name for a namespace: `jetloop` → `jetloop_members`. */
export function defaultMembersStreamName(namespace: string): string {
  return `${checkNamespace(namespace).replaceAll(".", "_")}_members`;
}

/** Where the partitioned stream keeps its partition count (read by every group member). */
export const PARTITIONS_METADATA_KEY = "jetloop_partitions";

/**
 * The declared partitioned stream (`streams/partitioned.json`) over the journal's shard
 * streams `journals` (one for a namespace never split), in JetStream API form: one source
 * per shard, each mapping that shard's root to the partitions.
 */
export function declaredPartitionedStreamConfig(
  vars: Pick<StreamVars, "namespace" | "stream" | "replicas" | "maxAge" | "maxBytes"> & { journals: readonly { readonly stream: string; readonly shard: JournalShard }[]; partitions: number },
): Record<string, unknown> {
  const partitions = checkPartitions(vars.partitions);
  const sources = vars.journals.map((j) => ({ name: j.stream, subject_transforms: [partitionTransform(vars.namespace, partitions, j.shard)] }));
  const { journals: _journals, ...rest } = vars;
  return render(load("partitioned.json"), { ...rest, partitions: String(partitions), sources, maxAge: vars.maxAge ?? 0, maxBytes: vars.maxBytes ?? -1 }) as Record<string, unknown>;
}

/** The declared group membership store (`streams/members.json`), in JetStream API form. */
export function declaredMembersStreamConfig(vars: Pick<StreamVars, "namespace" | "stream" | "replicas">): Record<string, unknown> {
  return render(load("members.json"), { ...vars }) as Record<string, unknown>;
}
