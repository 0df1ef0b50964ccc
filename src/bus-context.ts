/**
 * What the layers below the bus (subscriptions, replay, the answer path, the session
 * handle) need of it: the connection, the namespace and stream, the registry, settings
 * and logger, and the few operations they call. They depend on this, never on the
 * `Jetloop` class (bus.ts), so each can be built and tested without the facade; the
 * lint configuration refuses an import of bus.ts below it.
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
import type { FeedHub } from "./subscribe/feed-hub.js";

export interface BusContext<E> {
  readonly nc: NatsConnection;
  /** One JetStream client for all the bus's reads: ten thousand viewers need not carry one each. */
  readonly js: JetStreamClient;
  readonly namespace: string;
  readonly stream: string;
  readonly settings: BusSettings;
  readonly registry: EventRegistry<E>;
  readonly log: Logger;
  readonly parked: ParkedStore;
  /** Where subscriptions that start at "new" begin. */
  readonly journalPosition: JournalPosition;
  /** The live feed subscriptions that the bus's live subscriptions share. */
  readonly feeds: FeedHub;
  jetstreamManager(): Promise<JetStreamManager>;
  /** Permission errors the server sends asynchronously; returns the unsubscribe. */
  onPermissionViolation(listener: (e: PermissionViolationError) => void): () => void;
  /**
   * `close` runs when the bus closes (an intentional close of what registered it); returns
   * the unregister. Throws ConnectionClosedError once the bus is closed.
   */
  onClose(close: () => Promise<void>): () => void;
  publish(event: E, options?: PublishOptions): Promise<PublishResult>;
  /** One durable's figures, or undefined when there is no such durable. */
  consumer(durable: string): Promise<ConsumerFigures | undefined>;
}
