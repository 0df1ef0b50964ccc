// Scenario 7's crossing table: every consumer path a follower has (through the raw
// JetStream API and through jetloop) × every consumer she must not reach — a service's
// durables (the README's "billing" and generated names), a partitioned group's partition
// durables, another follower's read-consumer pool, and her own pool aimed at another
// session. A crossing is an attempt that is not refused, or any target whose config (or
// creation time) changed, read as the operator before and after.
import fc from "fast-check";
import type { ConsumerConfig, JetStreamManager } from "@nats-io/jetstream";
import { PermissionViolationError, type NatsConnection } from "@nats-io/transport-node";
import { isJetloopError, type Jetloop } from "../../../../src/index.js";
import { partitionDurable } from "../../../../src/partition/partition-durable.js";
import { readConsumerNames } from "../../../../src/journal/read-consumers.js";

export interface Target {
  readonly kind: "service durable" | "partition durable" | "another follower's pool" | "her own pool";
  readonly stream: string;
  readonly name: string;
  /** The filter a crossing would aim at: the target's own, or (her own pool) another session's. */
  readonly filter: string;
}

export interface Attempt {
  readonly path: string;
  readonly via: "raw" | "jetloop";
  readonly target: string;
  readonly refused: boolean;
  readonly how: string;
  readonly ms: number;
}

export interface CrossingResult {
  readonly attempts: Attempt[];
  /** Targets whose config or creation time differs after the attempts (or that appeared). */
  readonly changed: string[];
  readonly targets: readonly Target[];
}

/** Generated service durable names: lowercase, digits and dashes, never a pool name. */
export function serviceNames(n: number, seed: number): string[] {
  return fc.sample(fc.stringMatching(/^[a-z][a-z0-9-]{2,14}$/), { numRuns: n * 4, seed }).filter((s, i, all) => all.indexOf(s) === i && !/_\d+$/.test(s)).slice(0, n);
}

/** Group names for partition durables ({group}_p{i}). */
export function groupName(seed: number): string {
  return `grp${fc.sample(fc.stringMatching(/^[a-z0-9]{6}$/), { numRuns: 1, seed })[0]}`;
}

export function targetsFor(o: {
  stream: string;
  partitionedStream: string;
  namespace: string;
  services: readonly string[];
  group: string;
  partitions: number;
  otherPrefix: string;
  otherSession: string;
  ownPrefix: string;
  poolSize: number;
}): Target[] {
  const journal = (s: string) => `${o.namespace}.journal.${s}.>`;
  return [
    ...o.services.map((name) => ({ kind: "service durable" as const, stream: o.stream, name, filter: `${o.namespace}.journal.>` })),
    ...Array.from({ length: o.partitions }, (_, p) => ({ kind: "partition durable" as const, stream: o.partitionedStream, name: partitionDurable(o.group, p), filter: `${o.namespace}.partition.${p}.>` })),
    ...readConsumerNames({ prefix: o.otherPrefix, size: o.poolSize }).map((name) => ({ kind: "another follower's pool" as const, stream: o.stream, name, filter: journal(o.otherSession) })),
    ...readConsumerNames({ prefix: o.ownPrefix, size: o.poolSize }).map((name) => ({ kind: "her own pool" as const, stream: o.stream, name, filter: journal(o.otherSession) })),
  ];
}

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

/** A raw request as the follower: refused when the permissions or the JetStream API say no. */
async function raw(nc: NatsConnection, path: string, target: string, subject: string, body: unknown): Promise<Attempt> {
  const t = Date.now();
  try {
    const m = await nc.request(subject, typeof body === "string" ? body : enc(body), { timeout: 3000 });
    const r = m.data.length > 0 && m.data[0] === 0x7b ? (JSON.parse(new TextDecoder().decode(m.data)) as { error?: { description?: string } }) : {};
    const status = m.headers?.code;
    if (r.error) return { path, via: "raw", target, refused: true, how: `JetStream API error: ${r.error.description ?? "?"}`, ms: Date.now() - t };
    if (status !== undefined && status >= 400) return { path, via: "raw", target, refused: true, how: `status ${status}`, ms: Date.now() - t };
    return { path, via: "raw", target, refused: false, how: "answered", ms: Date.now() - t };
  } catch (e) {
    const pv = e instanceof PermissionViolationError || (e instanceof Error && e.cause instanceof PermissionViolationError);
    return { path, via: "raw", target, refused: pv, how: pv ? "permissions violation" : `error: ${e instanceof Error ? e.message : String(e)}`, ms: Date.now() - t };
  }
}

/** A jetloop call as the follower: refused when it throws a typed jetloop error. */
async function viaJetloop(path: string, target: string, f: () => Promise<unknown>): Promise<Attempt> {
  const t = Date.now();
  try {
    const v = await f();
    if (v && typeof v === "object" && "close" in v) await (v as { close: () => Promise<void> }).close();
    return { path, via: "jetloop", target, refused: false, how: "accepted", ms: Date.now() - t };
  } catch (e) {
    return { path, via: "jetloop", target, refused: isJetloopError(e), how: isJetloopError(e) ? e.code : `untyped ${e instanceof Error ? e.name : String(e)}`, ms: Date.now() - t };
  }
}

