/**
 * The feed as a strategy (README.md in this folder): what a feed subscription's source
 * (feed-source.ts) asks of the way the bus follows the feed, and what it is told.
 */
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { ShardJournal } from "../journal/journal-shards.js";
import type { Decoded } from "../sources/delivery.js";
import type { TurnSpan } from "../journal/turn-span.js";

/** One republished event, parsed once for all viewers of its subject. */
export interface FeedMessage {
  /**
   * The journal shard whose stream republished it (its session's; 0 on a namespace not
   * split): `seq` and `lastSeq` are positions in that shard's stream. Every shard
   * republishes into the one feed, so a viewer takes only its own shard's messages.
   */
  readonly shard: number;
  /** `Nats-Sequence`: the journal sequence. */
  readonly seq: number;
  /** `Nats-Last-Sequence`: the previous journal sequence of the same journal subject, 0 for none. */
  readonly lastSeq: number;
  /** The journal subject the event was stored on. */
  readonly subject: string;
  readonly data: Uint8Array;
  /** The span of the jetloop turn it is part of (turn-span.ts), read from its headers when asked. */
  readonly turn?: () => TurnSpan | undefined;
  /**
   * The first viewer's decoding, for the others (feed-source.ts). The feeds belong to one
   * bus, so its viewers share one catalogue and size cap; `includeInternal` is per viewer.
   */
  decoded?: Decoded<unknown>;
}

export type ResyncReason = "reconnect" | "leader_elected";
export type RepairReason = ResyncReason | "gap";

/** A feed subscription's source, as a strategy sees it. */
export interface FeedViewer {
  onFeed(message: FeedMessage): void;
  /** Something may have been missed: read the journal from the last sequence taken to its end. */
  resync(reason: ResyncReason): void;
  /** The strategy read `fromSeq`..`toSeq` of shard `shard`'s journal and dispatched it in order. */
  repaired(shard: number, fromSeq: number, toSeq: number, reason: RepairReason): void;
  fail(error: Error): void;
}

/**
 * A viewer's own check for what its feed may have lost. The loop strategy's is per subject
 * (`Nats-Last-Sequence`); the namespace strategy repairs the feed itself, so its check finds
 * nothing and remembers nothing.
 */
export interface GapCheck {
  /** Where a journal read closing the gap before `m` starts; undefined when nothing was missed. */
  missedFrom(m: FeedMessage): number | undefined;
  /** `seq` lies in a range being read again and was not taken yet. */
  untaken(seq: number): boolean;
  took(seq: number): void;
  /** Everything of the viewer's filter up to `seq` has been read. */
  settled(seq: number): void;
}

/** One way of following the feed: `loop` (loop-feed.ts) or `namespace` (namespace-feed.ts). */
export interface FeedStrategy {
  join(feedSubject: string, viewer: FeedViewer): void;
  leave(feedSubject: string, viewer: FeedViewer): void;
  /** True when a permission error on `subject` concerns a viewer following `feeds`. */
  owns(subject: string, feeds: readonly string[]): boolean;
  /**
   * Resolves once the server has every subscription joined before the call, and the
   * strategy knows its position: from then on it hands over every later event.
   */
  registered(): Promise<void>;
  /** A joining viewer's gap check. */
  gapCheck(): GapCheck;
  /** Something may have been missed on every subscription (a reconnect, a leader election). */
  resyncAll(reason: ResyncReason): void;
  /** Core subscriptions open (shared ones count once). */
  readonly subscriptions: number;
}

/** What the bus's feeds (feeds.ts) give each strategy. */
export interface FeedDeps {
  readonly nc: NatsConnection;
  /** The journal's shards (one on a namespace not split): where gap repairs read, and where each ends now. */
  readonly shards: readonly ShardJournal[];
  readonly namespace: string;
  readonly log: Logger;
  /** Parses a feed message; undefined for one that is not the stream's (logged) or that a test drops. */
  readonly parse: (msg: Msg) => FeedMessage | undefined;
  /** Fails `viewers` with the typed form of a subscription error on `subject`. */
  readonly fail: (viewers: Iterable<FeedViewer>, err: Error, subject: string) => void;
}
