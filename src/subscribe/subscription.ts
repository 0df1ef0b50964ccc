/**
 * A subscription (README.md): an async iterable of deliveries merged from the journal part
 * (the feed or a durable consumer) and the preview part. It mirrors the Go runtime's
 * `session.SubscribeEvents`. The package exports the interface; the class stays here.
 */
import type { SubscribeContext } from "./context.js";
import { OptionsError, SubscriptionError } from "../errors.js";
import type { JetloopEvent } from "../events/catalogue.js";
import type { ConsumerFigures } from "../streams/consumer-figures.js";
import type { Delivery, DurableDelivery } from "../sources/delivery.js";
import { DeliveryQueue } from "../sources/delivery-queue.js";
import { DurableSource } from "../sources/durable-source.js";
import { FeedSource } from "../feed/feed-source.js";
import { GroupSource, type GroupStatus } from "../group/group-source.js";
import type { GroupReport } from "../group/groups-report.js";
import { type EventFilter, MANY_FILTER_SUBJECTS, resolveFilter, type ShardFilter } from "../sources/filter.js";
import { checkPositionsReached, checkStart, startIn } from "../sources/shard-scope.js";
import type { OpenSubscription } from "../sources/open-subscriptions.js";
import { type ShardPositions, type StartPosition, type SubscribeOptions, parseSubscribeOptions, type SubscriptionReport } from "../sources/options.js";
import { PreviewSource } from "../sources/preview-source.js";
import { ShardedSource } from "../sources/sharded-source.js";
import { BusSourceContext } from "./bus-source.js";
import type { OwnSourceContext, Source, SourceContext } from "../sources/source.js";
import { recordReport } from "../telemetry/index.js";

/** A subscription's figures since it opened. */
export interface SubscriptionStats {
  /** Deliveries handed to the reader. */
  readonly delivered: number;
  /** Preview deliveries dropped because the reader was slow. */
  readonly dropped: number;
  /** Malformed messages reported and skipped. */
  readonly poison: number;
  /** Durable deliveries this subscription copied to the parked store. */
  readonly parked: number;
}

/**
 * An open subscription: iterate it (`for await`), `close()` it (idempotent; or `break`),
 * and read `err()` for why it ended (nothing after an intentional close). A subscription
 * that fails ends its reader's iteration with the error, once what was buffered has been
 * read: a `for await` loop cannot mistake a failure for the end.
 */
export interface Subscription<E = JetloopEvent, D extends Delivery<E> = Delivery<E>> extends AsyncIterable<D> {
  /**
   * Why the subscription ended, or undefined (still running, or closed on purpose): the
   * error its iteration rejected with.
   */
  err(): Error | undefined;
  readonly closed: boolean;
  /** The subscription's figures since it opened. */
  stats(): SubscriptionStats;
  /**
   * A durable subscription's figures as the server has them (pending, waiting for ack,
   * redelivered, parked, behind the journal); undefined for a feed subscription.
   */
  lag(): Promise<ConsumerFigures | undefined>;
  /**
   * A partitioned group member's view: its member id, the partition count, the live
   * members it last read and the partitions it owns; undefined when not in a group.
   */
  group(): GroupStatus | undefined;
  /**
   * A group's figures as the server has them: each partition's consumer (pending, waiting
   * for ack, redelivered, parked, max deliver, backoff) with its owner by this member's last
   * reading of the members, and the group's sums; undefined when not in a group.
   */
  groupLag(): Promise<GroupReport | undefined>;
  /**
   * Where the reader stands: per journal shard (indexed by shard, one entry each), the last
   * journal sequence it was handed, or skipped as seen (a turn's tail begun before a
   * `"new"` start; 0: none yet). A feed subscription opened with
   * `{ start: { after: positions } }` resumes there, losing and repeating nothing of its
   * filter; a replay takes it as `after`. (A durable resumes from its ack floor on the
   * server instead.)
   */
  positions(): ShardPositions;
  /** The filter in force. */
  readonly filter: EventFilter;
  /**
   * Changes the filter (add or remove loops, sessions, types) without losing the
   * position. A feed subscription goes on after the last journal sequence it took. A durable
   * goes on from its consumer's position on the server, which no reply reports: after the
   * last sequence the consumer had delivered when the update began, at or before the
   * journal's end read once the update resolved (what is buffered or redelivered outside the
   * new filter is acknowledged as seen, not handed over). Either way, after the update
   * resolves a turn begun before the change is delivered whole or not at all for what the
   * change adds (only what the old filter selects of it is handed over), for any number of
   * changes inside one turn; a loop the change removes ends where the change took effect. A
   * durable keeps its changes in its consumer's metadata (`jetloop_filter_changes`), so every
   * process that opens it later judges the same; it keeps at most 32 within a turn's reach
   * (1,000 journal positions) past its ack floor, and a change past that is refused
   * (`OPTIONS_INVALID`) with the old filter still in force.
   */
  updateFilter(filter: EventFilter): Promise<void>;
  /** Stops delivery and releases the consumer; the reader's loop ends quietly. Idempotent; `err()` stays as it was. */
  close(): Promise<void>;
}

