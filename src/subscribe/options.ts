import { z } from "zod";
import { OptionsError } from "../errors.js";
import type { ParkReason } from "../parking/parked-entry.js";
import type { DeliveryFailure } from "./delivery.js";

/**
 * How a bus follows the live feed (feed-hub.ts): `loop`, a core subscription per followed
 * loop or session; `namespace`, one for the whole namespace. The bus, subscription and
 * gateway options all take it.
 */
export const feedModeSchema = z.enum(["loop", "namespace"]);
export type FeedMode = z.output<typeof feedModeSchema>;

/** Where an enduring subscription starts. */
export type StartPosition = "new" | "all" | { readonly seq: number } | { readonly time: Date };

const start = z.union([
  z.literal("new"),
  z.literal("all"),
  z.object({ seq: z.number().int().min(1) }).strict(),
  z.object({ time: z.date() }).strict(),
]);

const subscribeShape = z.object({
  /** Where the enduring part starts. Default `new` (ordered), `all` (a new durable). */
  start: start.optional(),
  /**
   * A durable consumer name: explicit acks, redelivery, shared work, resume from the ack
   * floor. Omitted: a live subscription (history from the journal, then the stream's
   * republished feed; no consumer while it follows).
   */
  durable: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1-64 characters of [A-Za-z0-9_-]")
    .optional(),
  /**
   * Durable only: a partitioned durable group (src/subscribe/group/README.md). The
   * namespace's sessions are split into the partitions `jetloop provision --partitions N`
   * made; each partition is owned by one member of the group (the processes subscribing
   * with this durable name and `group`) at a time, and hands a session's events over in
   * journal order, the next after the previous is settled. `leaseMs`: a member that stops
   * renewing its lease for this long loses its partitions (default 10000); it is also the
   * group's default ack wait (a held delivery is extended meanwhile). `member`: this
   * member's id in the membership store (default: random). `maxAckPending` is 1 per
   * partition and cannot be set.
   */
  group: z
    .object({
      leaseMs: z.number().int().min(300).max(600_000).default(10_000),
      member: z
        .string()
        .regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1-64 characters of [A-Za-z0-9_-]")
        .optional(),
    })
    .strict()
    .optional(),
  /** Live only: how to follow the feed, `loop` or `namespace` (the bus option `feed`). Default: the bus's. */
  feed: feedModeSchema.optional(),
  /** Durable only: a fixed ack wait in ms, instead of the backoff. Default 30000 (streams/consumers.json). */
  ackWaitMs: z.number().int().min(100).optional(),
  /**
   * Durable only: deliveries before a failing or unsettled message is parked (kept in the
   * parked store for `parked replay`). Default 5 (streams/consumers.json). Enforced by
   * jetloop; fixed when the durable is created (processes sharing it use the creator's).
   */
  maxDeliver: z.number().int().min(1).optional(),
  /** Durable only: redelivery delays in ms (the first is the ack wait). Default 30s, 1m, 5m, 15m. */
  backoffMs: z.array(z.number().int().min(1)).min(1).optional(),
  /** Durable only: unacknowledged deliveries outstanding at once. Default 1000. */
  maxAckPending: z.number().int().min(1).optional(),
  /**
   * Messages pulled at once. Their ack-wait clock starts at delivery, so keep it small
   * for slow durable handlers. Default 256 ordered, 16 durable.
   */
  batch: z.number().int().min(1).max(10_000).optional(),
  /** Durable only: keep extending the ack of an unsettled delivery for this long. Default 15 min. */
  autoExtendMs: z.number().int().min(0).default(15 * 60_000),
  /**
   * Enduring deliveries buffered before the source waits. Default 256 ordered, 16 durable
   * (buffered durable deliveries wait out their ack wait if the process dies).
   */
  enduringBuffer: z.number().int().min(1).optional(),
  /** Live deliveries buffered before the oldest is dropped. Default 1024. */
  ephemeralBuffer: z.number().int().min(1).default(1024),
});

export type SubscribeSettings = z.output<typeof subscribeShape>;

export type SubscribeOptions = z.input<typeof subscribeShape> & {
  /** Status of the subscription: poison messages, drops, consumer recreation. */
  onReport?: (report: SubscriptionReport) => void;
};

/** What a subscription tells its caller besides deliveries. */
export type SubscriptionReport =
  | { readonly kind: "poison"; readonly journalSeq: number; readonly subject: string; readonly error: DeliveryFailure }
  | { readonly kind: "dropped"; readonly total: number }
  | { readonly kind: "consumer_recreated"; readonly fromSeq: number; readonly reason: string }
  | { readonly kind: "heartbeats_missed"; readonly count: number }
  /** A durable delivery was copied to the parked store, then terminated. */
  | { readonly kind: "parked"; readonly journalSeq: number; readonly reason: ParkReason; readonly code: string }
  /** Parking failed: the delivery was not terminated and comes again. */
  | { readonly kind: "park_failed"; readonly journalSeq: number; readonly error: Error }
  /**
   * A live subscription read `fromSeq`..`toSeq` from the journal because the feed may have
   * missed something there (`gap`: a missed sequence detected; `reconnect`,
   * `leader_elected`, `slow_reader`: a loss the connection or the stream announced).
   */
  | { readonly kind: "gap_closed"; readonly fromSeq: number; readonly toSeq: number; readonly reason: "gap" | "reconnect" | "leader_elected" | "slow_reader" };

/** Options parsed by `shape`; the first problem is an OptionsError naming the option. */
export function parseOptions<S extends z.ZodType>(shape: S, options: unknown): z.output<S> {
  const r = shape.safeParse(options);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new OptionsError(issue.path.join(".") || "options", issue.message);
  }
  return r.data;
}

/** `onReport`, checked apart from the data options: zod does not describe functions. */
export function checkOnReport(onReport: unknown): void {
  if (onReport !== undefined && typeof onReport !== "function") throw new OptionsError("onReport", "must be a function");
}

/** A group's durable name leaves room for its partition consumers' `_p{n}` suffix. */
export const GROUP_DURABLE_MAX = 58;

/** The settings of a subscription given no options, shared (read-only) by all such. */
let defaults: SubscribeSettings | undefined;

export function parseSubscribeOptions(options: SubscribeOptions): SubscribeSettings {
  const { onReport, ...rest } = options;
  checkOnReport(onReport);
  if (Object.keys(rest).length === 0) return (defaults ??= Object.freeze(parseOptions(subscribeShape, {})));
  const settings = parseOptions(subscribeShape, rest);
  if (settings.durable !== undefined && settings.feed !== undefined) throw new OptionsError("feed", "applies to live subscriptions only");
  if (settings.group !== undefined) {
    // One delivery outstanding per partition is what keeps a session in order (group/README.md).
    if (settings.maxAckPending !== undefined) throw new OptionsError("maxAckPending", "is 1 per partition in a group");
    if (settings.durable !== undefined && settings.durable.length > GROUP_DURABLE_MAX) {
      throw new OptionsError("durable", `a group's name is at most ${GROUP_DURABLE_MAX} characters (its partitions' consumers add a suffix)`);
    }
  }
  if (settings.durable === undefined) {
    for (const k of ["ackWaitMs", "maxDeliver", "backoffMs", "maxAckPending", "group"] as const) {
      if (settings[k] !== undefined) throw new OptionsError(k, "applies to durable subscriptions only");
    }
  }
  return settings;
}
