/**
 * The bus core: what the layers below the bus (subscriptions, replay, the answer path, the
 * session handle) get of it, built once by bus.ts. They depend on this, never on the bus
 * class, so each can be built and tested without the facade; the lint configuration
 * refuses an import of bus.ts below it. Namespace and stream live in `settings` only.
 */
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { WorkspaceRules } from "./commands/workspace-rules.js";
import type { NatsConnection, PermissionViolationError } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { BusSettings } from "./connection/options.js";
import type { EventRegistry } from "./events/registry.js";
import type { ParkedStore } from "./parking/parked-store.js";
import type { PublishOptions, PublishResult } from "./publish/publisher.js";
import type { ConsumerFigures } from "./streams/consumer-figures.js";
import type { JournalShards } from "./journal/journal-shards.js";
import type { DecodeContext } from "./subscribe/delivery.js";
import type { Feeds } from "./subscribe/feed/feeds.js";
import type { OpenSubscriptions } from "./subscribe/open-subscriptions.js";

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
  /** The namespace's workspace rules ("Approve always for this workspace"). */
  readonly rules: WorkspaceRules;
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
  /** The largest encoded event `publish` takes on this connection (`maxEventBytes` less the journal's header room). */
  eventCap(): number;
  /** One durable's figures (on shard `shard`, an index, when the namespace is split), or undefined when there is no such durable. */
  consumer(durable: string, shard?: number): Promise<ConsumerFigures | undefined>;
}
