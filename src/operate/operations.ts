/**
 * The bus's operations: provisioning the namespace's streams, the consumers report, one
 * durable's figures, removing a durable, and reading the provisioned shard layout at
 * connect. The bus hands it the connection (`operations(conn)`, as NATS.js's
 * `jetstreamManager(nc)` is a factory over one connection) and delegates to it.
 */
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { type BusOptions, type BusSettings, parseBusOptions } from "../connection/options.js";
import { ShardLayoutError } from "../errors.js";
import { permissionRefusal } from "../journal/consumer-errors.js";
import type { Parked } from "../parking/parked-store.js";
import { type ConsumerFigures, type ConsumersReport, consumersReport } from "../streams/consumer-figures.js";
import { defaultMembersStreamName, defaultPartitionedStreamName } from "../streams/declared.js";
import { type Durability, type DurabilityWarning, durabilityWarnings, type SyncSetting } from "../streams/durability.js";
import { spreadLeaders, streamLeaders } from "../streams/leaders.js";
import { type ProvisionOptions, provisionParkedStream, provisionPartitioned, provisionStream, type ProvisionReport } from "../streams/provision.js";
import { type ConsumersOptions, parseConsumersOptions, parseProvisionRequest, type ProvisionRequest } from "../streams/provision-options.js";
import { removeDurable, type RemovedDurable } from "../streams/remove-durable.js";
import type { RetentionWarning } from "../streams/retention.js";
import { type JournalShard, provisionedShards } from "../streams/shards.js";
import { type GroupReport, groupsReport } from "../group/groups-report.js";

/** One shard's stream, as provisioned: which shard, and on a cluster the server leading it. */
export interface ShardProvisionReport extends ProvisionReport {
  readonly shard: number;
  /** The server leading the shard's stream ("" while it has none); only on a cluster. */
  readonly leader?: string;
}

/** What `bus.provision()` did: the journal's stream (and each shard's), the parked store, durability and retention warnings. */
export interface BusProvisionReport extends ProvisionReport {
  /** Each shard's stream, when the namespace is split in more than one (the report's own fields are shard 0's). */
  readonly shards?: readonly ShardProvisionReport[];
  /** Where the stream's leader is, on a cluster. */
  readonly leader?: string;
  /** The parked store (`streams/parked.json`), provisioned with the events stream. */
  readonly parked: ProvisionReport;
  /** The partitioned stream and the membership store, when `partitions` was given. */
  readonly partitioned?: { readonly partitioned: ProvisionReport; readonly members: ProvisionReport };
  /** Retention limits in force that can remove events a durable has not acknowledged. */
  readonly warnings: readonly RetentionWarning[];
  /** The sync settings read, and what can lose acknowledged events on a crash or power loss. */
  readonly durability: { readonly profile: Durability; readonly settings: readonly SyncSetting[]; readonly warnings: readonly DurabilityWarning[] };
}

/** The consumers report as the bus gives it: the durables, the groups, and with `monitor` the servers' sync warnings. */
export type BusConsumersReport = ConsumersReport & { groups: readonly GroupReport[]; durabilityWarnings: readonly DurabilityWarning[] };

/** What the operations are made over: the bus's connection, settings, parked store and journal streams. */
export interface OperateConnection {
  readonly nc: NatsConnection;
  readonly settings: BusSettings;
  readonly log: Logger;
  readonly serverVersion: string;
  readonly parked: Parked;
  /** The journal's streams, one per shard. */
  readonly journals: readonly { readonly shard: JournalShard; readonly stream: string }[];
  jetstreamManager(): Promise<JetStreamManager>;
}

/** The bus's operations over `conn`; their docs are on the `Jetloop` interface. */
export function operations(conn: OperateConnection): Operations {
  return new Operations(conn);
}

export class Operations {
  readonly #conn: OperateConnection;

  constructor(conn: OperateConnection) {
    this.#conn = conn;
  }

