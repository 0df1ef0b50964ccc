/**
 * The bus: one NATS connection, one namespace, one events stream. It is the SDK's
 * entry point; each job it offers lives in its own module (publish/, subscribe/,
 * streams/), and this file only wires them together: it builds the bus core
 * (bus-context.ts) once and hands it down. The package exports the `Jetloop` interface
 * and the factories; the class stays here.
 */
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { type NatsConnection, PermissionViolationError } from "@nats-io/transport-node";
import { pino, type Logger } from "pino";
import type { BusContext } from "./bus-context.js";
import type { ShardJournal } from "./journal/journal-shards.js";
import { inboxPrefixOf } from "./connection/inbox.js";
import { openConnection } from "./connection/connect.js";
import type { JournalSource } from "./journal/journal-range.js";
import { OpenReads } from "./journal/open-reads.js";
import { ReadConsumerPool } from "./journal/read-consumers.js";
import { permissionRefusal } from "./journal/consumer-errors.js";
import { type BusOptions, type BusSettings, type ConnectionSettings, parseBusOptions, parseConnectOptions } from "./connection/options.js";
import { requireMinimum, supports, type Feature } from "./subjects/server-features.js";
import { ConnectionClosedError, PermissionDeniedError, ShardLayoutError } from "./errors.js";
import { defaultRegistry, type JetloopEvent } from "./events/catalogue.js";
import type { EventRegistry } from "./events/registry.js";
import { JournalWriter } from "./publish/journal-writer.js";
import { AtomicBatchWriter, checkAtomicBatchSize } from "./publish/atomic-batch.js";
import { type AtomicPublishDeps, publishAtomic } from "./publish/atomic-publish.js";
import { type PublishOptions, type PublishResult, Publisher } from "./publish/publisher.js";
import { parsePublishAllOptions, type PublishAllOptions } from "./publish/options.js";
import { type ReconcileOptions, type StoredEvent, storedEvents } from "./publish/reconcile.js";
import { JournalPosition, type JournalPositions } from "./streams/position.js";
import { OwnFilterPosition } from "./journal/own-position.js";
import { allShards, type JournalShard, provisionedShards, shardOfSession, shardStreamName } from "./streams/shards.js";
import { sessionJournalSubject, streamSubjects } from "./subjects/subjects.js";
import { type ProvisionOptions, provisionParkedStream, provisionPartitioned, provisionStream, type ProvisionReport } from "./streams/provision.js";
import { spreadLeaders, streamLeaders } from "./streams/leaders.js";
import { DEFAULT_DUPLICATE_WINDOW_NS, defaultMembersStreamName, defaultParkedStreamName, defaultPartitionedStreamName } from "./streams/declared.js";
import { type ConsumerFigures, type ConsumersReport, consumersReport } from "./streams/consumer-figures.js";
import type { RetentionWarning } from "./streams/retention.js";
import { type Durability, type DurabilityWarning, durabilityWarnings, type SyncSetting } from "./streams/durability.js";
import { type ConsumersOptions, parseConsumersOptions, parseProvisionRequest, type ProvisionRequest } from "./streams/provision-options.js";
import { type Parked, ParkedStore } from "./parking/parked-store.js";
import { removeDurable, type RemovedDurable } from "./streams/remove-durable.js";
import { WorkspaceRuleStore, type WorkspaceRules } from "./commands/workspace-rules.js";
import { type GroupReport, groupsReport } from "./subscribe/group/groups-report.js";
import type { Delivery } from "./subscribe/delivery.js";
import type { EventFilter } from "./subscribe/filter.js";
import type { SubscribeOptions } from "./subscribe/options.js";
import { decodeContexts } from "./subscribe/delivery.js";
import { Feeds } from "./subscribe/feed/feeds.js";
import { OpenSubscriptions } from "./subscribe/open-subscriptions.js";
import { replay, type ReplayOptions } from "./subscribe/replay.js";
import { type DurableSubscription, subscribe, type Subscription } from "./subscribe/subscription.js";
import { type SessionHandle, sessionHandle } from "./session.js";
import { type GateServer, serveGates, type ServeGatesOptions } from "./commands/gate-server.js";
import { logConnectionStatus, traceLogFields } from "./telemetry/index.js";

export type ConnectOptions<E = JetloopEvent> = ConnectionSettings & BusOptions<E>;
export type { PublishAllOptions, ProvisionRequest };