/** A subscription through a durable consumer: each delivery is acknowledged (or parked) by its reader, and the consumer resumes where it was left. */
export type DurableSubscription<E = JetloopEvent> = Subscription<E, DurableDelivery<E>>;

/** Opens a subscription: resolves once it is in place (what is published from then on is delivered). */
export function subscribe<E>(bus: SubscribeContext<E>, filter: EventFilter, options: SubscribeOptions = {}): Promise<Subscription<E>> {
  return new SubscriptionImpl<E>(bus, filter, options).start();
}

class SubscriptionImpl<E, D extends Delivery<E> = Delivery<E>> implements Subscription<E, D>, OpenSubscription {
  readonly #bus: SubscribeContext<E>;
  readonly #queue: DeliveryQueue<Delivery<E>>;
  readonly #onReport: ((r: SubscriptionReport) => void) | undefined;
  #filter: EventFilter;
  #journal: Source | undefined;
  /** The journal part over its shards (all but a group's). */
  #sharded: ShardedSource | undefined;
  #preview: PreviewSource<E> | undefined;
  /** The preview part's subjects now (the filter's in effect). */
  #previewSubjects: readonly string[];
  /** The last update's settling: the next waits for it. */
  #updating: Promise<unknown> = Promise.resolve();
  #error: Error | undefined;
  #closed = false;
  #poison = 0;
  #parked = 0;
  readonly #ctx: SourceContext<E>;
  /** Per shard, the last journal sequence handed to the reader (or skipped as seen). */
  readonly #positions: number[];
  /** The filter's journal subjects per shard it reads, as it started (a start's position check reads their ends). */
  readonly #filterShards: readonly ShardFilter[];