  async provision(request: ProvisionRequest = {}): Promise<BusProvisionReport> {
    const { nc, settings, serverVersion, journals } = this.#conn;
    const { namespace } = settings;
    const { mode, replicas, maxAge, maxBytes, duplicateWindow, profile, monitor, partitions } = parseProvisionRequest(request, {
      publishDeadlineMs: settings.publishDeadlineMs,
      clustered: Boolean(nc.info?.cluster),
    });
    const jsm = await this.#conn.jetstreamManager();
    const shards = await this.#provisionShards(jsm, { replicas, mode, maxAge, maxBytes, duplicateWindow });
    // The report's own fields are the journal's (shard 0's when it is split), as before shards.
    const { shard: _shard, ...report } = shards[0]!;
    const parked = await provisionParkedStream(jsm, { namespace, stream: this.#conn.parked.stream, replicas, mode, serverVersion });
    const missing = (r: ProvisionReport) => r.drift.some((d) => d.field === "name" && d.live === undefined);
    const warnings: RetentionWarning[] = [];
    for (const [i, shard] of journals.entries()) {
      if (!missing(shards[i]!)) warnings.push(...(await consumersReport(jsm, [shard], missing(parked) ? undefined : this.#conn.parked)).warnings);
    }
    const durability = { profile, ...(await durabilityWarnings(settings.stream, monitor, replicas, profile)) };
    const partitioned =
      partitions === undefined
        ? undefined
        : await provisionPartitioned(jsm, {
            namespace,
            journals: journals.map((s) => ({ stream: s.stream, shard: s.shard })),
            stream: defaultPartitionedStreamName(namespace),
            membersStream: defaultMembersStreamName(namespace),
            partitions,
            replicas,
            mode,
            maxAge,
            maxBytes,
            serverVersion,
          });
    return { ...report, ...(shards.length > 1 ? { shards } : {}), parked, ...(partitioned ? { partitioned } : {}), warnings, durability };
  }

  /**
   * The journal's streams, one per shard. Refused when the namespace is provisioned in
   * another number of shards: that is a migration, never an update. On a cluster, the
   * shards' leaders are spread over its servers and each report says where its leader is.
   */
  async #provisionShards(jsm: JetStreamManager, vars: Pick<ProvisionOptions, "replicas" | "mode" | "maxAge" | "maxBytes" | "duplicateWindow">): Promise<ShardProvisionReport[]> {
    const { nc, settings, serverVersion, journals, log } = this.#conn;
    const { namespace } = settings;
    const count = settings.shards;
    const live = await provisionedShards(jsm, settings.stream, namespace);
    if (live !== undefined && live !== count) {
      throw new ShardLayoutError(
        [live],
        count,
        `the journal of namespace ${namespace} is provisioned in ${live} shard${live === 1 ? "" : "s"}, not ${count}: changing the shard count of a live namespace is a migration (docs/scale.md), not a provision`,
      );
    }
    const reports: ShardProvisionReport[] = [];
    for (const shard of journals) {
      const r = await provisionStream(jsm, { namespace, stream: shard.stream, shard: shard.shard, maxEventBytes: settings.maxEventBytes, serverVersion, ...vars });
      reports.push({ ...r, shard: shard.shard.index });
    }
    if (!nc.info?.cluster || reports.some((r) => r.action === "drifted" && r.drift.some((d) => d.field === "name"))) return reports;
    const streams = journals.map((s) => s.stream);
    const leaders = vars.mode === "verify" || count === 1 ? await streamLeaders(jsm, streams) : await spreadLeaders(nc, jsm, streams, serverVersion, log);
    return reports.map((r, i) => ({ ...r, leader: leaders[i]!.leader }));
  }

  /**
   * Every durable of the namespace with its lag, parked count and retention warnings; with
   * `monitor`, also a warning for each server that acknowledges before syncing.
   */
  async consumers(options: ConsumersOptions = {}): Promise<BusConsumersReport> {
    const { monitor } = parseConsumersOptions(options);
    const jsm = await this.#conn.jetstreamManager();
    let report: ConsumersReport & { groups: readonly GroupReport[] };
    try {
      report = { ...(await consumersReport(jsm, this.#conn.journals, this.#conn.parked)), groups: await groupsReport(jsm, this.#conn.settings.namespace, this.#conn.parked) };
    } catch (e) {
      throw permissionRefusal(e);
    }
    if (monitor.length === 0) return { ...report, durabilityWarnings: [] };
    // Replicas matter to the strict profile only; the default one warns of the sync setting alone.
    return { ...report, durabilityWarnings: (await durabilityWarnings(this.#conn.settings.stream, monitor, 3, "default")).warnings };
  }

  async consumer(durable: string, shard?: number): Promise<ConsumerFigures | undefined> {
    return (await this.consumers()).consumers.find((c) => c.durable === durable && (shard === undefined || this.#conn.settings.shards === 1 || c.shard === shard));
  }

  async removeDurable(durable: string): Promise<RemovedDurable> {
    try {
      return await removeDurable(await this.#conn.jetstreamManager(), this.#conn.journals, this.#conn.parked.stream, durable);
    } catch (e) {
      throw permissionRefusal(e);
    }
  }
}

/**
 * How many shards the bus's journal has: read from the server, and checked against the
 * option when it is given (a bus assuming another count is refused before it writes). An
 * account that may not read the streams, or a bus with `readConsumers`, gets the option, else 1.
 */
export async function journalShards(nc: NatsConnection, options: BusOptions<unknown>): Promise<number | undefined> {
  const settings = parseBusOptions(options);
  // A user reading under her own pool of consumer names is confined to her sessions: the
  // streams' info (which would list every session's subjects) is not hers to read.
  if (settings.readConsumers) return options.shards;
  let live: number | undefined;
  try {
    live = await provisionedShards(await jetstreamManager(nc, { checkAPI: false }), settings.stream);
  } catch (e) {
    if (e instanceof ShardLayoutError) throw e;
    return options.shards;
  }
  if (live !== undefined && options.shards !== undefined && live !== options.shards) {
    throw new ShardLayoutError([live], options.shards, `the journal ${settings.stream} is provisioned in ${live} shard${live === 1 ? "" : "s"}, not ${options.shards}`);
  }
  return options.shards ?? live;
}
