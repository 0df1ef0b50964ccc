/**
 * The bus: one NATS connection, one namespace, one events stream. It is the SDK's
 * entry point; each job it offers lives in its own module (publish/, subscribe/,
 * streams/), and this file only wires them together.
 */
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { type NatsConnection, PermissionViolationError } from "@nats-io/transport-node";
import { pino, type Logger } from "pino";
import type { BusContext } from "./bus-context.js";
import { type ConnectionSettings, openConnection } from "./connection/connect.js";
import { type BusOptions, type BusSettings, parseBusOptions } from "./connection/options.js";
import { requireMinimum, supports, type Feature } from "./connection/server-version.js";
import { ConnectionClosedError, OptionsError, PermissionDeniedError } from "./errors.js";
import { defaultRegistry, type JetloopEvent } from "./events/catalogue.js";
import type { EventRegistry } from "./events/registry.js";
import { JournalWriter } from "./publish/journal-writer.js";
import { type PublishOptions, type PublishResult, Publisher } from "./publish/publisher.js";
import { checkReconcileOptions, type ReconcileOptions, type StoredEvent, storedEvents } from "./publish/reconcile.js";
import { JournalPosition } from "./streams/position.js";
import { provisionParkedStream, provisionPartitioned, provisionStream, type ProvisionReport } from "./streams/provision.js";
import { checkPartitions } from "./partition/partition.js";
import { defaultMembersStreamName, defaultParkedStreamName, defaultPartitionedStreamName, parseDuration } from "./streams/declared.js";
import { type ConsumerFigures, type ConsumersReport, consumersReport } from "./streams/consumer-figures.js";
import type { RetentionWarning } from "./streams/retention.js";
import { checkDurability, checkMonitorUrls, type Durability, type DurabilityWarning, durabilityWarnings, type SyncSetting } from "./streams/durability.js";
import { type Parked, ParkedStore } from "./parking/parked-store.js";
import type { Delivery } from "./subscribe/delivery.js";
import type { EventFilter } from "./subscribe/filter.js";
import type { SubscribeOptions } from "./subscribe/options.js";
import { FeedHub } from "./subscribe/feed-hub.js";
import { replay, type ReplayOptions } from "./subscribe/replay.js";
import { type DurableSubscription, subscribe, type Subscription } from "./subscribe/subscription.js";
import { type SessionHandle, sessionHandle } from "./session.js";
import { type GateServer, serveGates, type ServeGatesOptions } from "./commands/gate-server.js";

export type ConnectOptions<E = JetloopEvent> = ConnectionSettings & BusOptions<E>;

export interface ProvisionRequest {
  /** `apply` (default) creates or updates; `verify` only reports drift. */
  mode?: "apply" | "verify";
  /** Stream replicas. Default: 3 when the server is part of a cluster, else 1. */
  replicas?: number;
  /**
   * Retention, an explicit choice: remove journal events older than this Go duration
   * (`720h`). Default: no age limit, the journal is kept.
   */
  maxAge?: string;
  /** Retention: remove the oldest journal events past this many bytes. Default: no limit. */
  maxBytes?: number;
  /**
   * How long the stream recognises a resent event id (Go duration). Default `2m`. The
   * server keeps an entry per append for this long (on every replica; about 130 bytes
   * each, README "Guarantees"); past it, only a fenced append or `publishAll` with
   * `resume` recognises its first copy.
   */
  duplicateWindow?: string;
  /**
   * `strict`: replicas 3 (a cluster is required), file storage, and the server's sync
   * setting read from `monitor` and warned of unless it syncs before every ack. Default
   * `default`: replicas as given or 3 on a cluster, the sync setting checked only when
   * `monitor` is given.
   */
  durability?: Durability;
  /** Monitoring URLs (`http://host:8222`) of the journal's servers: their /varz is read for the sync setting. */
  monitor?: string[];
  /**
   * Partitioned durable groups: also provision the partitioned stream
   * (`streams/partitioned.json`, a copy of the journal split by session into this many
   * partitions) and the group membership store (`streams/members.json`). Fixed once the
   * stream exists. Default: neither is touched.
   */
  partitions?: number;
}

export interface PublishAllOptions extends PublishOptions {
  /**
   * Resuming a batch that may be partly stored (the producer crashed, or appends failed
   * with PublishTimeoutError): the journal is read for the batch's sessions from
   * `since` (no later than the first attempt to publish any of them), and only the events it
   * does not hold are published; the others resolve as `duplicate: true` with their
   * journal sequence. Safe at any delay once the earlier attempt has ended (its process
   * is gone or its appends have settled): an append of it still in flight could land
   * after the read.
   */
  readonly resume?: ReconcileOptions;
}

