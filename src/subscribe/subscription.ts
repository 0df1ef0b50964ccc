/**
 * A subscription: an async iterable of deliveries merged from the journal consumer and
 * the live subscriptions, with `close()` (idempotent) and `err()` (why it ended; nothing
 * after an intentional close). It mirrors the Go runtime's `session.SubscribeEvents`. A
 * subscription that fails ends its reader's iteration with the error, once what was
 * buffered has been read: a `for await` loop cannot mistake a failure for the end.
 */
import type { PermissionViolationError } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { BusContext } from "../bus-context.js";
import { ConnectionClosedError, OptionsError, PermissionDeniedError } from "../errors.js";
import type { JetloopEvent } from "../events/catalogue.js";
import { decodeContext, type Delivery, type DurableDelivery } from "./delivery.js";
import { DeliveryQueue } from "./delivery-queue.js";
import { DurableSource } from "./durable-source.js";
import { GroupSource, type GroupStatus } from "./group/group-source.js";
import type { GroupFigures } from "../streams/consumer-figures.js";
import { FeedSource } from "./feed-source.js";
import { type EventFilter, MANY_FILTER_SUBJECTS, resolveFilter } from "./filter.js";
import { LiveSource } from "./live-source.js";
import { type SubscribeOptions, parseSubscribeOptions, type SubscriptionReport } from "./options.js";
import type { Source, SourceContext } from "./source.js";
import type { ConsumerFigures } from "../streams/consumer-figures.js";

// What the live subscriptions of a bus have in common is made once per bus: ten thousand
// viewers in a process should not carry ten thousand copies of it.
type BusShare = Omit<SourceContext<unknown>, "decode" | "queue" | "settings" | "log" | "report" | "fail">;
const busShares = new WeakMap<object, BusShare>();
const liveLogs = new WeakMap<Logger, Logger>();

/** A source context: the bus's share as its prototype, the subscription's own fields on it. */
function sourceContext<E>(bus: BusContext<E>, own: Pick<SourceContext<E>, "decode" | "queue" | "settings" | "log" | "report" | "fail">): SourceContext<E> {
  let share = busShares.get(bus);
  if (share === undefined) {
    share = {
      nc: bus.nc,
      js: bus.js,
      jsm: () => bus.jetstreamManager(),
      stream: bus.stream,
      lastSeq: () => bus.journalPosition.lastSeq(),
      journalState: () => bus.journalPosition.state(),
      feeds: bus.feeds,
    };
    busShares.set(bus, share);
  }
  return Object.assign(Object.create(share) as BusShare, own);
}

function liveLog(log: Logger): Logger {
  let child = liveLogs.get(log);
  if (child === undefined) liveLogs.set(log, (child = log.child({ component: "subscription" })));
  return child;
}

// The constructor is private, so a subscription is handed out started, by subscribe() only.
let open: <E>(bus: BusContext<E>, filter: EventFilter, options: SubscribeOptions) => Promise<Subscription<E>>;

/** Opens a subscription: resolves once it is in place (what is published from then on is delivered). */
export function subscribe<E>(bus: BusContext<E>, filter: EventFilter, options: SubscribeOptions = {}): Promise<Subscription<E>> {
  return open(bus, filter, options);
}

export interface SubscriptionStats {
  /** Deliveries handed to the reader. */
  readonly delivered: number;
  /** Live deliveries dropped because the reader was slow. */
  readonly dropped: number;
  /** Malformed messages reported and skipped. */
  readonly poison: number;
  /** Durable deliveries this subscription copied to the parked store. */
  readonly parked: number;
}

export class Subscription<E = JetloopEvent, D extends Delivery<E> = Delivery<E>> implements AsyncIterable<D> {
  static {
    open = <T>(bus: BusContext<T>, filter: EventFilter, options: SubscribeOptions) => new Subscription<T>(bus, filter, options).#start();
  }

