import { z } from "zod";
import { OptionsError } from "../errors.js";
import { functionOption, noOptions, optionsError, parseOptions } from "../options.js";
import type { ParkReason } from "../parking/parked-entry.js";
import { durableNameSchema } from "../subjects/subjects.js";
import type { DeliveryFailure } from "./delivery.js";

import { feedModeSchema, type FeedMode } from "../subjects/feed-mode.js";
export { feedModeSchema, type FeedMode } from "../subjects/feed-mode.js";

/** Where the journal part of a subscription starts in one shard (`seq` is a position in that shard's stream). */
export type StartPosition = "new" | "all" | { readonly seq: number } | { readonly time: Date };

/**
 * A namespace-wide reader's position: per journal shard, the last journal sequence it was
 * handed (0: none), indexed by shard, one entry per shard of the namespace. A subscription's
 * `positions()` is one; `{ after: positions }` resumes after it.
 */
export type ShardPositions = readonly number[];

/** Where the journal part of a subscription starts: in one shard, or after a vector of shard positions. */
export type SubscribeStart = StartPosition | { readonly after: ShardPositions };

/** A shard position vector's shape (its length is checked against the namespace's shard count where it is used). */
const positions = z.array(z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)).min(1).readonly();

const start = z.union(
  [z.literal("new"), z.literal("all"), z.strictObject({ seq: z.number().int().min(1) }), z.strictObject({ time: z.date() }), z.strictObject({ after: positions })],
  'must be "new", "all", { seq } (a journal sequence, 1 or more), { time } (a Date) or { after } (a subscription\'s positions(): per shard, the last journal sequence handed)',
);

/** The options both kinds of subscription take. */
export interface CommonSubscribeOptions {
  /** Status of the subscription: poison messages, drops, consumer recreation, gaps repaired. */
  onReport?: ((report: SubscriptionReport) => void) | undefined;
  /** Preview deliveries buffered before the oldest is dropped. Default 1024. */
  ephemeralBuffer?: number | undefined;
}

/** Options of a feed subscription (no `durable`): history from the journal, then the feed; no consumer while it follows. */
export interface FeedSubscribeOptions extends CommonSubscribeOptions {
  /** Where the journal part starts. Default `new`. */
  start?: SubscribeStart | undefined;
  /** How to follow the feed, `loop` or `namespace`. Default: the bus option `feed`. */
  feed?: FeedMode | undefined;
  /** Messages pulled at once from the journal (history, gap repairs), at most 8 MiB of them. Default 256. */
  batch?: number | undefined;
  /** Journal deliveries buffered before the source waits. Default 256. */
  enduringBuffer?: number | undefined;
  /** Durable subscriptions only. */
  durable?: undefined;
  /** Durable subscriptions only. */
  group?: undefined;
  /** Durable subscriptions only. */
  ackWaitMs?: undefined;
  /** Durable subscriptions only. */
  maxDeliver?: undefined;
  /** Durable subscriptions only. */
  backoffMs?: undefined;
  /** Durable subscriptions only. */
  maxAckPending?: undefined;
  /** Durable subscriptions only. */
  autoExtendMs?: undefined;
}

/**
 * Options of a durable subscription (`durable` set): a durable consumer of this name,
 * explicit acks, redelivery, shared work, resume from the ack floor.
 */
export interface DurableSubscribeOptions extends CommonSubscribeOptions {
  /** The durable consumer's name. */
  durable: string;
  /**
   * A partitioned durable group (docs/groups-and-policy.md). The namespace's sessions are
   * split into the partitions `jetloop provision --partitions N` made; each partition is
   * owned by one member of the group (the processes subscribing with this durable name and
   * `group`) at a time, and hands a session's events over in journal order, the next after
   * the previous is settled. `maxAckPending` is 1 per partition and cannot be set.
   * Default: no group.
   */
  group?: GroupOptions | undefined;
  /** Where a new durable starts (an existing one resumes from its ack floor). Default `all`. */
  start?: SubscribeStart | undefined;
  /** A fixed ack wait in ms, instead of the backoff. Default: the backoff (streams/consumers.json). */
  ackWaitMs?: number | undefined;
  /**
   * Deliveries before a failing or unsettled message is parked (kept in the parked store
   * for `parked replay`). Default 5 (streams/consumers.json). Enforced by jetloop; fixed
   * when the durable is created (processes sharing it use the creator's).
   */
  maxDeliver?: number | undefined;
  /** Redelivery delays in ms (the first is the ack wait). Default 30s, 1m, 5m, 15m (streams/consumers.json). */
  backoffMs?: number[] | undefined;
  /** Unacknowledged deliveries outstanding at once. Default 1000 (streams/consumers.json). */
  maxAckPending?: number | undefined;
  /** Messages pulled at once, at most 8 MiB of them. Their ack-wait clock starts at delivery: keep it small for slow handlers. Default 16. */
  batch?: number | undefined;
  /** Keep extending the ack of an unsettled delivery for this long, in ms. Default 15 min. */
  autoExtendMs?: number | undefined;
  /** Journal deliveries buffered before the source waits (they wait out their ack wait if the process dies). Default 16. */
  enduringBuffer?: number | undefined;
  /** Feed subscriptions only. */
  feed?: undefined;
}