export interface BusProvisionReport extends ProvisionReport {
  /** The parked store (`streams/parked.json`), provisioned with the events stream. */
  readonly parked: ProvisionReport;
  /** The partitioned stream and the membership store, when `partitions` was given. */
  readonly partitioned?: { readonly partitioned: ProvisionReport; readonly members: ProvisionReport };
  /** Retention limits in force that can remove events a durable has not acknowledged. */
  readonly warnings: readonly RetentionWarning[];
  /** The sync settings read, and what can lose acknowledged events on a crash or power loss. */
  readonly durability: { readonly profile: Durability; readonly settings: readonly SyncSetting[]; readonly warnings: readonly DurabilityWarning[] };
}

/** Listeners for permission violations the server reports asynchronously. */
type ViolationListener = (e: PermissionViolationError) => void;

// The constructor is private, so a bus comes from connect() or fromConnection() only; the
// class's static block hands these two module functions what they need of it.
let construct: <E>(nc: NatsConnection, options: BusOptions<E>, ownsConnection: boolean) => Jetloop<E>;
let contextOf: <E>(bus: Jetloop<E>) => BusContext<E>;

export class Jetloop<E = JetloopEvent> {
  static {
    construct = (nc, options, ownsConnection) => new Jetloop(nc, options, ownsConnection);
    contextOf = (bus) => bus.#ctx;
  }

  readonly nc: NatsConnection;
  readonly settings: BusSettings;
  readonly registry: EventRegistry<E>;
  readonly log: Logger;
  /** The connected server's version, e.g. `2.10.27`. */
  readonly serverVersion: string;
  /** Durable deliveries kept after their last attempt, for replay or drop. */
  readonly parked: Parked;
  readonly #ownsConnection: boolean;
  readonly #writer: JournalWriter;
  readonly #publisher: Publisher<E>;
  readonly #violationListeners = new Set<ViolationListener>();
  /** What closes with the bus: its open subscriptions. */
  readonly #closers = new Set<() => Promise<void>>();
  /** What the layers below get of the bus (bus-context.ts); never handed to users. */
  readonly #ctx: BusContext<E>;
  #jsm: Promise<JetStreamManager> | undefined;
  #closed = false;
  /** Set once the closers ran: what closes with the bus (a gate server settling its gates) may still write until then. */
  #writerClosed = false;

