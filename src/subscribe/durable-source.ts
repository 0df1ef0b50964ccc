/**
 * The enduring part for microservices: a named durable pull consumer. Processes that
 * share the name split the work; a restarted one resumes from the ack floor. An
 * unsettled delivery's ack is extended automatically (an approval can take minutes).
 * A consumer that disappears is recreated from the first unacknowledged sequence and
 * the caller is told. Poison messages are reported and parked, never yielded.
 *
 * jetloop, not the server, enforces `maxDeliver`: the server's limit is unlimited so that
 * a delivery whose parking failed still comes again. A delivery past the limit (its last
 * attempt expired unsettled, or the process died between parking and terminating) is
 * parked without reaching a handler. A second consumer of the same name, on the parked
 * store, brings back what `parked replay` sends to this durable.
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
import { readParked } from "../parking/parked-entry.js";
import type { ParkedStore } from "../parking/parked-store.js";
import { declaredConsumerTemplates } from "../streams/declared.js";
import { checkDurableOptions, durableDrift, liveDurable, MAX_DELIVER_KEY, recordedLimit } from "../streams/durable-drift.js";
import { parkedFilter } from "../subjects/subjects.js";
import { OptionsError } from "../errors.js";
import { consumerError } from "./consumer-errors.js";
import { decodeMessage, hiddenFrom } from "./delivery.js";
import { acknowledge, durableDelivery, type Original, park, type Settler } from "./durable-settlement.js";
import type { StartPosition } from "./options.js";
import { reportPoison, type Source, type SourceContext } from "./source.js";

/** JetStream's "consumer name already in use" and "consumer already exists". */
const CONSUMER_EXISTS = new Set([10013, 10148]);

export class DurableSource<E> implements Source {
  readonly #ctx: SourceContext<E>;
  readonly #name: string;
  readonly #start: StartPosition;
  #subjects: readonly string[];
  readonly #parked: ParkedStore;
  #messages: ConsumerMessages | undefined;
  #replays: ConsumerMessages | undefined;
  #pumps: Promise<unknown>[] = [];
  readonly #settling = new Set<Promise<unknown>>();
  #ackWaitMs = 30_000;
  /** The replay consumer's ack wait, as it exists (an earlier process may have made it). */
  #replayAckWaitMs = 30_000;
  #maxDeliver: number;
  #backoffMs: number[] = [];
  /** Delivered but not yet settled, by stream sequence: the ack floor if we must recreate. */
  readonly #unsettled = new Set<number>();
  #lastSeq = 0;
  #stopped = false;

  constructor(ctx: SourceContext<E>, name: string, subjects: readonly string[], start: StartPosition, parked: ParkedStore) {
    this.#ctx = ctx;
    this.#name = name;
    this.#subjects = subjects;
    this.#start = start;
    this.#parked = parked;
    this.#maxDeliver = ctx.settings.maxDeliver ?? (declaredConsumerTemplates().durable.max_deliver as number);
  }