/** A durable group's settings (`DurableSubscribeOptions.group`). */
export interface GroupOptions {
  /**
   * A member that stops renewing its lease for this long, in ms, loses its partitions
   * (default 10000); it is also the group's default ack wait (a held delivery is extended
   * meanwhile).
   */
  leaseMs?: number | undefined;
  /** This member's id in the membership store. Default: random. */
  member?: string | undefined;
}

/** Options of a feed subscription or of a durable one, told apart by `durable`. */
export type SubscribeOptions = FeedSubscribeOptions | DurableSubscribeOptions;

// The checking side of the interfaces above (documented there; test/unit/public-types.test.ts
// keeps each shape's input type and its interface the same).
/** Status of the subscription: poison messages, drops, consumer recreation. */

const onReport = functionOption<(report: SubscriptionReport) => void>().optional();
const common = {
  onReport,
  ephemeralBuffer: z.number().int().min(1).default(1024),
};
export const feedShape = z.strictObject({
  ...common,
  start: start.default("new"),
  feed: feedModeSchema.optional(),
  batch: z.number().int().min(1).max(10_000).default(256),
  enduringBuffer: z.number().int().min(1).default(256),
});
export const durableShape = z.strictObject({
  ...common,
  durable: durableNameSchema,
  group: z
    .strictObject({
      leaseMs: z.number().int().min(300).max(600_000).default(10_000),
      member: durableNameSchema.optional(),
    })
    .optional(),
  start: start.default("all"),
  ackWaitMs: z.number().int().min(100).optional(),
  maxDeliver: z.number().int().min(1).optional(),
  backoffMs: z.array(z.number().int().min(1)).min(1).optional(),
  maxAckPending: z.number().int().min(1).optional(),
  batch: z.number().int().min(1).max(10_000).default(16),
  autoExtendMs: z.number().int().min(0).default(15 * 60_000),
  enduringBuffer: z.number().int().min(1).default(16),
});

/** Each kind's keys the other does not take, typed absent there: a settings union reads them as `T | undefined`. */
type Absent<T, Other> = T & { readonly [K in Exclude<keyof Other, keyof T>]?: undefined };

/** The shapes' input types as the options interfaces are (checked in test/unit/public-types.test.ts). */
export type FeedInput = Absent<z.input<typeof feedShape>, z.input<typeof durableShape>>;
export type DurableInput = Absent<z.input<typeof durableShape>, z.input<typeof feedShape>>;
export type FeedSettings = Absent<z.output<typeof feedShape>, z.output<typeof durableShape>>;
export type DurableSettings = Absent<z.output<typeof durableShape>, z.output<typeof feedShape>>;

/** A subscription's checked options with their defaults, told apart by `durable`. */
export type SubscribeSettings = FeedSettings | DurableSettings;

const durableOnly: ReadonlySet<string> = new Set(Object.keys(durableShape.shape).filter((k) => !(k in feedShape.shape)));
const feedOnly: ReadonlySet<string> = new Set(Object.keys(feedShape.shape).filter((k) => !(k in durableShape.shape)));

/** A kind's shape that also takes the other kind's keys when undefined (they are typed absent, `?: undefined`). */
const taking = (shape: z.ZodObject, others: ReadonlySet<string>) =>
  shape.extend(Object.fromEntries([...others].map((k) => [k, z.undefined("applies to the other kind of subscription only").optional()])));
const feedParse = taking(feedShape, durableOnly);
const durableParse = taking(durableShape, feedOnly);

/** The settings of a subscription given no options, shared (read-only) by all such. */
let defaults: FeedSettings | undefined;

/**
 * Checks a subscription's options: the kind is chosen by `durable` (present: durable),
 * then its strict shape applies; the other kind's options are refused by name. `durable`
 * is read as the parser reads every key (an inherited one or a getter counts).
 */
