/**
 * The lag of a namespace's durables, as the server counts it: what each has not been
 * delivered yet, what waits for its ack, what was redelivered, what is parked, when it
 * last moved, and how many events of its own it has not finished (`behind`).
 */
import { type ConsumerInfo, JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from "@nats-io/jetstream";
import { NotProvisionedError } from "../errors.js";
import { liveDurable, type LiveDurable } from "./durable-drift.js";
import { retentionWarnings, type RetentionWarning } from "./retention.js";
import type { JournalShard } from "./shards.js";

/**
 * What the figures need of the parked store: its entries counted per durable. The bus passes
 * its parked store in (parking/ sits above streams/, so streams/ names only this much of it).
 */
export interface ParkedCounts {
  counts(shard?: JournalShard): Promise<ReadonlyMap<string, number>>;
}

/** A durable consumer's figures as the server reports them (`bus.consumers()`, `jetloop consumers`): pending, waiting for ack, redelivered, parked. */
export interface ConsumerFigures {
  readonly durable: string;
  /** Matching events not yet delivered (the server's num_pending). */
  readonly pending: number;
  /** Delivered, waiting for an ack (num_ack_pending). */
  readonly ackPending: number;
  /** Delivered more than once and not yet acknowledged (num_redelivered). */
  readonly redelivered: number;
  /** Pull requests waiting: roughly, processes attached now (num_waiting). */
  readonly waiting: number;
  /** Entries in the parked store, held or being replayed. */
  readonly parked: number;
  /** The latest delivery or acknowledgement, when the server reports one. */
  readonly lastActivity: Date | undefined;
  /** The last journal sequence delivered, and the ack floor. */
  readonly deliveredSeq: number;
  readonly ackFloorSeq: number;
  /**
   * The events its filter delivers that it has not acknowledged: not delivered yet
   * (`pending`, which the server counts through the filter) plus delivered and
   * unacknowledged (`ackPending`). Not the journal's last sequence minus the ack floor:
   * the journal holds other sessions' events, which this durable never gets.
   */
  readonly behind: number;
  /** Deliveries before a failing event is parked (jetloop's limit); undefined: none recorded. */
  readonly maxDeliver: number | undefined;
  /** Redelivery delays in ms; empty: a fixed ack wait (`ackWaitMs`). */
  readonly backoffMs: readonly number[];
  readonly ackWaitMs: number;
  /**
   * The journal shard whose stream the durable is a consumer of, on a namespace split in
   * S > 1 (its sequences and `behind` are that shard's); absent on one never split.
   */
  readonly shard?: number;
}

/** One journal shard's stream as the report read it. */
export interface ShardFigures {
  readonly shard: number;
  readonly stream: string;
  readonly lastSeq: number;
}

/** Every durable of the namespace with its figures, and the journal's position when they were read (`bus.consumers()`). */
export interface ConsumersReport {
  /** The journal's stream (shard 0's when split: every shard's in `shards`). */
  readonly stream: string;
  /** The journal's last sequence when the figures were read (shard 0's when split). */
  readonly lastSeq: number;
  /** Each shard's stream and last sequence, on a namespace split in S > 1. */
  readonly shards?: readonly ShardFigures[];
  /** Every shard's durables, by name (then shard). */
  readonly consumers: readonly ConsumerFigures[];
  /** Retention limits that can remove events a durable has not acknowledged. */
  readonly warnings: readonly RetentionWarning[];
}

/** The server sends `last_active` as an RFC 3339 time (the client's type says nanoseconds). */
function lastActive(ci: ConsumerInfo): Date | undefined {
  const times = [ci.delivered.last_active, ci.ack_floor.last_active] as unknown[];
  const ms = Math.max(...times.map((t) => (typeof t === "string" ? Date.parse(t) : NaN)).filter((n) => !Number.isNaN(n)));
  return Number.isFinite(ms) ? new Date(ms) : undefined;
}

const redelivery = ({ maxDeliver, backoffMs, ackWaitMs }: LiveDurable) => ({ maxDeliver, backoffMs, ackWaitMs });

export function figuresOf(ci: ConsumerInfo, parked: number): ConsumerFigures {
  return {
    durable: ci.config.durable_name ?? ci.name,
    pending: ci.num_pending,
    ackPending: ci.num_ack_pending,
    redelivered: ci.num_redelivered,
    waiting: ci.num_waiting,
    parked,
    lastActivity: lastActive(ci),
    deliveredSeq: ci.delivered.stream_seq,
    ackFloorSeq: ci.ack_floor.stream_seq,
    behind: ci.num_pending + ci.num_ack_pending,
    ...redelivery(liveDurable(ci.config)),
  };
}

/**
 * Every durable of the journal's streams (ordered consumers are not durables), by name,
 * then shard. `journals`: the shards' streams (one for a namespace never split: its
 * figures carry no shard). A durable's parked count is its own shard's entries. Without a
 * parked store (not provisioned yet) every parked count is 0.
 */
export async function consumersReport(jsm: JetStreamManager, journals: readonly { readonly stream: string; readonly shard: JournalShard }[], parked: ParkedCounts | undefined): Promise<ConsumersReport> {
  const split = journals.length > 1;
  const shards: ShardFigures[] = [];
  const consumers: ConsumerFigures[] = [];
  const warnings: RetentionWarning[] = [];
  for (const { stream, shard } of journals) {
    try {
      const info = await jsm.streams.info(stream);
      const infos: ConsumerInfo[] = [];
      for await (const ci of jsm.consumers.list(stream)) if (ci.config.durable_name) infos.push(ci);
      const counts = (await parked?.counts(split ? shard : undefined)) ?? new Map<string, number>();
      const own = infos.map((ci) => ({ ...figuresOf(ci, counts.get(ci.config.durable_name!) ?? 0), ...(split ? { shard: shard.index } : {}) }));
      consumers.push(...own);
      shards.push({ shard: shard.index, stream, lastSeq: info.state.last_seq });
      warnings.push(...retentionWarnings(stream, info.config, own.map((c) => ({ durable: c.durable, unacknowledged: c.pending + c.ackPending }))));
    } catch (e) {
      if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) throw new NotProvisionedError(stream);
      throw e;
    }
  }
  consumers.sort((a, b) => a.durable.localeCompare(b.durable) || (a.shard ?? 0) - (b.shard ?? 0));
  return { stream: shards[0]!.stream, lastSeq: shards[0]!.lastSeq, ...(split ? { shards } : {}), consumers, warnings };
}

