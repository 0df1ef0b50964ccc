/**
 * A source context over the bus core: what subscription.ts hands each source of a
 * subscription, the bus's part read through it (source.ts has the interface).
 */
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { JournalSource } from "../journal/journal-range.js";
import type { ShardJournal } from "../journal/journal-shards.js";
import type { JournalState } from "../streams/position.js";
import type { JournalShard } from "../subjects/subjects.js";
import type { SubscribeContext } from "./context.js";
import type { DecodeContext, Delivery } from "../sources/delivery.js";
import type { DeliveryQueue } from "../sources/delivery-queue.js";
import type { FeedSourceContext } from "../feed/feed-source.js";
import type { Feeds } from "../feed/feeds.js";
import type { SubscribeSettings, SubscriptionReport } from "../sources/options.js";
import type { OwnSourceContext } from "../sources/source.js";

/**
 * A source context over the bus's context: the bus's part is read through it (getters on
 * the class), so ten thousand viewers hold one reference to the bus each, not a copy of it.
 */
export class BusSourceContext<E> implements FeedSourceContext<E> {
  readonly #bus: SubscribeContext<E>;
  readonly #home: ShardJournal;
  readonly decode: DecodeContext<E>;
  readonly queue: DeliveryQueue<Delivery<E>>;
  readonly settings: SubscribeSettings;
  readonly log: Logger;
  readonly report: (report: SubscriptionReport) => void;
  readonly seen: (shard: number, journalSeq: number) => void;
  readonly fail: (error: Error) => void;

  constructor(bus: SubscribeContext<E>, own: OwnSourceContext<E>, home: ShardJournal) {
    this.#bus = bus;
    this.#home = home;
    this.decode = own.decode;
    this.queue = own.queue;
    this.settings = own.settings;
    this.log = own.log;
    this.report = own.report;
    this.seen = own.seen;
    this.fail = own.fail;
  }

  get nc(): NatsConnection {
    return this.#bus.nc;
  }

  get js(): JetStreamClient {
    return this.#bus.js;
  }

  get shard(): JournalShard {
    return this.#home.shard;
  }

  get journal(): JournalSource {
    return this.#home.journal;
  }

  jsm(): Promise<JetStreamManager> {
    return this.#bus.jetstreamManager();
  }

  get stream(): string {
    return this.#home.stream;
  }

  get feeds(): Feeds {
    return this.#bus.feeds;
  }

  journalState(subjects?: readonly string[]): Promise<JournalState> {
    return this.#home.position.state(subjects);
  }
}
