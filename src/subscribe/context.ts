/**
 * What subscriptions and replay get of the bus (the bus builds it once, src/bus-context.ts):
 * the connection, its one JetStream client, the journal's shards, settings (the one home of
 * namespace and stream), the feeds, the open subscriptions and the few operations they call.
 * They depend on this narrow part, never on the bus, so each can be built and tested
 * without the facade.
 */
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection, PermissionViolationError } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { BusSettings } from "../connection/options.js";
import type { EventRegistry } from "../events/registry.js";
import type { JournalShards } from "../journal/journal-shards.js";
import type { ParkedStore } from "../parking/parked-store.js";
import type { ConsumerFigures } from "../streams/consumer-figures.js";
import type { DecodeContext } from "../sources/delivery.js";
import type { Feeds } from "../feed/feeds.js";
import type { OpenSubscriptions } from "../sources/open-subscriptions.js";

export interface SubscribeContext<E> {
  readonly nc: NatsConnection;
  /** One JetStream client for all the bus's reads: ten thousand viewers need not carry one each. */
  readonly js: JetStreamClient;
  /** The namespace's journal: one per shard (streams/shards.ts), where reads of it go. */
  readonly shards: JournalShards;
  readonly settings: BusSettings;
  readonly registry: EventRegistry<E>;
  readonly log: Logger;
  readonly parked: ParkedStore;
  /** The feeds the bus's feed subscriptions share (feed/). */
  readonly feeds: Feeds;
  /** The bus's open subscriptions: closed with the bus, watched together. */
  readonly subscriptions: OpenSubscriptions;
  /** How the bus decodes for a filter with or without `includeInternal` (one context each, shared). */
  decoding(includeInternal: boolean): DecodeContext<E>;
  jetstreamManager(): Promise<JetStreamManager>;
  /** Permission errors the server sends asynchronously; returns the unsubscribe. */
  onPermissionViolation(listener: (e: PermissionViolationError) => void): () => void;
  /** One durable's figures (on shard `shard`, an index, when the namespace is split), or undefined when there is no such durable. */
  consumer(durable: string, shard?: number): Promise<ConsumerFigures | undefined>;
}