  private constructor(nc: NatsConnection, options: BusOptions<E>, ownsConnection: boolean) {
    this.settings = parseBusOptions(options as Record<string, unknown>);
    this.nc = nc;
    this.#ownsConnection = ownsConnection;
    this.registry = options.registry ?? (defaultRegistry);
    this.log = (options.logger ?? pino({ name: "jetloop", level: "warn" }, process.stderr)).child({ namespace: this.settings.namespace });
    this.serverVersion = nc.info?.version ?? "0.0.0";
    requireMinimum(this.serverVersion);
    const parked = new ParkedStore(nc, () => this.jetstreamManager(), this.settings.namespace, defaultParkedStreamName(this.settings.namespace));
    this.parked = parked;
    this.#writer = new JournalWriter(nc, () => this.jetstreamManager(), this.settings, this.log);
    this.#publisher = new Publisher(nc, this.#writer, { ...this.settings, serverVersion: this.serverVersion }, this.registry);
    const journalPosition = new JournalPosition(() => this.jetstreamManager(), this.settings.stream);
    this.#ctx = {
      nc,
      js: jetstream(nc),
      namespace: this.settings.namespace,
      stream: this.settings.stream,
      settings: this.settings,
      registry: this.registry,
      log: this.log,
      parked,
      journalPosition,
      feeds: new FeedHub(nc, this.settings.namespace, this.settings.stream, this.log, () => journalPosition.state()),
      jetstreamManager: () => this.jetstreamManager(),
      onPermissionViolation: (listener) => {
        this.#violationListeners.add(listener);
        return () => this.#violationListeners.delete(listener);
      },
      onClose: (close) => {
        // Nothing would close it: a bus over a caller's connection can outlive its close().
        if (this.#closed) throw new ConnectionClosedError("the bus is closed");
        this.#closers.add(close);
        return () => this.#closers.delete(close);
      },
      publish: (event, options) =>
        this.#writerClosed ? Promise.reject(new ConnectionClosedError("the bus is closed")) : this.#publisher.publish(event, options),
      consumer: (durable) => this.consumer(durable),
    };
    this.#ctx.onPermissionViolation((e) => {
      if (e.operation !== "publish") return;
      const denied = new PermissionDeniedError("publish", e.subject, { cause: e });
      this.#writer.failSubject(e.subject, denied);
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

  supports(feature: Feature): boolean {
    return supports(this.serverVersion, feature);
  }

  jetstreamManager(): Promise<JetStreamManager> {
    this.#jsm ??= jetstreamManager(this.nc, { checkAPI: false });
    return this.#jsm;
  }

  /**
   * Validates and publishes one event. Enduring: appended to the journal, resolves with
   * its journal sequence once acknowledged. Ephemeral: sent on its live subject, journal
   * sequence 0. Many calls may be in flight at once (up to `maxInFlight`; more wait).
   */
  publish(event: E, options?: PublishOptions): Promise<PublishResult> {
    // A bus over a caller's connection leaves it open on close(): refuse here, or previews
    // would still go out on it.
    if (this.#closed) return Promise.reject(new ConnectionClosedError("the bus is closed"));
    return this.#publisher.publish(event, options);
  }

  /**
   * Publishes many events pipelined: all in flight at once (bounded by `maxInFlight`),
   * results in the order given. Rejects with the first failure, after all have settled.
   * With `resume`, events the journal already holds are not published again (at any delay).
   */
  async publishAll(events: Iterable<E>, options: PublishAllOptions = {}): Promise<PublishResult[]> {
    const { resume, ...publishOptions } = options;
    const all = [...events];
    const stored = resume === undefined ? undefined : await this.storedEvents(all, checkReconcileOptions(resume));
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

  /**
   * Which of `events` the journal holds, by event id, read from `since` on their sessions'
   * journal subjects: for a producer that may or may not have stored them (a crash, a
   * PublishTimeoutError) and wants to publish only the rest, past the duplicate window.
   */
  storedEvents(events: Iterable<E>, options: ReconcileOptions): Promise<Map<string, StoredEvent>> {
    if (this.#closed) return Promise.reject(new ConnectionClosedError("the bus is closed"));
    return storedEvents(this.#ctx, events, options);
  }

  /**
   * Subscribes to events: an async iterable of deliveries `{ event, journalSeq }`.
   * Without `durable`, the journal part is live (UI): history from the journal, then the
   * stream's republished feed over core subscriptions shared within the bus; with it, a
   * named durable consumer whose deliveries are acknowledged explicitly.
   */
  subscribeEvents(filter: EventFilter, options: SubscribeOptions & { durable: string }): Promise<DurableSubscription<E>>;
  subscribeEvents(filter: EventFilter, options?: SubscribeOptions): Promise<Subscription<E>>;
  async subscribeEvents(filter: EventFilter, options: SubscribeOptions = {}): Promise<Subscription<E>> {
    return subscribe(this.#ctx, filter, options);
  }

  /**
   * Reads the journal events `filter` selects (the filter of `subscribeEvents`; its
   * enduring part: previews are never stored) from `fromSeq` to `toSeq` in order, then
   * ends. Filter and options are checked at the call (OptionsError).
   */
  replay(filter: EventFilter, options?: ReplayOptions): AsyncGenerator<Delivery<E>, void, undefined> {
    return replay(this.#ctx, filter, options);
  }

  /** A handle scoped to one session, reading like the Go runtime's `live.SubscribeEvents`. */
  session(sessionId: string): SessionHandle<E> {
    return sessionHandle(this.#ctx, sessionId);
  }

  /**
   * The loop actor's side of the answer path: opens gates for one loop and serves the
   * answers to them. Built-in catalogue only (it publishes built-in events). Closes with
   * the bus, settling its pending requests; `{ closeOrphans: true }` first closes the
   * gates a dead actor of the loop left open.
   */
  serveGates(this: Jetloop<JetloopEvent>, sessionId: string, loopId: string, options?: ServeGatesOptions): Promise<GateServer> {
    return serveGates(this.#ctx, sessionId, loopId, options);
  }

  /**
   * Creates or updates the events stream from `streams/events.json` and the parked store
   * from `streams/parked.json`, and warns of retention that can remove what a durable has
   * not acknowledged.
   */
  async provision(request: ProvisionRequest = {}): Promise<BusProvisionReport> {
    const maxAge = request.maxAge === undefined ? undefined : parseRetention("maxAge", () => parseDuration(request.maxAge!));
    const maxBytes = request.maxBytes === undefined ? undefined : parseRetention("maxBytes", () => request.maxBytes!);
    const duplicateWindow = request.duplicateWindow === undefined ? undefined : parseRetention("duplicateWindow", () => parseDuration(request.duplicateWindow!));
    if (duplicateWindow !== undefined && maxAge !== undefined && duplicateWindow > maxAge) throw new OptionsError("duplicateWindow", "must not exceed maxAge");
    if (duplicateWindow !== undefined && duplicateWindow < this.settings.publishDeadlineMs * 1e6) {
      throw new OptionsError("duplicateWindow", `must be at least the publish deadline (${this.settings.publishDeadlineMs} ms): an append resent after the window would be stored twice`);
    }
    const partitions = request.partitions === undefined ? undefined : checkPartitions(request.partitions);
    const profile = checkDurability(request.durability);
    const monitor = checkMonitorUrls(request.monitor);
    const clustered = Boolean(this.nc.info?.cluster);
    if (profile === "strict") {
      if (!clustered) throw new OptionsError("durability", "strict needs a cluster (replicas 3); this server is not part of one");
      if (request.replicas !== undefined && request.replicas < 3) throw new OptionsError("replicas", "strict durability needs at least 3");
    }
    const jsm = await this.jetstreamManager();
    const replicas = request.replicas ?? (clustered ? 3 : 1);
    const mode = request.mode ?? "apply";
    const report = await provisionStream(jsm, {
      namespace: this.namespace,
      stream: this.stream,
      maxEventBytes: this.settings.maxEventBytes,
      replicas,
      mode,
      maxAge,
      maxBytes,
      duplicateWindow,
      serverVersion: this.serverVersion,
    });
    const parked = await provisionParkedStream(jsm, { namespace: this.namespace, stream: this.parked.stream, replicas, mode, serverVersion: this.serverVersion });
    const missing = (r: ProvisionReport) => r.drift.some((d) => d.field === "name" && d.live === undefined);
    const warnings = missing(report) ? [] : (await consumersReport(jsm, this.stream, missing(parked) ? undefined : this.parked)).warnings;
    const durability = { profile, ...(await durabilityWarnings(this.stream, monitor, replicas, profile)) };
    const partitioned =
      partitions === undefined
        ? undefined
        : await provisionPartitioned(jsm, {
            namespace: this.namespace,
            journal: this.stream,
            stream: defaultPartitionedStreamName(this.namespace),
            membersStream: defaultMembersStreamName(this.namespace),
            partitions,
            replicas,
            mode,
            maxAge,
            maxBytes,
            serverVersion: this.serverVersion,
          });
    return { ...report, parked, ...(partitioned ? { partitioned } : {}), warnings, durability };
  }

  /**
   * Every durable of the namespace with its lag, parked count and retention warnings; with
   * `monitor`, also a warning for each server that acknowledges before syncing.
   */
  async consumers(options: { monitor?: string[] } = {}): Promise<ConsumersReport & { durabilityWarnings: readonly DurabilityWarning[] }> {
    const monitor = checkMonitorUrls(options.monitor);
    const report = await consumersReport(await this.jetstreamManager(), this.stream, this.parked);
    if (monitor.length === 0) return { ...report, durabilityWarnings: [] };
    // Replicas matter to the strict profile only; the default one warns of the sync setting alone.
    return { ...report, durabilityWarnings: (await durabilityWarnings(this.stream, monitor, 3, "default")).warnings };
  }

  /** One durable's figures, or undefined when there is no such durable. */
  async consumer(durable: string): Promise<ConsumerFigures | undefined> {
    return (await this.consumers()).consumers.find((c) => c.durable === durable);
  }

  /**
   * Closes the bus's subscriptions (their iteration ends quietly, as after their own
   * `close()`), fails in-flight appends, and closes the connection if the bus opened it.
   * Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#closers].map((close) => close()));
    this.#writerClosed = true;
    this.#writer.close();
    if (this.#ownsConnection && !this.nc.isClosed()) await this.nc.close();
  }

  async #watchStatus(): Promise<void> {
    try {
      for await (const s of this.nc.status()) {
        if (s.type === "error" && s.error instanceof PermissionViolationError) {
          this.log.warn({ operation: s.error.operation, subject: s.error.subject }, "permission violation");
          for (const l of this.#violationListeners) l(s.error);
        } else if (s.type === "disconnect" || s.type === "reconnect") {
          this.log.info({ status: s.type }, "connection status");
        }
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
  parseBusOptions(options as Record<string, unknown>); // fail before dialing
  const nc = await openConnection(options);
  try {
    return construct<E>(nc, options, true);
  } catch (e) {
    await nc.close();
    throw e;
  }
}

/** A bus over a connection the caller owns; the bus's `close()` leaves the connection open. */
export function fromConnection<E = JetloopEvent>(nc: NatsConnection, options: BusOptions<E> = {}): Jetloop<E> {
  return construct<E>(nc, options, false);
}

/**
 * The context a bus hands the layers below it. For jetloop's own tests and benchmarks
 * (a feed hub's test hook, its subscription count); not exported by the package.
 */
export function busContext<E>(bus: Jetloop<E>): BusContext<E> {
  return contextOf(bus);
}

/** A retention option: a positive number (ns or bytes), checked before anything is sent. */
function parseRetention(option: string, read: () => number): number {
  let value: number;
  try {
    value = read();
  } catch (e) {
    throw new OptionsError(option, (e as Error).message);
  }
  if (!Number.isSafeInteger(value) || value <= 0) throw new OptionsError(option, "must be a positive duration or byte count");
  return value;
}