export function parseSubscribeOptions(options: SubscribeOptions | undefined): SubscribeSettings {
  if (noOptions(options)) return (defaults ??= Object.freeze(parseOptions(feedShape, {})) as FeedSettings);
  const durable = typeof options === "object" && options !== null && (options as Record<string, unknown>).durable !== undefined;
  const r = (durable ? durableParse : feedParse).safeParse(options);
  if (r.success) {
    const other = durable ? feedOnly : durableOnly;
    return checkGroup(Object.fromEntries(Object.entries(r.data).filter(([k]) => !other.has(k))) as unknown as SubscribeSettings);
  }
  const error = optionsError(r.error.issues);
  if (durable && feedOnly.has(error.option)) throw new OptionsError(error.option, "applies to feed subscriptions only");
  if (!durable && durableOnly.has(error.option)) throw new OptionsError(error.option, "applies to durable subscriptions only");
  throw error;
}

/** A group's own rules, beyond its shape: one delivery outstanding per partition keeps a session in order (group/README.md). */
function checkGroup(settings: SubscribeSettings): SubscribeSettings {
  if (settings.group === undefined) return settings;
  if (settings.maxAckPending !== undefined) throw new OptionsError("maxAckPending", "is 1 per partition in a group");
  if (settings.durable !== undefined && settings.durable.length > GROUP_DURABLE_MAX) {
    throw new OptionsError("durable", `a group's name is at most ${GROUP_DURABLE_MAX} characters (its partitions' consumers add a suffix)`);
  }
  return settings;
}

/** The range of a replay and how it reads. */
export interface ReplayOptions {
  /** First journal sequence. Default 1. A position in one shard: refused for a filter over several shards (use `after`). */
  fromSeq?: number | undefined;
  /** Last journal sequence, inclusive, not below `fromSeq`. Default: the journal's last sequence when the replay begins. One shard only, as `fromSeq`. */
  toSeq?: number | undefined;
  /** Start after these shard positions (a subscription's `positions()`, or a replay's last deliveries per shard); instead of `fromSeq`. */
  after?: ShardPositions | undefined;
  /** Messages pulled at once, at most 8 MiB of them. Default 512. */
  batch?: number | undefined;
  /** Malformed messages in the range are reported here (`poison`) and skipped. */
  onReport?: ((report: SubscriptionReport) => void) | undefined;
}

export const replayShape = z.strictObject({
  fromSeq: z.number().int().min(1).optional(),
  toSeq: z.number().int().min(1).optional(),
  after: positions.optional(),
  batch: z.number().int().min(1).max(10_000).default(512),
  onReport,
});

export type ReplaySettings = z.output<typeof replayShape>;

export function parseReplayOptions(options: ReplayOptions | undefined): ReplaySettings {
  const s = parseOptions(replayShape, options);
  if (s.after !== undefined && s.fromSeq !== undefined) throw new OptionsError("fromSeq", "give either fromSeq (one shard's position) or after (every shard's), not both");
  if (s.fromSeq !== undefined && s.toSeq !== undefined && s.fromSeq > s.toSeq) throw new OptionsError("toSeq", `${s.toSeq} is below fromSeq ${s.fromSeq}: the range is empty`);
  return s;
}

/**
 * What a subscription tells its caller besides deliveries. A report of the journal part
 * says which shard it concerns (`shard`: its sequences are positions in that shard's stream);
 * so does a replay's on a namespace split in shards; the previews' reports have none.
 */
export type SubscriptionReport = ReportBody & { readonly shard?: number | undefined };

/** What a subscription reports (SubscriptionReport without its shard), told apart by `kind`. */
export type ReportBody =
  | { readonly kind: "poison"; readonly journalSeq: number; readonly subject: string; readonly error: DeliveryFailure }
  | { readonly kind: "dropped"; readonly total: number }
  | { readonly kind: "consumer_recreated"; readonly fromSeq: number; readonly reason: string }
  | { readonly kind: "heartbeats_missed"; readonly count: number }
  /** A durable delivery was copied to the parked store, then terminated. */
  | { readonly kind: "parked"; readonly journalSeq: number; readonly reason: ParkReason; readonly code: string }
  /** Parking failed: the delivery was not terminated and comes again. */
  | { readonly kind: "park_failed"; readonly journalSeq: number; readonly error: Error }
  /**
   * A feed subscription read `fromSeq`..`toSeq` from the journal because the feed may have
   * missed something there (`gap`: a missed sequence detected; `reconnect`,
   * `leader_elected`, `slow_reader`: a loss the connection or the stream announced). Never
   * an empty range: a check that finds the journal no further than what was taken reports
   * nothing.
   */
  | { readonly kind: "gap_closed"; readonly fromSeq: number; readonly toSeq: number; readonly reason: "gap" | "reconnect" | "leader_elected" | "slow_reader" };

/** A group's durable name leaves room for its partition consumers' `_p{n}` suffix. */
export const GROUP_DURABLE_MAX = 58;
