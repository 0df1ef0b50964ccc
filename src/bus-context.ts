/**
 * The bus core: what the layers below the bus (subscriptions, replay, the answer path, the
 * session handle) get of it, built once by bus.ts. They depend on this, never on the bus
 * class, so each can be built and tested without the facade; the lint configuration
 * refuses an import of bus.ts below it. Namespace and stream live in `settings` only.
 */
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection, PermissionViolationError } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { BusSettings } from "./connection/options.js";
import type { EventRegistry } from "./events/registry.js";
import type { ParkedStore } from "./parking/parked-store.js";
import type { PublishOptions, PublishResult } from "./publish/publisher.js";
import type { ConsumerFigures } from "./streams/consumer-figures.js";
import type { JournalPosition } from "./streams/position.js";
import type { JournalShard } from "./streams/shards.js";
import type { DecodeContext } from "./subscribe/delivery.js";
import type { Feeds } from "./subscribe/feed/feeds.js";
import type { JournalSource } from "./subscribe/journal-range.js";
import type { OpenSubscriptions } from "./subscribe/open-subscriptions.js";

/** One shard of the namespace's journal: its stream, where reads of it go, where it ends now. */
export interface ShardJournal {
  readonly shard: JournalShard;
  readonly stream: string;
  /** Where the shard's reads go (replay, history, gap repair, reconcile): subscribe/journal-range.ts. */
  readonly journal: JournalSource;
  /** Where subscriptions that start at "new" begin. */
  readonly position: JournalPosition;
}

/** The namespace's journal shards: one (the namespace never split) or `count`. */
export interface JournalShards {
  readonly count: number;
  readonly all: readonly ShardJournal[];
  /** The shard session `sessionId` lives in. */
  of(sessionId: string): ShardJournal;
}

export interface BusContext<E> {
  readonly nc: NatsConnection;
  /** One JetStream client for all the bus's reads: ten thousand viewers need not carry one each. */
  readonly js: JetStreamClient;
  /** The namespace's journal: one per shard (streams/shards.ts), where reads of it go. */
  readonly shards: JournalShards;
  readonly settings: BusSettings;
  readonly registry: EventRegistry<E>;
  readonly log: Logger;
  readonly parked: ParkedStore;
  /** The feeds the bus's feed subscriptions share (subscribe/feed/). */
  readonly feeds: Feeds;
  /** The bus's open subscriptions: closed with the bus, watched together. */
  readonly subscriptions: OpenSubscriptions;
  /** How the bus decodes for a filter with or without `includeInternal` (one context each, shared). */
  decoding(includeInternal: boolean): DecodeContext<E>;
  jetstreamManager(): Promise<JetStreamManager>;
  /** Permission errors the server sends asynchronously; returns the unsubscribe. */
  onPermissionViolation(listener: (e: PermissionViolationError) => void): () => void;
  /**
   * `close` runs when the bus closes (an intentional close of what registered it); returns
   * the unregister. Throws ConnectionClosedError once the bus is closed.
   */
  onClose(close: () => Promise<void>): () => void;
  publish(event: E, options?: PublishOptions): Promise<PublishResult>;
  /** One durable's figures (on shard `shard`, an index, when the namespace is split), or undefined when there is no such durable. */
  consumer(durable: string, shard?: number): Promise<ConsumerFigures | undefined>;
}