/** A partitioned group's figures: each partition's consumer, and their sums. */
export interface GroupFigures {
  readonly stream: string;
  readonly partitions: readonly (ConsumerFigures & { readonly partition: number })[];
  /** Sums over the partitions (`behind`: their pending plus unacknowledged, the group's backlog). */
  readonly total: { readonly pending: number; readonly ackPending: number; readonly redelivered: number; readonly parked: number; readonly behind: number };
}

/**
 * The figures of a group's partition consumers (`durables[p]` on the partitioned stream).
 * A partition's `behind` is its own backlog (pending plus unacknowledged): stream sequences
 * of the partitioned stream interleave all partitions, so "last sequence minus ack floor"
 * would count other partitions' events.
 */
export async function groupFigures(jsm: JetStreamManager, stream: string, durables: readonly string[], parked: ParkedCounts | undefined): Promise<GroupFigures> {
  const counts = (await parked?.counts()) ?? new Map<string, number>();
  const infos = await Promise.all(durables.map(async (durable, partition) => ({ partition, info: await jsm.consumers.info(stream, durable) })));
  return groupFiguresOf(stream, infos, counts);
}

/** A group's figures from its partitions' consumer infos and the parked counts per durable. */
export function groupFiguresOf(stream: string, infos: readonly { readonly partition: number; readonly info: ConsumerInfo }[], parkedCounts: ReadonlyMap<string, number>): GroupFigures {
  const partitions = infos.map(({ partition, info }) => {
    const f = figuresOf(info, parkedCounts.get(info.config.durable_name ?? info.name) ?? 0);
    return { ...f, partition };
  });
  const sum = (k: "pending" | "ackPending" | "redelivered" | "parked" | "behind") => partitions.reduce((n, p) => n + p[k], 0);
  return { stream, partitions, total: { pending: sum("pending"), ackPending: sum("ackPending"), redelivered: sum("redelivered"), parked: sum("parked"), behind: sum("behind") } };
}