/** One shard's stream, as provisioned: which shard, and on a cluster the server leading it. */
export interface ShardProvisionReport extends ProvisionReport {
  readonly shard: number;
  /** The server leading the shard's stream ("" while it has none); only on a cluster. */
  readonly leader?: string;
}

export interface BusProvisionReport extends ProvisionReport {
  /** Each shard's stream, when the namespace is split in more than one (the report's own fields are shard 0's). */
  readonly shards?: readonly ShardProvisionReport[];
  /** Where the stream's leader is, on a cluster. */
  readonly leader?: string;
  /** The parked store (`streams/parked.json`), provisioned with the events stream. */
  readonly parked: ProvisionReport;
  /** The partitioned stream and the membership store, when `partitions` was given. */
  readonly partitioned?: { readonly partitioned: ProvisionReport; readonly members: ProvisionReport };
  /** Retention limits in force that can remove events a durable has not acknowledged. */
  readonly warnings: readonly RetentionWarning[];
  /** The sync settings read, and what can lose acknowledged events on a crash or power loss. */
  readonly durability: { readonly profile: Durability; readonly settings: readonly SyncSetting[]; readonly warnings: readonly DurabilityWarning[] };
}

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
  supports(feature: Feature): boolean;
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

/**
 * `bus.parked` as users reach it: a refusal by the server's permissions (a follower naming a
 * durable that is not hers) is a PermissionDeniedError, as on every other path.
 */
function refusalsTyped(store: ParkedStore): Parked {
  const typed =
    <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
    (...a: A): Promise<R> =>
      f(...a).catch((e: unknown) => {
        throw permissionRefusal(e);
      });
  return {
    namespace: store.namespace,
    stream: store.stream,
    park: typed((p) => store.park(p)),
    list: typed((d) => store.list(d)),
    show: typed((d, s, k) => store.show(d, s, k)),
    counts: typed((k) => store.counts(k)),
    drop: typed((d, s) => store.drop(d, s)),
    replay: typed((d, s) => store.replay(d, s)),
  };
}

/** A journal shard as the bus holds it: the context's part, and the writers of its stream. */
interface BusShard extends ShardJournal {
  readonly writer: JournalWriter;
  readonly batches: AtomicBatchWriter;
  duplicateWindowMs(): Promise<number>;
}

