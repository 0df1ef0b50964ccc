/**
 * The enduring part for microservices: a named durable pull consumer. Processes that
 * share the name split the work; a restarted one resumes from the ack floor. An
 * unsettled delivery's ack is extended automatically (an approval can take minutes).
 * A consumer that disappears is recreated from the first unacknowledged sequence and
 * the caller is told. Poison messages are reported and terminated, never redelivered.
 */
import {
  AckPolicy,
  type ConsumerConfig,
  type ConsumerMessages,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JsMsg,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import { declaredConsumerTemplates } from "../streams/declared.js";
import { consumerError } from "./consumer-errors.js";
import { decodeMessage, durableDelivery } from "./delivery.js";
import type { StartPosition } from "./options.js";
import { reportPoison, type Source, type SourceContext } from "./source.js";

export class DurableSource<E> implements Source {
  readonly #ctx: SourceContext<E>;
  readonly #name: string;
  readonly #start: StartPosition;
  #subjects: readonly string[];
  #messages: ConsumerMessages | undefined;
  #pump: Promise<void> | undefined;
  #watch: Promise<void> | undefined;
  #ackWaitMs = 30_000;
  /** Delivered but not yet settled, by stream sequence: the ack floor if we must recreate. */
  readonly #unsettled = new Set<number>();
  #lastSeq = 0;
  #stopped = false;

  constructor(ctx: SourceContext<E>, name: string, subjects: readonly string[], start: StartPosition) {
    this.#ctx = ctx;
    this.#name = name;
    this.#subjects = subjects;
    this.#start = start;
  }

  async start(): Promise<void> {
    await this.#ensureConsumer(undefined);
    try {
      const consumer = await this.#ctx.js.consumers.get(this.#ctx.stream, this.#name);
      this.#messages = await consumer.consume({ max_messages: this.#ctx.settings.batch ?? 16 });
    } catch (e) {
      throw consumerError(e, this.#ctx.stream, `consuming durable ${this.#name}`);
    }
    this.#pump = this.#run(this.#messages);
    this.#watch = this.#watchStatus(this.#messages);
  }

  async update(subjects: readonly string[]): Promise<void> {
    this.#subjects = subjects;
    const jsm = await this.#ctx.jsm();
    try {
      const filters = this.#filters();
      await jsm.consumers.update(this.#ctx.stream, this.#name, filters);
    } catch (e) {
      throw consumerError(e, this.#ctx.stream, `updating durable ${this.#name}`);
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    const m = this.#messages;
    this.#messages = undefined;
    if (m) {
      m.stop();
      await Promise.all([this.#pump, this.#watch]);
    }
  }

  #filters(): Pick<ConsumerConfig, "filter_subject" | "filter_subjects"> {
    return this.#subjects.length === 1 ? { filter_subject: this.#subjects[0]!, filter_subjects: undefined } : { filter_subjects: [...this.#subjects], filter_subject: undefined };
  }

  #config(fromSeq: number | undefined): Partial<ConsumerConfig> {
    const s = this.#ctx.settings;
    const template = declaredConsumerTemplates().durable as Partial<ConsumerConfig>;
    const config: Partial<ConsumerConfig> = {
      ...template,
      durable_name: this.#name,
      ack_policy: AckPolicy.Explicit,
      ...this.#filters(),
    };
    if (s.ackWaitMs !== undefined) config.ack_wait = nanos(s.ackWaitMs);
    if (s.maxDeliver !== undefined) config.max_deliver = s.maxDeliver;
    if (s.backoffMs !== undefined) {
      config.backoff = s.backoffMs.map((ms) => nanos(ms));
      config.ack_wait = config.backoff[0];
    } else if (s.ackWaitMs !== undefined) {
      // The server makes ack_wait the first backoff step: the template's backoff would
      // silently replace an explicit ack wait. Without backoffMs it is a fixed clock.
      delete config.backoff;
    }
    if (s.maxAckPending !== undefined) config.max_ack_pending = s.maxAckPending;
    // A server refuses max_deliver not above the number of backoff steps.
    if (config.backoff && config.max_deliver !== undefined && config.max_deliver !== -1 && config.max_deliver <= config.backoff.length) {
      config.backoff = config.backoff.slice(0, Math.max(1, config.max_deliver - 1));
    }
    const start = fromSeq !== undefined ? { seq: fromSeq } : this.#start;
    if (start === "new") config.deliver_policy = DeliverPolicy.New;
    else if (start === "all") config.deliver_policy = DeliverPolicy.All;
    else if ("seq" in start) {
      config.deliver_policy = DeliverPolicy.StartSequence;
      config.opt_start_seq = start.seq;
    } else {
      config.deliver_policy = DeliverPolicy.StartTime;
      config.opt_start_time = start.time.toISOString();
    }
    return config;
  }

  /** Creates the durable, or adopts an existing one with this name (updating its filter). */
  async #ensureConsumer(fromSeq: number | undefined): Promise<void> {
    const jsm = await this.#ctx.jsm();
    try {
      const info = await jsm.consumers.info(this.#ctx.stream, this.#name);
      this.#ackWaitMs = (info.config.ack_wait ?? 30e9) / 1e6;
      const filters = this.#filters();
      const same = JSON.stringify(info.config.filter_subjects ?? [info.config.filter_subject]) === JSON.stringify(filters.filter_subjects ?? [filters.filter_subject]);
      if (!same) await jsm.consumers.update(this.#ctx.stream, this.#name, filters);
      return;
    } catch (e) {
      if (!(e instanceof JetStreamApiError && e.code === JetStreamApiCodes.ConsumerNotFound)) {
        throw consumerError(e, this.#ctx.stream, `reading durable ${this.#name}`);
      }
    }
    try {
      const info = await jsm.consumers.add(this.#ctx.stream, this.#config(fromSeq));
      this.#ackWaitMs = (info.config.ack_wait ?? 30e9) / 1e6;
    } catch (e) {
      throw consumerError(e, this.#ctx.stream, `creating durable ${this.#name}`);
    }
  }

  async #run(messages: ConsumerMessages): Promise<void> {
    const ctx = this.#ctx;
    try {
      for await (const m of messages) {
        this.#lastSeq = Math.max(this.#lastSeq, m.seq);
        const d = decodeMessage(ctx.decode, m.subject, m.data);
        if (!d.ok) {
          reportPoison(ctx, m.seq, m.subject, d.error);
          m.term(`jetloop: ${d.error.code}`);
          continue;
        }
        if (d.skip) {
          m.ack();
          continue;
        }
        await ctx.queue.pushEnduring(this.#deliver(m, d.event));
      }
    } catch (e) {
      if (!this.#stopped) ctx.fail(consumerError(e, ctx.stream, `durable ${this.#name}`));
    }
  }

  #deliver(m: JsMsg, event: E) {
    const seq = m.seq;
    this.#unsettled.add(seq);
    const started = Date.now();
    const every = Math.max(250, Math.floor(this.#ackWaitMs / 2));
    const timer = setInterval(() => {
      if (Date.now() - started > this.#ctx.settings.autoExtendMs || this.#stopped) clearInterval(timer);
      else m.working();
    }, every);
    timer.unref();
    return durableDelivery(m, event, () => {
      clearInterval(timer);
      this.#unsettled.delete(seq);
    });
  }

  async #watchStatus(messages: ConsumerMessages): Promise<void> {
    try {
      for await (const s of messages.status()) {
        if (s.type === "heartbeats_missed") {
          this.#ctx.report({ kind: "heartbeats_missed", count: s.count });
        } else if (s.type === "consumer_deleted" || s.type === "consumer_not_found") {
          if (this.#stopped) return;
          const fromSeq = this.#unsettled.size > 0 ? Math.min(...this.#unsettled) : this.#lastSeq + 1;
          try {
            await this.#ensureConsumer(this.#lastSeq === 0 ? undefined : fromSeq);
            this.#ctx.report({ kind: "consumer_recreated", fromSeq, reason: s.type });
            this.#ctx.log.warn({ durable: this.#name, fromSeq }, "durable consumer was gone; recreated it");
          } catch (e) {
            this.#ctx.log.debug({ err: e }, "recreating the durable failed; will retry on the next notice");
          }
        }
      }
    } catch {
      // the status feed ends with the messages
    }
  }
}
