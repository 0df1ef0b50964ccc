/**
 * The bus as users hold it: the `Jetloop` interface `connect()` and `fromConnection()`
 * return, with the types of its calls. bus.ts implements it by handing the connection to
 * each capability's room (publish/, subscribe/, commands/, operate/, parking/).
 */
import type { JetStreamManager } from "@nats-io/jetstream";
// Not `import type`: the API report names these imports as the bus declared them before jetloop.ts (etc/jetloop.api.md).
import { type NatsConnection } from "@nats-io/transport-node";
import { type Logger } from "pino";
import type { GateServer, ServeGatesOptions } from "./commands/gate-server.js";
import type { WorkspaceRules } from "./commands/workspace-rules.js";
import type { BusOptions, BusSettings, ConnectionSettings } from "./connection/options.js";
import type { JetloopEvent } from "./events/catalogue.js";
import type { EventRegistry } from "./events/registry.js";
import type { BusProvisionReport } from "./operate/operations.js";
import type { Parked } from "./parking/parked-store.js";
import type { PublishAllOptions } from "./publish/options.js";
import type { PublishOptions, PublishResult } from "./publish/publisher.js";
import type { ReconcileOptions, StoredEvent } from "./publish/reconcile.js";
import type { SessionHandle } from "./session.js";
import type { ConsumerFigures, ConsumersReport } from "./streams/consumer-figures.js";
import type { DurabilityWarning } from "./streams/durability.js";
import type { ProvisionRequest } from "./streams/provision-options.js";
import type { RemovedDurable } from "./streams/remove-durable.js";
import type { JournalShard } from "./streams/shards.js";
import type { Feature } from "./subjects/server-features.js";
import type { GroupReport } from "./group/groups-report.js";
import type { Delivery } from "./sources/delivery.js";
import type { EventFilter } from "./sources/filter.js";
import type { SubscribeOptions } from "./sources/options.js";
import type { ReplayOptions } from "./subscribe/replay.js";
import type { DurableSubscription, Subscription } from "./subscribe/subscription.js";

/** `connect()`'s options: where and how to connect (servers, credentials, TLS, any NATS.js connection option) and the bus's own settings (namespace, shards, limits). A connection of your own goes to `fromConnection` instead. */
export type ConnectOptions<E = JetloopEvent> = ConnectionSettings & BusOptions<E>;

/** Where a journal (a session's, or a shard's) is kept: `bus.journalOf`, `bus.journals`. */
export interface JournalLocation {
  /** The shard: `index` of `count` (0 of 1 for a namespace never split). */
  readonly shard: JournalShard;
  /** The shard's stream. */
  readonly stream: string;
  /** Its subjects in that stream: one session's (`journalOf`), or every session's of the shard (`journals`). */
  readonly subject: string;
}

