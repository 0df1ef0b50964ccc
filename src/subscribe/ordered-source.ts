/**
 * The enduring part for live/UI use: an ordered consumer, which NATS.js recreates from
 * the last stream sequence it delivered after a reconnect, a server restart or missed
 * heartbeats — no gap, no duplicate. Changing the filter recreates it from the next
 * sequence, so the position survives.
 */
import { type Consumer, DeliverPolicy, type ConsumerMessages, type OrderedConsumerOptions } from "@nats-io/jetstream";
import { consumerError } from "./consumer-errors.js";
import { decodeMessage } from "./delivery.js";
import type { StartPosition } from "./options.js";
import { reportPoison, type Source, type SourceContext } from "./source.js";

/**
 * Pull expiry (heartbeats at half of it). NATS.js recreates an ordered consumer that a
 * server restart lost, but its first pull after that can ask for nothing (stale pending
 * counts), so delivery resumes only after two missed heartbeats: 30 s with the default
 * 30 s expiry. 5 s bounds that stall.
 */
const PULL_EXPIRES_MS = 5_000;

export class OrderedSource<E> implements Source {
  readonly #ctx: SourceContext<E>;
  readonly #start: StartPosition;
  #subjects: readonly string[];
  #consumer: Consumer | undefined;
  #messages: ConsumerMessages | undefined;
  #pump: Promise<void> | undefined;
  /** Next stream sequence to deliver; 0 until a start position has been fixed. */
  #nextSeq = 0;
  #stopped = false;

  constructor(ctx: SourceContext<E>, subjects: readonly string[], start: StartPosition) {
    this.#ctx = ctx;
    this.#subjects = subjects;
    this.#start = start;
  }

  /** The last journal sequence delivered (0 for none). */
  get lastSeq(): number {
    return Math.max(0, this.#nextSeq - 1);
  }

  async start(): Promise<void> {
    if (this.#nextSeq === 0) this.#nextSeq = await this.#firstSeq();
    const opts: Partial<OrderedConsumerOptions> = {
      filter_subjects: this.#subjects.length === 1 ? this.#subjects[0]! : [...this.#subjects],
    };
    if (this.#nextSeq > 0) {
      opts.deliver_policy = DeliverPolicy.StartSequence;
      opts.opt_start_seq = this.#nextSeq;
    } else {
      const start = this.#start as { time: Date };
      opts.deliver_policy = DeliverPolicy.StartTime;
      opts.opt_start_time = start.time.toISOString();
    }
    try {
      const consumer = await this.#ctx.js.consumers.get(this.#ctx.stream, opts);
      this.#consumer = consumer;
      this.#messages = await consumer.consume({ max_messages: this.#ctx.settings.batch ?? 256, expires: PULL_EXPIRES_MS });
    } catch (e) {
      throw consumerError(e, this.#ctx.stream, "creating the ordered consumer");
    }
    this.#pump = this.#run(this.#messages);
    void this.#watch(this.#messages);
  }

  async update(subjects: readonly string[]): Promise<void> {
    await this.#halt();
    this.#subjects = subjects;
    this.#stopped = false;
    await this.start();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#halt();
  }

  async #halt(): Promise<void> {
    const m = this.#messages;
    const consumer = this.#consumer;
    this.#messages = undefined;
    this.#consumer = undefined;
    if (m) {
      m.stop();
      await this.#pump;
      await m.close().catch(() => undefined);
    }
    // Release the server-side consumer now rather than at its inactivity timeout.
    if (consumer && !this.#ctx.nc.isClosed()) await consumer.delete().catch(() => undefined);
  }

  /** Tells the caller when the consumer was lost and recreated, or heartbeats stopped. */
  async #watch(messages: ConsumerMessages): Promise<void> {
    try {
      for await (const s of messages.status()) {
        if (s.type === "ordered_consumer_recreated") {
          this.#ctx.report({ kind: "consumer_recreated", fromSeq: this.#nextSeq, reason: s.type });
        } else if (s.type === "heartbeats_missed") {
          this.#ctx.report({ kind: "heartbeats_missed", count: s.count });
        }
      }
    } catch {
      // the status feed ends with the messages
    }
  }

  /** Resolves the start position to a sequence, so a later filter change can resume. */
  async #firstSeq(): Promise<number> {
    const start = this.#start;
    if (start === "all") return 1;
    if (typeof start === "object" && "seq" in start) return start.seq;
    if (typeof start === "object" && "time" in start) return 0;
    try {
      return (await this.#ctx.lastSeq()) + 1;
    } catch (e) {
      throw consumerError(e, this.#ctx.stream, "reading the stream position");
    }
  }

  async #run(messages: ConsumerMessages): Promise<void> {
    const ctx = this.#ctx;
    try {
      for await (const m of messages) {
        if (this.#messages !== messages) break;
        const seq = m.seq;
        if (seq < this.#nextSeq) continue; // a replay of what was already delivered
        this.#nextSeq = seq + 1;
        const d = decodeMessage(ctx.decode, m.subject, m.data);
        if (!d.ok) {
          reportPoison(ctx, seq, m.subject, d.error);
          continue;
        }
        if (d.skip) continue;
        await ctx.queue.pushEnduring({ event: d.event, journalSeq: seq, subject: m.subject });
      }
    } catch (e) {
      if (!this.#stopped && this.#messages === messages) ctx.fail(consumerError(e, ctx.stream, "the ordered consumer"));
    }
  }
}