  constructor(bus: SubscribeContext<E>, filter: EventFilter, options: SubscribeOptions) {
    const settings = parseSubscribeOptions(options);
    const resolved = resolveFilter(bus.settings.namespace, filter, bus.registry, bus.shards.count);
    checkStart(settings.start, resolved, bus.shards.count, "a subscription");
    this.#filterShards = resolved.shards;
    // A partitioned group reads the partitioned stream, which sources every shard: its positions are none of the shards'.
    if (settings.group && typeof settings.start === "object" && "after" in settings.start) {
      throw new OptionsError("start", "a partitioned group reads the partitioned stream, which sources every shard: it starts at all, new or a sequence, not a position vector");
    }
    this.#bus = bus;
    this.#filter = filter;
    this.#onReport = options.onReport;
    const positions = (this.#positions = Array.from({ length: bus.shards.count }, () => 0));
    const note = (shard: number, seq: number) => {
      if (seq > positions[shard]!) positions[shard] = seq;
    };
    // A journal delivery's position is noted as the reader takes it; a message skipped as seen, when it is skipped.
    this.#queue = new DeliveryQueue<Delivery<E>>(settings.enduringBuffer, settings.ephemeralBuffer, (d) => note(d.shard, d.journalSeq));
    const own = (shard?: number): OwnSourceContext<E> => ({
      decode: bus.decoding(resolved.includeInternal),
      queue: this.#queue,
      settings,
      log: settings.durable ? bus.subscriptions.log.child({ durable: settings.durable }) : bus.subscriptions.log,
      // On a namespace split in shards, a report of a shard's part names the shard its sequences are positions in.
      report: shard === undefined || bus.shards.count === 1 ? (r) => this.#report(r) : (r) => this.#report({ ...r, shard }),
      seen: note,
      fail: (e) => this.fail(e),
    });
    const first = bus.shards.all[resolved.shards[0]?.shard.index ?? 0]!;
    this.#ctx = new BusSourceContext(bus, own(), first);
    if (resolved.journalSubjects.length > MANY_FILTER_SUBJECTS) {
      this.#ctx.log.warn({ filterSubjects: resolved.journalSubjects.length }, "many filter subjects make a consumer slow; consider fewer loops per subscription");
    }
    if (resolved.journalSubjects.length > 0) {
      if (settings.durable && settings.group) {
        this.#journal = new GroupSource(this.#ctx, bus.shards.all.map((s) => s.stream), settings.durable, resolved.journalSubjects, startIn(settings.start, first.shard.index), bus.parked, settings.group);
      } else {
        const part = (f: ShardFilter, start: StartPosition) => {
          const ctx = new BusSourceContext(bus, own(f.shard.index), bus.shards.all[f.shard.index]!);
          return settings.durable
            ? new DurableSource(ctx, settings.durable, f.journalSubjects, start, bus.parked)
            : new FeedSource(ctx, f.feedSubjects, start, settings.feed ?? bus.settings.feed);
        };
        this.#journal = this.#sharded = new ShardedSource(part, resolved.shards, {
          start: (k) => startIn(settings.start, k),
          subjects: (f) => (settings.durable ? f.journalSubjects : f.feedSubjects),
          fail: (e) => this.fail(e),
        });
      }
    }
    if (resolved.previewSubjects.length > 0) this.#preview = new PreviewSource(this.#ctx, resolved.previewSubjects);
    this.#previewSubjects = resolved.previewSubjects;
  }

  /** Starts the sources; `subscribe` awaits this before handing the subscription out. */
  async start(): Promise<this> {
    // Throws once the bus is closed (nothing would close the subscription).
    this.#bus.subscriptions.add(this);
    try {
      if (this.#preview) {
        await this.#preview.start();
        // The preview subscriptions are registered on the server before the journal is read.
        await this.#bus.nc.flush();
      }
      // A position vector is checked against the shards' ends now: one past an end was never handed out.
      const { start } = this.#ctx.settings;
      if (typeof start === "object" && "after" in start) await checkPositionsReached("start", start.after, this.#bus.shards.all, this.#filterShards);
      await this.#journal?.start();
    } catch (e) {
      await this.#shutdown();
      throw e;
    }
    return this;
  }

  owns(subject: string): boolean {
    return this.#preview?.owns(subject) === true || this.#sharded?.owns(subject) === true;
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

  positions(): ShardPositions {
    return [...this.#positions];
  }

  err(): Error | undefined {
    return this.#error;
  }

  get closed(): boolean {
    return this.#closed || this.#queue.ended;
  }

  stats(): SubscriptionStats {
    return { delivered: this.#queue.taken, dropped: this.#queue.dropped, poison: this.#poison, parked: this.#parked };
  }

  async lag(): Promise<ConsumerFigures | undefined> {
    const durable = this.#ctx.settings.durable;
    if (durable === undefined) return undefined;
    const shards = this.#sharded?.shards ?? [];
    // One consumer's figures: a durable over several shards is one consumer in each (bus.consumers() lists them all).
    if (shards.length > 1) throw new OptionsError("durable", `durable ${durable} reads ${shards.length} journal shards, a consumer in each: bus.consumers() gives each shard's figures`);
    return this.#bus.consumer(durable, shards[0]);
  }

  /**
   * A partitioned group member's view: its member id, the partition count, the live
   * members it last read and the partitions it owns; undefined when not in a group.
   */
  group(): GroupStatus | undefined {
    return this.#journal instanceof GroupSource ? this.#journal.status() : undefined;
  }

  /**
   * A group's figures as the server has them: each partition's consumer (pending, waiting
   * for ack, redelivered, parked) and the group's sums; undefined when not in a group.
   */
  async groupLag(): Promise<GroupReport | undefined> {
    return this.#journal instanceof GroupSource ? this.#journal.figures() : undefined;
  }

  get filter(): EventFilter {
    return this.#filter;
  }

  /**
   * One update at a time, in call order: two at once would each see the other's parts half
   * started (a part stopped while starting, or one updated that a racing update removed).
   */
  updateFilter(filter: EventFilter): Promise<void> {
    const run = this.#updating.then(() => this.#update(filter));
    this.#updating = run.catch(() => undefined);
    return run;
  }

  async #update(filter: EventFilter): Promise<void> {
    const resolved = resolveFilter(this.#bus.settings.namespace, filter, this.#bus.registry, this.#bus.shards.count);
    if ((resolved.journalSubjects.length > 0) !== (this.#journal !== undefined) || (resolved.previewSubjects.length > 0) !== (this.#preview !== undefined)) {
      throw new OptionsError("filter", "a filter update cannot add or remove the enduring or the ephemeral part");
    }
    if (this.closed) throw new SubscriptionError("the subscription is closed: its filter is not updated");
    const previewWas = this.#previewSubjects;
    await this.#preview?.update(resolved.previewSubjects);
    this.#previewSubjects = resolved.previewSubjects;
    try {
      if (this.#sharded) await this.#sharded.updateShards(resolved.shards);
      else await this.#journal?.update(resolved.journalSubjects);
    } catch (e) {
      // The journal part kept the old filter: so does the preview part, or the subscription ends.
      if (this.#preview && !this.closed) {
        await this.#preview.update(previewWas).then(
          () => (this.#previewSubjects = previewWas),
          (back: unknown) => this.fail(new SubscriptionError(`a filter update failed and the preview part could not go back to the old filter: the subscription ends`, { cause: back })),
        );
      }
      throw e;
    }
    this.#filter = filter;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue.clear();
    await this.#shutdown();
  }

  fail(error: Error): void {
    if (this.#closed || this.#queue.ended) return;
    this.#error = error;
    this.#ctx.log.warn({ code: (error as { code?: string }).code, reason: error.message }, "subscription ended");
    this.#queue.end(error);
    void this.#shutdown();
  }

  async #shutdown(): Promise<void> {
    this.#bus.subscriptions.delete(this);
    this.#queue.end();
    await Promise.allSettled([this.#preview?.stop(), this.#journal?.stop()]);
  }

  #report(r: SubscriptionReport): void {
    if (r.kind === "poison") this.#poison++;
    if (r.kind === "parked") this.#parked++;
    recordReport(r, this.#ctx.settings.durable === undefined ? "feed" : "durable");
    try {
      this.#onReport?.(r);
    } catch (e) {
      this.#ctx.log.error({ err: e }, "onReport threw");
    }
  }
}