/** A bus (`connect()`, `fromConnection()`): one connection, one namespace, one events stream. */
export interface Jetloop<E = JetloopEvent> {
  readonly nc: NatsConnection;
  readonly settings: BusSettings;
  readonly registry: EventRegistry<E>;
  readonly log: Logger;
  /** The connected server's version, e.g. `2.10.27`. */
  readonly serverVersion: string;
  /** Durable deliveries kept after their last attempt, for replay or drop. */
  readonly parked: Parked;
  /** The namespace's workspace rules: what "Approve always for this workspace" persisted (src/commands/README.md). */
  readonly rules: WorkspaceRules;
  readonly namespace: string;
  /** The events stream; for a namespace split in shards, the base of the shards' stream names. */
  readonly stream: string;
  /** How many shards (streams) the namespace's journal is split over (the bus option `shards`). */
  readonly shards: number;
  /**
   * Where session `sessionId`'s journal is: its shard, that shard's stream, and the subjects
   * of the session's events there (a `subjects_filter` for the stream's info). A session's
   * journal sequences are that stream's.
   */
  journalOf(sessionId: string): JournalLocation;
  /** Every shard's stream and the subjects it captures, in shard order (one for a namespace never split). */
  journals(): readonly JournalLocation[];
  /** Whether the connected server has a feature jetloop uses where it can (fencing, atomic batches, fast batches). */
  supports(feature: Feature): boolean;
  /** NATS.js's JetStream manager on the bus's connection, for what jetloop does not wrap. */
  jetstreamManager(): Promise<JetStreamManager>;
  /**
   * Validates and publishes one event. Enduring: appended to the journal, resolves with
   * its journal sequence once acknowledged. Ephemeral: a preview, sent on its preview
   * subject, journal sequence 0. Many calls may be in flight at once (up to `maxInFlight` per shard; more wait).
   */
  publish(event: E, options?: PublishOptions): Promise<PublishResult>;
  /**
   * Publishes many events pipelined: all in flight at once (bounded by `maxInFlight` per shard),
   * results in the order given. Rejects with the first failure, after all have settled.
   * With `resume`, events the journal already holds are not published again (at any delay).
   * With `atomic`, committed together in one atomic batch (nats-server 2.12+): all or none.
   */
  publishAll(events: Iterable<E>, options?: PublishAllOptions): Promise<PublishResult[]>;
  /**
   * Which of `events` the journal holds, by event id, read from `since` on their sessions'
   * journal subjects: for a producer that may or may not have stored them (a crash, a
   * PublishTimeoutError) and wants to publish only the rest, past the duplicate window.
   */
  storedEvents(events: Iterable<E>, options: ReconcileOptions): Promise<Map<string, StoredEvent>>;
  /**
   * Subscribes to events: an async iterable of deliveries `{ event, journalSeq }`.
   * Without `durable`, a feed subscription (UI): history from the journal, then the
   * stream's republished feed over core subscriptions shared within the bus; with it, a
   * durable subscription: a named durable consumer whose deliveries are acknowledged
   * explicitly.
   */
  subscribeEvents(filter: EventFilter, options: SubscribeOptions & { durable: string }): Promise<DurableSubscription<E>>;
  /** A feed subscription (without `durable`): history from the journal, then live events. */
  subscribeEvents(filter: EventFilter, options?: SubscribeOptions): Promise<Subscription<E>>;
  /**
   * Reads the journal events `filter` selects (the filter of `subscribeEvents`; its
   * enduring part: previews are never stored) from `fromSeq` to `toSeq` in order, then
   * ends. Filter and options are checked at the call (OptionsError).
   */
  replay(filter: EventFilter, options?: ReplayOptions): AsyncGenerator<Delivery<E>, void, undefined>;
  /** A handle scoped to one session, reading like the Go runtime's `live.SubscribeEvents`. */
  session(sessionId: string): SessionHandle<E>;
  /**
   * The loop actor's side of the answer path: opens gates for one loop and serves the
   * answers to them. Built-in catalogue only (it publishes built-in events). Closes with
   * the bus, settling its pending requests; `{ closeOrphans: true }` first closes the
   * gates a dead actor of the loop left open.
   */
  serveGates(this: Jetloop<JetloopEvent>, sessionId: string, loopId: string, options?: ServeGatesOptions): Promise<GateServer>;
  /**
   * Creates or updates the events stream from `streams/events.json` and the parked store
   * from `streams/parked.json`, and warns of retention that can remove what a durable has
   * not acknowledged.
   */
  provision(request?: ProvisionRequest): Promise<BusProvisionReport>;
  /**
   * Every durable of the namespace with its lag, parked count and retention warnings, and
   * every partitioned group with its partitions (lag, owner) and sums; with `monitor`, also
   * a warning for each server that acknowledges before syncing. On a namespace split in
   * shards: every shard's durables, each naming its `shard`, and `shards` (each stream's
   * last sequence).
   */
  consumers(options?: { monitor?: string[] }): Promise<ConsumersReport & { groups: readonly GroupReport[]; durabilityWarnings: readonly DurabilityWarning[] }>;
  /**
   * One durable's figures, or undefined when there is no such durable. On a namespace split
   * in shards a durable is a consumer of one shard's stream, and two shards may each have
   * one of that name: `shard` (an index) names which; without it, the first by shard.
   */
  consumer(durable: string, shard?: number): Promise<ConsumerFigures | undefined>;
  /**
   * Removes a plain durable: its consumer on every journal shard and its replay consumer on
   * the parked store (its position is lost; what it parked stays). Close the subscriptions
   * on it first: an open one makes its consumer again. `removed` is empty when there was
   * no such durable.
   */
  removeDurable(durable: string): Promise<RemovedDurable>;
  /**
   * Closes the bus's subscriptions (their iteration ends quietly, as after their own
   * `close()`), fails in-flight appends, and closes the connection if the bus opened it.
   * Idempotent.
   */
  close(): Promise<void>;
}
