/**
 * The bus: one NATS connection, one namespace, one events stream. It is the SDK's entry
 * point, and it only wires: each capability lives in its own room behind a narrow
 * interface the bus hands the connection to, as NATS.js's `jetstream(nc)` and
 * `jetstreamManager(nc)` are factories over one connection — the journal's shards
 * (journal/), publishing (publish/), the parked store (parking/), the operations
 * (operate/); subscriptions, replay, the answer path and the session handle take the bus
 * core (bus-context.ts), built here once. The package exports the `Jetloop` interface
 * (jetloop.ts) and the factories; the class stays here.
 */
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection, PermissionViolationError } from "@nats-io/transport-node";
import { pino, type Logger } from "pino";
import type { BusContext } from "./bus-context.js";
import { openConnection } from "./connection/connect.js";
import { watchStatus } from "./connection/status.js";
import { type BusOptions, type BusSettings, parseBusOptions, parseConnectOptions } from "./connection/options.js";
import { ConnectionClosedError, PermissionDeniedError } from "./errors.js";
import { defaultRegistry, type JetloopEvent } from "./events/catalogue.js";
import type { EventRegistry } from "./events/registry.js";
import { openJournalShards } from "./journal/journal-shards.js";
import { OpenReads } from "./journal/open-reads.js";
import type { ConnectOptions, Jetloop, JournalLocation } from "./jetloop.js";
import { type BusConsumersReport, type BusProvisionReport, journalShards, type Operations, operations } from "./operate/operations.js";
import { openParkedStore, refusalsTyped } from "./parking/parked.js";
import type { Parked } from "./parking/parked-store.js";
import type { PublishAllOptions } from "./publish/options.js";
import type { PublishOptions, PublishResult } from "./publish/publisher.js";
import type { JournalWriter } from "./publish/journal-writer.js";
import { type Publishing, publishing } from "./publish/publishing.js";
import type { ReconcileOptions, StoredEvent } from "./publish/reconcile.js";
import type { ConsumerFigures } from "./streams/consumer-figures.js";
import type { ConsumersOptions, ProvisionRequest } from "./streams/provision-options.js";
import type { RemovedDurable } from "./streams/remove-durable.js";
import { requireMinimum, supports, type Feature } from "./subjects/server-features.js";
import { sessionJournalSubject, streamSubjects } from "./subjects/subjects.js";
import { decodeContexts, type Delivery } from "./sources/delivery.js";
import type { EventFilter } from "./sources/filter.js";
import type { SubscribeOptions } from "./sources/options.js";
import { Feeds } from "./feed/feeds.js";
import { OpenSubscriptions } from "./sources/open-subscriptions.js";
import { replay, type ReplayOptions } from "./subscribe/replay.js";
import { type DurableSubscription, subscribe, type Subscription } from "./subscribe/subscription.js";
import { type SessionHandle, sessionHandle } from "./session.js";
import { type GateServer, serveGates, type ServeGatesOptions } from "./commands/gate-server.js";
import { WorkspaceRuleStore, type WorkspaceRules } from "./commands/workspace-rules.js";
import { traceLogFields } from "./telemetry/index.js";

export type { ConnectOptions, Jetloop, JournalLocation } from "./jetloop.js";
export type { BusProvisionReport, ShardProvisionReport } from "./operate/operations.js";
export type { PublishAllOptions, ProvisionRequest };

/** Listeners for permission violations the server reports asynchronously. */
type ViolationListener = (e: PermissionViolationError) => void;

/** The bus: `Jetloop`'s implementation. Its members' docs are on the interface. */
class BusImpl<E = JetloopEvent> implements Jetloop<E> {
  readonly nc: NatsConnection;
  readonly settings: BusSettings;
  readonly registry: EventRegistry<E>;
  readonly log: Logger;
  readonly serverVersion: string;
  readonly parked: Parked;
  readonly rules: WorkspaceRules;
  /** The bus core the layers below get (bus-context.ts); never handed to users (`busContext` is for jetloop's tests). */
  readonly context: BusContext<E>;
  readonly #ownsConnection: boolean;
  /** Every journal read in progress, over all shards: stopped when the bus closes. */
  readonly #reads = new OpenReads();
  readonly #publishing: Publishing<E>;
  readonly #operations: Operations;
  readonly #violationListeners = new Set<ViolationListener>();
  /** What else closes with the bus (gate and control servers); its subscriptions close through `context.subscriptions`. */
  readonly #closers = new Set<() => Promise<void>>();
  #jsm: Promise<JetStreamManager> | undefined;
  #closed = false;