  async start(): Promise<void> {
    checkDurableOptions(this.#ctx.settings);
    await this.#ensureConsumer(undefined);
    await this.#ensureReplayConsumer();
    const batch = this.#ctx.settings.batch ?? 16;
    try {
      const consumer = await this.#ctx.js.consumers.get(this.#ctx.stream, this.#name);
      this.#messages = await consumer.consume({ max_messages: batch });
      const replays = await this.#ctx.js.consumers.get(this.#parked.stream, this.#name);
      this.#replays = await replays.consume({ max_messages: batch });
    } catch (e) {
      this.#messages?.stop();
      throw consumerError(e, this.#ctx.stream, `consuming durable ${this.#name}`);
    }
    this.#pumps = [
      this.#run(this.#messages, (m) => this.#fromJournal(m)),
      this.#run(this.#replays, (m) => this.#fromParked(m)),
      this.#watchStatus(this.#messages, (fromSeq) => this.#ensureConsumer(fromSeq)),
      this.#watchStatus(this.#replays, () => this.#ensureReplayConsumer()),
    ];
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
    const running = [this.#messages, this.#replays];
    this.#messages = this.#replays = undefined;
    for (const m of running) m?.stop();
    await Promise.all([...this.#pumps, ...this.#settling]);
  }

  /** What settling and parking need to know. */
  get #settler(): Settler {
    return {
      durable: this.#name,
      maxDeliver: this.#maxDeliver,
      backoffMs: this.#backoffMs,
      retryMs: this.#ackWaitMs,
      parked: this.#parked,
      log: this.#ctx.log,
      report: (r) => this.#ctx.report(r),
    };
  }

  #track(p: Promise<unknown>): void {
    const settled = p.catch((e: unknown) => this.#ctx.log.warn({ durable: this.#name, err: (e as Error).message }, "settling a delivery failed; it will come again"));
    this.#settling.add(settled);
    void settled.finally(() => this.#settling.delete(settled));
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
      max_deliver: -1,
      metadata: { [MAX_DELIVER_KEY]: String(this.#maxDeliver) },
    };
    if (s.ackWaitMs !== undefined) config.ack_wait = nanos(s.ackWaitMs);
    if (s.backoffMs !== undefined) {
      config.backoff = s.backoffMs.map((ms) => nanos(ms));
      config.ack_wait = config.backoff[0];
    } else if (s.ackWaitMs !== undefined) {
      // The server makes ack_wait the first backoff step: the template's backoff would
      // silently replace an explicit ack wait. Without backoffMs it is a fixed clock.
      delete config.backoff;
    }
    if (s.maxAckPending !== undefined) config.max_ack_pending = s.maxAckPending;
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

  /**
   * Creates the durable, or adopts an existing one with this name: its filter follows this
   * subscription, its other options are checked against ours (durable-drift.ts: updated or
   * refused, never silently kept).
   */
  async #ensureConsumer(fromSeq: number | undefined): Promise<void> {
    const jsm = await this.#ctx.jsm();
    for (let attempt = 0; ; attempt++) {
      try {
        const info = await jsm.consumers.info(this.#ctx.stream, this.#name);
        const drift = durableDrift(this.#name, this.#ctx.settings, liveDurable(info.config));
        if (!drift.ok) throw drift.error;
        this.#adopt(info.config);
        const filters = this.#filters();
        const same = JSON.stringify(info.config.filter_subjects ?? [info.config.filter_subject]) === JSON.stringify(filters.filter_subjects ?? [filters.filter_subject]);
        const update = { ...(same ? {} : filters), ...drift.update, ...recordedLimit(info.config, this.#maxDeliver) };
        if (Object.keys(update).length > 0) await jsm.consumers.update(this.#ctx.stream, this.#name, update);
        return;
      } catch (e) {
        if (!(e instanceof JetStreamApiError && e.code === JetStreamApiCodes.ConsumerNotFound)) {
          throw e instanceof OptionsError ? e : consumerError(e, this.#ctx.stream, `reading durable ${this.#name}`);
        }
      }
      try {
        const info = await jsm.consumers.add(this.#ctx.stream, this.#config(fromSeq));
        this.#adopt(info.config);
        return;
      } catch (e) {
        // Another process made it in between with other options: check ours against it.
        if (attempt === 0 && e instanceof JetStreamApiError && CONSUMER_EXISTS.has(e.code)) continue;
        throw consumerError(e, this.#ctx.stream, `creating durable ${this.#name}`);
      }
    }
  }

  /** Takes the settings of the durable as it exists: whoever created it chose them. */
  #adopt(config: ConsumerConfig): void {
    const live = liveDurable(config);
    this.#ackWaitMs = live.ackWaitMs;
    this.#backoffMs = [...live.backoffMs];
    if (live.maxDeliver !== undefined) this.#maxDeliver = live.maxDeliver;
  }

  /** The durable's consumer on the parked store: what `parked replay` sends back to it. */
  async #ensureReplayConsumer(): Promise<void> {
    const jsm = await this.#ctx.jsm();
    const stream = this.#parked.stream;
    const what = `the replay consumer of durable ${this.#name}`;
    try {
      const info = await jsm.consumers.info(stream, this.#name);
      this.#replayAckWaitMs = (info.config.ack_wait ?? 30e9) / 1e6;
      return; // made by another process of this durable, or an earlier run
    } catch (e) {
      if (!(e instanceof JetStreamApiError && e.code === JetStreamApiCodes.ConsumerNotFound)) throw consumerError(e, stream, `reading ${what}`);
    }
    const journal = this.#config(undefined);
    this.#replayAckWaitMs = this.#ackWaitMs;
    try {
      await jsm.consumers.add(stream, {
        durable_name: this.#name,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        filter_subject: parkedFilter(this.#ctx.decode.namespace, this.#name, "replay"),
        ack_wait: nanos(this.#ackWaitMs),
        max_deliver: -1,
        max_ack_pending: journal.max_ack_pending,
        inactive_threshold: journal.inactive_threshold,
      });
    } catch (e) {
      // Another process of this durable made it in between (with this durable's ack wait).
      if (e instanceof JetStreamApiError && CONSUMER_EXISTS.has(e.code)) return;
      throw consumerError(e, stream, `creating ${what}`);
    }
  }

  #fromJournal(m: JsMsg): Original {
    this.#lastSeq = Math.max(this.#lastSeq, m.seq);
    return { msg: m, journalSeq: m.seq, subject: m.subject, data: m.data, deliveryCount: m.info.deliveryCount };
  }

  #fromParked(m: JsMsg): Original | undefined {
    const e = readParked("replay", m.seq, m.headers, m.data);
    return e && { msg: m, journalSeq: e.journalSeq, subject: e.subject, data: m.data, deliveryCount: m.info.deliveryCount, storeSeq: m.seq };
  }

  async #run(messages: ConsumerMessages, original: (m: JsMsg) => Original | undefined): Promise<void> {
    const ctx = this.#ctx;
    const settler = this.#settler;
    try {
      for await (const m of messages) {
        const o = original(m);
        if (!o) {
          ctx.log.warn({ durable: this.#name, subject: m.subject }, "not a parked entry; skipped");
          m.term();
          continue;
        }
        const d = decodeMessage(ctx.decode, o.subject, o.data);
        if (!d.ok) {
          reportPoison(ctx, o.journalSeq, o.subject, d.error);
          await park(settler, o, "poison", d.error.code, d.error.message);
        } else if (hiddenFrom(ctx.decode, d)) {
          await acknowledge(settler, o).catch(() => undefined); // not acknowledged: it comes again and is skipped again
        } else if (o.deliveryCount > this.#maxDeliver) {
          await park(settler, o, "max_deliver", "NOT_SETTLED", `not settled within ${this.#maxDeliver} deliveries`);
        } else {
          await ctx.queue.pushEnduring(this.#deliver(o, d.event));
        }
      }
    } catch (e) {
      if (!this.#stopped) ctx.fail(consumerError(e, ctx.stream, `durable ${this.#name}`));
    }
  }

  #deliver(o: Original, event: E) {
    const m = o.msg;
    // The ack floor concerns the journal consumer only.
    const seq = o.storeSeq === undefined ? m.seq : undefined;
    if (seq !== undefined) this.#unsettled.add(seq);
    // The server's clock has run since it delivered the message (it may have waited in the
    // pull buffer), so the first extension is at once, and the period follows the shortest
    // ack wait this delivery can have: a fixed period longer than it lets it be handed again
    // while its handler holds it. The extension runs until the settlement is confirmed.
    const started = Date.now();
    const autoExtendMs = this.#ctx.settings.autoExtendMs;
    const leaseMs = o.storeSeq === undefined ? Math.min(this.#ackWaitMs, ...this.#backoffMs) : this.#replayAckWaitMs;
    if (autoExtendMs > 0) m.working();
    const timer = setInterval(() => {
      if (Date.now() - started > autoExtendMs || this.#stopped) clearInterval(timer);
      else m.working();
    }, Math.max(10, Math.floor(leaseMs / 3)));
    timer.unref();
    const onSettle = () => {
      clearInterval(timer);
      if (seq !== undefined) this.#unsettled.delete(seq);
    };
    return durableDelivery(this.#settler, o, event, onSettle, (p) => this.#track(p));
  }

  async #watchStatus(messages: ConsumerMessages, recreate: (fromSeq: number | undefined) => Promise<void>): Promise<void> {
    try {
      for await (const s of messages.status()) {
        if (s.type === "heartbeats_missed") {
          this.#ctx.report({ kind: "heartbeats_missed", count: s.count });
        } else if (s.type === "consumer_deleted" || s.type === "consumer_not_found") {
          if (this.#stopped) return;
          const fromSeq = this.#unsettled.size > 0 ? Math.min(...this.#unsettled) : this.#lastSeq + 1;
          try {
            await recreate(this.#lastSeq === 0 ? undefined : fromSeq);
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