/** Every raw consumer path, for one target. Her own pool's pull, info and delete are her grant, not a crossing. */
function rawPaths(t: Target, ownFilter: string): [string, string, unknown][] {
  const api = "$JS.API.CONSUMER";
  const s = t.stream;
  const n = t.name;
  const own = t.kind === "her own pool";
  const config = (extra: Partial<ConsumerConfig>) => ({ stream_name: s, config: { name: n, ack_policy: "explicit", ...extra } });
  const paths: [string, string, unknown][] = [
    // The re-target the issue found: her own filter on a name she does not own (for her own
    // pool: her own subject, another session's filter in the body).
    ["create naming it on her filter's subject", `${api}.CREATE.${s}.${n}.${ownFilter}`, config({ filter_subject: own ? t.filter : ownFilter })],
    ["update naming it on her filter's subject", `${api}.CREATE.${s}.${n}.${ownFilter}`, { ...config({ filter_subject: own ? t.filter : ownFilter }), action: "update" }],
    ["create naming it as a durable on her filter's subject", `${api}.CREATE.${s}.${n}.${ownFilter}`, config({ durable_name: n, filter_subject: own ? t.filter : ownFilter })],
    ["create naming it with its filter", `${api}.CREATE.${s}.${n}.${t.filter}`, config({ filter_subject: t.filter })],
    ["create naming it without a filter subject", `${api}.CREATE.${s}.${n}`, config({ filter_subject: t.filter })],
    ["durable create", `${api}.DURABLE.CREATE.${s}.${n}`, { stream_name: s, config: { durable_name: n, ack_policy: "explicit", filter_subject: t.filter } }],
    ["ack one of its deliveries", `$JS.ACK.${s}.${n}.1.1.1.0.0`, "+ACK"],
    ["pause it", `${api}.PAUSE.${s}.${n}`, { pause_until: new Date(Date.now() + 3_600_000).toISOString() }],
    ["unpin it", `${api}.UNPIN.${s}.${n}`, { group: "g" }],
    ["step its leader down", `${api}.LEADER.STEPDOWN.${s}.${n}`, {}],
    ["list consumers", `${api}.LIST.${s}`, {}],
    ["list consumer names", `${api}.NAMES.${s}`, {}],
  ];
  if (!own) {
    paths.push(
      ["pull from it", `${api}.MSG.NEXT.${s}.${n}`, { batch: 10, expires: 500_000_000 }],
      ["delete it", `${api}.DELETE.${s}.${n}`, {}],
      ["read its state", `${api}.INFO.${s}.${n}`, {}],
    );
  }
  return paths;
}

/** Every jetloop path that names a consumer, for one target. */
function jetloopPaths(bus: Jetloop, t: Target, ownSession: string): [string, () => Promise<unknown>][] {
  const paths: [string, () => Promise<unknown>][] = [
    ["durable subscription naming it (every session)", () => bus.subscribeEvents({ enduring: "all" }, { durable: t.name })],
    ["durable figures (consumer)", () => bus.consumer(t.name)],
    ["parked list", () => bus.parked.list(t.name)],
    ["parked replay", () => bus.parked.replay(t.name, "all")],
    ["parked drop", () => bus.parked.drop(t.name, "all")],
  ];
  // Her own session's durable under a name not hers: the name is what must be refused.
  if (t.kind !== "her own pool") paths.push(["durable subscription naming it (her session)", () => bus.session(ownSession).subscribeEvents({ enduring: "all" }, { durable: t.name })]);
  return paths;
}

interface Snapshot {
  readonly config: string;
  readonly created: string;
}

async function snapshot(jsm: JetStreamManager, targets: readonly Target[]): Promise<Map<string, Snapshot | undefined>> {
  const m = new Map<string, Snapshot | undefined>();
  for (const t of targets) {
    const ci = await jsm.consumers.info(t.stream, t.name).catch(() => undefined);
    m.set(`${t.stream}/${t.name}`, ci && { config: JSON.stringify(ci.config), created: ci.created });
  }
  return m;
}

/** Runs the table: every path × every target, as the follower; reads every target before and after as the operator. */
export async function tryCrossings(o: { follower: NatsConnection; bus: Jetloop; ops: JetStreamManager; targets: readonly Target[]; ownFilter: string; ownSession: string }): Promise<CrossingResult> {
  const before = await snapshot(o.ops, o.targets);
  const attempts: Attempt[] = [];
  for (const t of o.targets) {
    const id = `${t.kind} ${t.name}`;
    for (const [path, subject, body] of rawPaths(t, o.ownFilter)) attempts.push(await raw(o.follower, path, id, subject, body));
    for (const [path, f] of jetloopPaths(o.bus, t, o.ownSession)) attempts.push(await viaJetloop(path, id, f));
  }
  const after = await snapshot(o.ops, o.targets);
  const changed = [...before].filter(([k, v]) => JSON.stringify(v) !== JSON.stringify(after.get(k))).map(([k]) => k);
  return { attempts, changed, targets: o.targets };
}