/** A stream's duplicate window in ms, read once (the default when it cannot be read; read again next time). */
function lazyDuplicateWindow(jsm: () => Promise<JetStreamManager>, stream: string, log: Logger): () => Promise<number> {
  let window: Promise<number> | undefined;
  return () =>
    (window ??= jsm()
      .then(async (m) => (await m.streams.info(stream)).config.duplicate_window / 1e6)
      .catch((e: unknown) => {
        window = undefined;
        log.debug({ err: e }, "reading the stream's duplicate window failed; using the default");
        return DEFAULT_DUPLICATE_WINDOW_NS / 1e6;
      }));
}

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
  /** The journal's shards, each with its writers (one when the namespace is not split). */
  readonly #shards: readonly BusShard[];
  /** Every journal read in progress, over all shards: stopped when the bus closes. */
  readonly #reads = new OpenReads();
  readonly #publisher: Publisher<E>;
  readonly #atomic: AtomicPublishDeps<E>;
  readonly #violationListeners = new Set<ViolationListener>();
  /** What else closes with the bus (gate and control servers); its subscriptions close through `context.subscriptions`. */
  readonly #closers = new Set<() => Promise<void>>();
  #jsm: Promise<JetStreamManager> | undefined;
  #closed = false;
  /** Set once the closers ran: what closes with the bus (a gate server settling its gates) may still write until then. */
  #writerClosed = false;

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
    const parked = new ParkedStore(nc, jsm, settings.namespace, defaultParkedStreamName(settings.namespace), settings.shards);
    this.parked = refusalsTyped(parked);
    const rules: WorkspaceRules = new WorkspaceRuleStore(nc, settings.namespace);
    this.rules = rules;
    const js = jetstream(nc);
    const reads = this.#reads;
    const inboxPrefix = inboxPrefixOf(nc);
    this.#shards = allShards(settings.shards).map((shard) => {
      const stream = shardStreamName(settings.stream, shard);
      const pool = settings.readConsumers ? new ReadConsumerPool(settings.readConsumers, stream, jsm) : undefined;
      // A user reading under a pool of her own consumer names is confined to her sessions:
      // she reads positions through them, never the stream's info (which lists every subject).
      const info = new JournalPosition(jsm, stream);
      const position: JournalPositions = pool ? new OwnFilterPosition(pool, streamSubjects(settings.namespace, shard)[0]!, info, log) : info;
      const journal: JournalSource = {
        placement: { leader: () => position.leader(), log },
        lastSeq: async (subjects) => (await position.state(subjects)).lastSeq,
        maxPayload: () => nc.info?.max_payload,
        turns: supports(this.serverVersion, "atomicBatch"),
        js,
        stream,
        journalReads: settings.journalReads,
        inboxPrefix,
        reads,
        ...(pool ? { pool } : {}),
      };
      const shardSettings = { ...settings, stream };
      return {
        shard,
        stream,
        journal,
        position,
        writer: new JournalWriter(nc, jsm, shardSettings, log),
        batches: new AtomicBatchWriter(nc, jsm, shardSettings, log),
        // Read once; a user not allowed the stream's info reads the default window back (a
        // longer provisioned window then finds fewer: the batch is refused, never re-stored).
        duplicateWindowMs: lazyDuplicateWindow(jsm, stream, log),
      };
    });
    const shards = this.#shards;
    const of = (sessionId: string) => shards[shardOfSession(sessionId, shards.length).index]!;
    this.#publisher = new Publisher(nc, { shards, of }, { ...settings, serverVersion: this.serverVersion }, this.registry);
    this.#atomic = {
      publisher: this.#publisher,
      batches: (shard) => shards[shard.index]!.batches,
      serverVersion: this.serverVersion,
      storedEvents: (events, since) => this.storedEvents(events, { since }),
      duplicateWindowMs: (shard) => shards[shard.index]!.duplicateWindowMs(),
    };
    const onPermissionViolation = (listener: ViolationListener) => {
      this.#violationListeners.add(listener);
      return () => this.#violationListeners.delete(listener);
    };
    const decoding = decodeContexts(settings.namespace, this.registry, settings.maxEventBytes, settings.shards);
    this.context = {
      nc,
      js,
      shards: { count: shards.length, all: shards, of },
      settings,
      registry: this.registry,
      log,
      parked,
      rules,
      feeds: new Feeds({ nc, shards: { count: shards.length, all: shards, of }, namespace: settings.namespace, log }),
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
      publish: (event, options) =>
        this.#writerClosed ? Promise.reject(new ConnectionClosedError("the bus is closed")) : this.#publisher.publish(event, options),
      eventCap: () => this.#publisher.maxEventBytes,
      consumer: (durable, shard) => this.consumer(durable, shard),
    };
    onPermissionViolation((e) => {
      if (e.operation !== "publish") return;
      const denied = new PermissionDeniedError("publish", e.subject, { cause: e });
      for (const shard of shards) {
        shard.writer.failSubject(e.subject, denied);
        shard.batches.failSubject(e.subject, denied);
      }
      this.#publisher.previewDenied(e.subject, denied);
    });
    void this.#watchStatus();
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
    return this.#shards.map(({ shard, stream }) => ({ shard, stream, subject: streamSubjects(this.namespace, shard)[0]! }));
  }

  supports(feature: Feature): boolean {
    return supports(this.serverVersion, feature);
  }

  jetstreamManager(): Promise<JetStreamManager> {
    this.#jsm ??= jetstreamManager(this.nc, { checkAPI: false });
    return this.#jsm;
  }

  publish(event: E, options?: PublishOptions): Promise<PublishResult> {
    // A bus over a caller's connection leaves it open on close(): refuse here, or previews
    // would still go out on it.
    if (this.#closed) return Promise.reject(new ConnectionClosedError("the bus is closed"));
    return this.#publisher.publish(event, options);
  }

  async publishAll(events: Iterable<E>, options: PublishAllOptions = {}): Promise<PublishResult[]> {
    const { resume, atomic, ...publishOptions } = parsePublishAllOptions(options);
    const all = [...events];
    if (atomic && this.#closed) throw new ConnectionClosedError("the bus is closed");
    if (atomic) checkAtomicBatchSize(all.length);
    const stored = resume === undefined ? undefined : await this.storedEvents(all, resume);
    if (atomic) return publishAtomic(this.#atomic, all, publishOptions, stored);
    const pending = all.map((e) => {
      const held = stored?.get((e as { eventId?: string }).eventId ?? "");
      if (held) return Promise.resolve<PublishResult>({ journalSeq: held.journalSeq, duplicate: true, subject: held.subject, eventId: (e as { eventId: string }).eventId });
      return this.publish(e, publishOptions);
    });
    const settled = await Promise.allSettled(pending);
    const failed = settled.find((s) => s.status === "rejected");
    if (failed) throw failed.reason;
    return settled.map((s) => (s as PromiseFulfilledResult<PublishResult>).value);
  }

  storedEvents(events: Iterable<E>, options: ReconcileOptions): Promise<Map<string, StoredEvent>> {
    if (this.#closed) return Promise.reject(new ConnectionClosedError("the bus is closed"));
    return storedEvents({ shards: this.context.shards, namespace: this.namespace, log: this.log }, events, options);
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

  async provision(request: ProvisionRequest = {}): Promise<BusProvisionReport> {
    const { mode, replicas, maxAge, maxBytes, duplicateWindow, profile, monitor, partitions } = parseProvisionRequest(request, {
      publishDeadlineMs: this.settings.publishDeadlineMs,
      clustered: Boolean(this.nc.info?.cluster),
    });
    const jsm = await this.jetstreamManager();
    const shards = await this.#provisionShards(jsm, { replicas, mode, maxAge, maxBytes, duplicateWindow });
    // The report's own fields are the journal's (shard 0's when it is split), as before shards.
    const { shard: _shard, ...report } = shards[0]!;
    const parked = await provisionParkedStream(jsm, { namespace: this.namespace, stream: this.parked.stream, replicas, mode, serverVersion: this.serverVersion });
    const missing = (r: ProvisionReport) => r.drift.some((d) => d.field === "name" && d.live === undefined);
    const warnings: RetentionWarning[] = [];
    for (const [i, shard] of this.#shards.entries()) {
      if (!missing(shards[i]!)) warnings.push(...(await consumersReport(jsm, [shard], missing(parked) ? undefined : this.parked)).warnings);
    }
    const durability = { profile, ...(await durabilityWarnings(this.stream, monitor, replicas, profile)) };
    const partitioned =
      partitions === undefined
        ? undefined
        : await provisionPartitioned(jsm, {
            namespace: this.namespace,
            journals: this.#shards.map((s) => ({ stream: s.stream, shard: s.shard })),
            stream: defaultPartitionedStreamName(this.namespace),
            membersStream: defaultMembersStreamName(this.namespace),
            partitions,
            replicas,
            mode,
            maxAge,
            maxBytes,
            serverVersion: this.serverVersion,
          });
    return { ...report, ...(shards.length > 1 ? { shards } : {}), parked, ...(partitioned ? { partitioned } : {}), warnings, durability };
  }

  /**
   * The journal's streams, one per shard. Refused when the namespace is provisioned in
   * another number of shards: that is a migration, never an update. On a cluster, the
   * shards' leaders are spread over its servers and each report says where its leader is.
   */
  async #provisionShards(jsm: JetStreamManager, vars: Pick<ProvisionOptions, "replicas" | "mode" | "maxAge" | "maxBytes" | "duplicateWindow">): Promise<ShardProvisionReport[]> {
    const count = this.settings.shards;
    const live = await provisionedShards(jsm, this.stream, this.namespace);
    if (live !== undefined && live !== count) {
      throw new ShardLayoutError(
        [live],
        count,
        `the journal of namespace ${this.namespace} is provisioned in ${live} shard${live === 1 ? "" : "s"}, not ${count}: changing the shard count of a live namespace is a migration (docs/scale.md), not a provision`,
      );
    }
    const reports: ShardProvisionReport[] = [];
    for (const shard of this.#shards) {
      const r = await provisionStream(jsm, { namespace: this.namespace, stream: shard.stream, shard: shard.shard, maxEventBytes: this.settings.maxEventBytes, serverVersion: this.serverVersion, ...vars });
      reports.push({ ...r, shard: shard.shard.index });
    }
    if (!this.nc.info?.cluster || reports.some((r) => r.action === "drifted" && r.drift.some((d) => d.field === "name"))) return reports;
    const streams = this.#shards.map((s) => s.stream);
    const leaders = vars.mode === "verify" || count === 1 ? await streamLeaders(jsm, streams) : await spreadLeaders(this.nc, jsm, streams, this.serverVersion, this.log);
    return reports.map((r, i) => ({ ...r, leader: leaders[i]!.leader }));
  }

  /**
   * Every durable of the namespace with its lag, parked count and retention warnings; with
   * `monitor`, also a warning for each server that acknowledges before syncing.
   */
  async consumers(options: ConsumersOptions = {}): Promise<ConsumersReport & { groups: readonly GroupReport[]; durabilityWarnings: readonly DurabilityWarning[] }> {
    const { monitor } = parseConsumersOptions(options);
    const jsm = await this.jetstreamManager();
    let report: ConsumersReport & { groups: readonly GroupReport[] };
    try {
      report = { ...(await consumersReport(jsm, this.#shards, this.parked)), groups: await groupsReport(jsm, this.namespace, this.parked) };
    } catch (e) {
      throw permissionRefusal(e);
    }
    if (monitor.length === 0) return { ...report, durabilityWarnings: [] };
    // Replicas matter to the strict profile only; the default one warns of the sync setting alone.
    return { ...report, durabilityWarnings: (await durabilityWarnings(this.stream, monitor, 3, "default")).warnings };
  }

  async consumer(durable: string, shard?: number): Promise<ConsumerFigures | undefined> {
    return (await this.consumers()).consumers.find((c) => c.durable === durable && (shard === undefined || this.shards === 1 || c.shard === shard));
  }

  async removeDurable(durable: string): Promise<RemovedDurable> {
    try {
      return await removeDurable(await this.jetstreamManager(), this.#shards, this.parked.stream, durable);
    } catch (e) {
      throw permissionRefusal(e);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#reads.close();
    await Promise.allSettled([this.context.subscriptions.closeAll(), ...[...this.#closers].map((close) => close())]);
    this.#writerClosed = true;
    for (const shard of this.#shards) shard.writer.close();
    if (this.#ownsConnection && !this.nc.isClosed()) await this.nc.close();
  }

  async #watchStatus(): Promise<void> {
    try {
      for await (const s of this.nc.status()) {
        if (s.type === "error" && s.error instanceof PermissionViolationError) {
          this.log.warn({ operation: s.error.operation, subject: s.error.subject }, "permission violation");
          for (const l of this.#violationListeners) l(s.error);
        } else logConnectionStatus(this.log, s);
      }
    } catch (e) {
      this.log.debug({ err: e }, "status watch ended");
    }
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

/**
 * How many shards the bus's journal has: read from the server, and checked against the
 * option when it is given (a bus assuming another count is refused before it writes). An
 * account that may not read the streams, or a bus with `readConsumers`, gets the option, else 1.
 */
async function journalShards(nc: NatsConnection, options: BusOptions<unknown>): Promise<number | undefined> {
  const settings = parseBusOptions(options);
  // A user reading under her own pool of consumer names is confined to her sessions: the
  // streams' info (which would list every session's subjects) is not hers to read.
  if (settings.readConsumers) return options.shards;
  let live: number | undefined;
  try {
    live = await provisionedShards(await jetstreamManager(nc, { checkAPI: false }), settings.stream);
  } catch (e) {
    if (e instanceof ShardLayoutError) throw e;
    return options.shards;
  }
  if (live !== undefined && options.shards !== undefined && live !== options.shards) {
    throw new ShardLayoutError([live], options.shards, `the journal ${settings.stream} is provisioned in ${live} shard${live === 1 ? "" : "s"}, not ${options.shards}`);
  }
  return options.shards ?? live;
}

/** A bus over a connection the caller owns; the bus's `close()` leaves the connection open. */
export function fromConnection<E = JetloopEvent>(nc: NatsConnection, options: BusOptions<E> = {}): Jetloop<E> {
  return new BusImpl<E>(nc, options, false);
}

/**
 * The context a bus hands the layers below it. For jetloop's own tests and benchmarks
 * (a feed hub's test hook, its subscription count); not exported by the package.
 */
export function busContext<E>(bus: Jetloop<E>): BusContext<E> {
  if (!(bus instanceof BusImpl)) throw new TypeError("not a bus made by connect() or fromConnection()");
  return (bus as BusImpl<E>).context;
}