  constructor(nc: NatsConnection, options: BusOptions<E>, ownsConnection: boolean) {
    const settings = parseBusOptions(options);
    this.settings = settings;
    this.nc = nc;
    this.#ownsConnection = ownsConnection;
    this.registry = options.registry ?? defaultRegistry;
    const log = (options.logger ?? pino({ name: "jetloop", level: "warn", mixin: traceLogFields }, process.stderr)).child({ namespace: settings.namespace });
    this.log = log;
    this.serverVersion = nc.info?.version ?? "0.0.0";
    requireMinimum(this.serverVersion);
    const jsm = () => this.jetstreamManager();
    const parked = openParkedStore(nc, jsm, settings);
    this.parked = refusalsTyped(parked);
    const rules: WorkspaceRules = new WorkspaceRuleStore(nc, settings.namespace);
    this.rules = rules;
    const js = jetstream(nc);
    const conn = { nc, settings, log, serverVersion: this.serverVersion, jetstreamManager: jsm };
    const shards = openJournalShards({ ...conn, js, reads: this.#reads });
    this.#publishing = publishing({ ...conn, registry: this.registry, shards, closed: () => this.#closed });
    PUBLISHINGS.set(this, this.#publishing);
    this.#operations = operations({ ...conn, parked: this.parked, journals: shards.all });
    const onPermissionViolation = (listener: ViolationListener) => {
      this.#violationListeners.add(listener);
      return () => this.#violationListeners.delete(listener);
    };
    const decoding = decodeContexts(settings.namespace, this.registry, settings.maxEventBytes, settings.shards);
    this.context = {
      nc,
      js,
      shards,
      settings,
      registry: this.registry,
      log,
      parked,
      rules,
      feeds: new Feeds({ nc, shards, namespace: settings.namespace, log }),
      subscriptions: new OpenSubscriptions(nc, log, onPermissionViolation),
      decoding: (includeInternal) => decoding[includeInternal ? 1 : 0],
      jetstreamManager: jsm,
      onPermissionViolation,
      onClose: (close) => {
        // Nothing would close it: a bus over a caller's connection can outlive its close().
        if (this.#closed) throw new ConnectionClosedError("the bus is closed");
        this.#closers.add(close);
        return () => this.#closers.delete(close);
      },
      publish: (event, options) => this.#publishing.publishWhileClosing(event, options),
      eventCap: () => this.#publishing.maxEventBytes,
      consumer: (durable, shard) => this.consumer(durable, shard),
    };
    onPermissionViolation((e) => {
      if (e.operation === "publish") this.#publishing.denied(e.subject, new PermissionDeniedError("publish", e.subject, { cause: e }));
    });
    void watchStatus(nc, log, (e) => {
      for (const l of this.#violationListeners) l(e);
    });
  }

  get namespace(): string {
    return this.settings.namespace;
  }

  get stream(): string {
    return this.settings.stream;
  }

  get shards(): number {
    return this.settings.shards;
  }

  journalOf(sessionId: string): JournalLocation {
    const { shard, stream } = this.context.shards.of(sessionId);
    return { shard, stream, subject: sessionJournalSubject(this.namespace, sessionId, shard) };
  }

  journals(): readonly JournalLocation[] {
    return this.context.shards.all.map(({ shard, stream }) => ({ shard, stream, subject: streamSubjects(this.namespace, shard)[0]! }));
  }

  supports(feature: Feature): boolean {
    return supports(this.serverVersion, feature);
  }

  jetstreamManager(): Promise<JetStreamManager> {
    this.#jsm ??= jetstreamManager(this.nc, { checkAPI: false });
    return this.#jsm;
  }

  publish(event: E, options?: PublishOptions): Promise<PublishResult> {
    return this.#publishing.publish(event, options);
  }

  publishAll(events: Iterable<E>, options?: PublishAllOptions): Promise<PublishResult[]> {
    return this.#publishing.publishAll(events, options);
  }

  storedEvents(events: Iterable<E>, options: ReconcileOptions): Promise<Map<string, StoredEvent>> {
    return this.#publishing.storedEvents(events, options);
  }

  subscribeEvents(filter: EventFilter, options: SubscribeOptions & { durable: string }): Promise<DurableSubscription<E>>;
  subscribeEvents(filter: EventFilter, options?: SubscribeOptions): Promise<Subscription<E>>;
  async subscribeEvents(filter: EventFilter, options: SubscribeOptions = {}): Promise<Subscription<E>> {
    return subscribe(this.context, filter, options);
  }

  replay(filter: EventFilter, options?: ReplayOptions): AsyncGenerator<Delivery<E>, void, undefined> {
    return replay(this.context, filter, options);
  }

  session(sessionId: string): SessionHandle<E> {
    return sessionHandle(this.context, sessionId);
  }

  serveGates(this: BusImpl<JetloopEvent>, sessionId: string, loopId: string, options?: ServeGatesOptions): Promise<GateServer> {
    return serveGates(this.context, sessionId, loopId, options);
  }

  provision(request?: ProvisionRequest): Promise<BusProvisionReport> {
    return this.#operations.provision(request);
  }

  consumers(options?: ConsumersOptions): Promise<BusConsumersReport> {
    return this.#operations.consumers(options);
  }

  consumer(durable: string, shard?: number): Promise<ConsumerFigures | undefined> {
    return this.#operations.consumer(durable, shard);
  }

  removeDurable(durable: string): Promise<RemovedDurable> {
    return this.#operations.removeDurable(durable);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#reads.close();
    await Promise.allSettled([this.context.subscriptions.closeAll(), ...[...this.#closers].map((close) => close())]);
    this.#publishing.closeWriters();
    if (this.#ownsConnection && !this.nc.isClosed()) await this.nc.close();
  }
}

/**
 * Connects to NATS and returns a bus that owns the connection:
 * `const bus = await connect({ servers, namespace })`. Options are checked before dialing.
 */
export async function connect<E = JetloopEvent>(options: ConnectOptions<E> = {}): Promise<Jetloop<E>> {
  const { connection, bus } = parseConnectOptions(options); // fail before dialing
  const nc = await openConnection(connection);
  try {
    return new BusImpl<E>(nc, { ...bus, shards: await journalShards(nc, bus) }, true);
  } catch (e) {
    await nc.close();
    throw e;
  }
}

/** A bus over a connection the caller owns; the bus's `close()` leaves the connection open. */
export function fromConnection<E = JetloopEvent>(nc: NatsConnection, options: BusOptions<E> = {}): Jetloop<E> {
  return new BusImpl<E>(nc, options, false);
}

/** Each bus's publishing, for `busWriters` (a map, so the bus shows no member beyond its interface). */
const PUBLISHINGS = new WeakMap<object, { readonly writers: readonly JournalWriter[] }>();

/** A bus's journal writers, one per shard. For jetloop's own tests (a writer's lanes after a cut); not exported by the package. */
export function busWriters<E>(bus: Jetloop<E>): readonly JournalWriter[] {
  const p = PUBLISHINGS.get(bus);
  if (p === undefined) throw new TypeError("not a bus made by connect() or fromConnection()");
  return p.writers;
}

/**
 * The context a bus hands the layers below it. For jetloop's own tests and benchmarks
 * (a feed hub's test hook, its subscription count); not exported by the package.
 */
export function busContext<E>(bus: Jetloop<E>): BusContext<E> {
  if (!(bus instanceof BusImpl)) throw new TypeError("not a bus made by connect() or fromConnection()");
  return (bus as BusImpl<E>).context;
}