  readonly #bus: BusContext<E>;
  readonly #queue: DeliveryQueue<Delivery<E>>;
  readonly #onReport: ((r: SubscriptionReport) => void) | undefined;
  #filter: EventFilter;
  #enduring: Source | undefined;
  #feed: FeedSource<E> | undefined;
  #live: LiveSource<E> | undefined;
  #error: Error | undefined;
  #closed = false;
  #poison = 0;
  #parked = 0;
  readonly #ctx: SourceContext<E>;
  /**
   * The running subscriptions of each bus, for its one permission-violation listener, its
   * one watch of the connection's end and its one close hook (per subscription, each cost
   * a promise and closures).
   */
  static readonly #running = new WeakMap<object, Running>();

  private constructor(bus: BusContext<E>, filter: EventFilter, options: SubscribeOptions) {
    const settings = parseSubscribeOptions(options);
    const resolved = resolveFilter(bus.namespace, filter, bus.registry);
    this.#bus = bus;
    this.#filter = filter;
    this.#onReport = options.onReport;
    this.#queue = new DeliveryQueue(settings.enduringBuffer ?? (settings.durable ? 16 : 256), settings.ephemeralBuffer);
    this.#ctx = sourceContext(bus, {
      decode: decodeContext(bus, resolved.includeInternal),
      queue: this.#queue,
      settings,
      log: settings.durable
        ? bus.log.child({ component: "subscription", durable: settings.durable })
        : liveLog(bus.log),
      report: (r) => this.#report(r),
      fail: (e) => this.#fail(e),
    });
    if (resolved.journalSubjects.length > MANY_FILTER_SUBJECTS) {
      this.#ctx.log.warn({ filterSubjects: resolved.journalSubjects.length }, "many filter subjects make a consumer slow; consider fewer loops per subscription");
    }
    if (resolved.journalSubjects.length > 0) {
      if (settings.durable && settings.group) this.#enduring = new GroupSource(this.#ctx, settings.durable, resolved.journalSubjects, settings.start ?? "all", bus.parked, settings.group);
      else if (settings.durable) this.#enduring = new DurableSource(this.#ctx, settings.durable, resolved.journalSubjects, settings.start ?? "all", bus.parked);
      else this.#enduring = this.#feed = new FeedSource(this.#ctx, resolved.feedSubjects, settings.start ?? "new", settings.feed ?? bus.settings.feed);
    }
    if (resolved.liveSubjects.length > 0) this.#live = new LiveSource(this.#ctx, resolved.liveSubjects);
  }

  /** Starts the sources; `subscribe` awaits this before handing the subscription out. */
  async #start(): Promise<this> {
    Subscription.#track(this.#bus, this as unknown as AnySubscription);
    try {
      if (this.#live) {
        await this.#live.start();
        // The live subscriptions are registered on the server before the journal is read.
        await this.#bus.nc.flush();
      }
      await this.#enduring?.start();
    } catch (e) {
      await this.#shutdown();
      throw e;
    }
    return this;
  }

  static #track(bus: BusContext<unknown>, sub: AnySubscription): void {
    let running = Subscription.#running.get(bus);
    if (!running) {
      const subs = new Set<AnySubscription>();
      // Closing the bus closes its subscriptions on purpose: their readers end quietly.
      running = { subs, closeAll: async () => void (await Promise.allSettled([...subs].map((s) => s.close()))) };
      Subscription.#running.set(bus, running);
      bus.onPermissionViolation((e) => {
        if (e.operation === "subscription") for (const s of [...subs]) s.#violation(e);
      });
      void bus.nc.closed().then(() => {
        const e = new ConnectionClosedError("the connection closed under the subscription");
        for (const s of [...subs]) s.#fail(e);
      });
    }
    // Throws once the bus is closed (nothing would close the subscription); registers once per bus.
    bus.onClose(running.closeAll);
    running.subs.add(sub);
  }

  #violation(e: PermissionViolationError): void {
    if (this.#live?.owns(e.subject) || this.#feed?.owns(e.subject)) this.#fail(new PermissionDeniedError("subscribe", e.subject, { cause: e }));
  }

  [Symbol.asyncIterator](): AsyncIterator<D> {
    return {
      // Drained after a failure, the reader's loop rejects with it; after close() it just ends (the queue's end and clear).
      next: () => this.#queue.next() as Promise<IteratorResult<D>>,
      return: async () => {
        await this.close();
        return { done: true, value: undefined };
      },
    };
  }

  /**
   * Why the subscription ended, or undefined (still running, or closed on purpose): the
   * error its iteration rejected with.
   */
  err(): Error | undefined {
    return this.#error;
  }

  get closed(): boolean {
    return this.#closed || this.#queue.ended;
  }

  stats(): SubscriptionStats {
    return { delivered: this.#queue.taken, dropped: this.#queue.dropped, poison: this.#poison, parked: this.#parked };
  }

  /**
   * A durable subscription's figures as the server has them (pending, waiting for ack,
   * redelivered, parked, behind the journal); undefined for an ordered one.
   */
  async lag(): Promise<ConsumerFigures | undefined> {
    const durable = this.#ctx.settings.durable;
    return durable === undefined ? undefined : this.#bus.consumer(durable);
  }

  /**
   * A partitioned group member's view: its member id, the partition count, the live
   * members it last read and the partitions it owns; undefined when not in a group.
   */
  group(): GroupStatus | undefined {
    return this.#enduring instanceof GroupSource ? this.#enduring.status() : undefined;
  }

  /**
   * A group's figures as the server has them: each partition's consumer (pending, waiting
   * for ack, redelivered, parked) and the group's sums; undefined when not in a group.
   */
  async groupLag(): Promise<GroupFigures | undefined> {
    return this.#enduring instanceof GroupSource ? this.#enduring.figures() : undefined;
  }

  /** The filter in force. */
  get filter(): EventFilter {
    return this.#filter;
  }

  /**
   * Changes the filter (add or remove loops, sessions, types) without losing the
   * position: the journal part resumes after the last delivered sequence.
   */
  async updateFilter(filter: EventFilter): Promise<void> {
    const resolved = resolveFilter(this.#bus.namespace, filter, this.#bus.registry);
    if ((resolved.journalSubjects.length > 0) !== (this.#enduring !== undefined) || (resolved.liveSubjects.length > 0) !== (this.#live !== undefined)) {
      throw new OptionsError("filter", "a filter update cannot add or remove the enduring or the ephemeral part");
    }
    await this.#live?.update(resolved.liveSubjects);
    await this.#enduring?.update(this.#feed ? resolved.feedSubjects : resolved.journalSubjects);
    this.#filter = filter;
  }

  /** Stops delivery and releases the consumer; the reader's loop ends quietly. Idempotent; `err()` stays as it was. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue.clear();
    await this.#shutdown();
  }

  async #shutdown(): Promise<void> {
    Subscription.#running.get(this.#bus)?.subs.delete(this as unknown as AnySubscription);
    this.#queue.end();
    await Promise.allSettled([this.#live?.stop(), this.#enduring?.stop()]);
  }

  #fail(error: Error): void {
    if (this.#closed || this.#queue.ended) return;
    this.#error = error;
    this.#ctx.log.warn({ code: (error as { code?: string }).code, reason: error.message }, "subscription ended");
    this.#queue.end(error);
    void this.#shutdown();
  }

  #report(r: SubscriptionReport): void {
    if (r.kind === "poison") this.#poison++;
    if (r.kind === "parked") this.#parked++;
    try {
      this.#onReport?.(r);
    } catch (e) {
      this.#ctx.log.error({ err: e }, "onReport threw");
    }
  }
}

type AnySubscription = Subscription<unknown, Delivery<unknown>>;

interface Running {
  readonly subs: Set<AnySubscription>;
  readonly closeAll: () => Promise<void>;
}

export type DurableSubscription<E = JetloopEvent> = Subscription<E, DurableDelivery<E>>;
