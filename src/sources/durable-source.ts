/**
 * The enduring part for microservices: a named durable pull consumer. Processes that
 * share the name split the work; a restarted one resumes from the ack floor. An
 * unsettled delivery's ack is extended automatically (an approval can take minutes).
 * A consumer that disappears (an operator deleted it) is recreated at once from the lowest
 * sequence this process is still owed (delivery-ledger.ts), consumed anew (NATS.js pulls
 * no more after a 409 "consumer deleted"), and the caller is told. Poison messages are reported and parked, never yielded.
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
  type ConsumerInfo,
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  type JsMsg,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import { type ParkReason, readParkedAt } from "../parking/parked-entry.js";
import type { ParkedStore } from "../parking/parked-store.js";
import { parsePartitionDurable } from "../partition/partition-durable.js";
import { declaredConsumerTemplates, defaultPartitionedStreamName } from "../streams/declared.js";
import { checkDurableOptions, durableDrift, liveDurable, MAX_DELIVER_KEY, recordedLimit } from "../streams/durable-drift.js";
import { journalShardOf, parkedFilter, replayConsumerName } from "../subjects/subjects.js";
import { OptionsError, SubscriptionError } from "../errors.js";
import { consumerError } from "../journal/consumer-errors.js";
import { pullSize } from "../journal/pull-size.js";
import { decodeMessage, hiddenFrom } from "./delivery.js";
import { DeliveryLedger } from "./delivery-ledger.js";
import {
  anySelects,
  encodeFilterChanges,
  FILTER_CHANGES_KEY,
  type FilterChange,
  mergeExact,
  pruneFilterChanges,
  readFilterChanges,
  refuseChangesPastEnd,
  skippedAtFilterChange,
  widens,
  withFilterChange,
} from "./filter-changes.js";
import { acknowledge, durableDelivery, type Lease, type Original, park, type Settler } from "./durable-settlement.js";
import type { DurableSettings, StartPosition } from "./options.js";
import { encodeNewStart, NEW_START_KEY, type NewStart, readNewStart, refuseStartPastEnds, skippedAtNewStart } from "./new-start.js";
import { reportPoison, type Source, type SourceContext } from "./source.js";
import { turnSpanOfMessage } from "../journal/turn-span.js";
import { tracedDelivery } from "../telemetry/index.js";

/** How long a recreation is retried while the server refuses it, and its longest pause between tries. */
const RECREATE_GIVE_UP_MS = 30_000;
const RECREATE_BACKOFF_MAX_MS = 1000;

/** JetStream's "consumer name already in use" and "consumer already exists". */
const CONSUMER_EXISTS = new Set([10013, 10148]);

/**
 * Where a consumed message came from in the journal. The default: it is the journal's own
 * message. A partitioned group's consumers read a copy (group/partition-source.ts).
 */
export type JournalOrigin = (m: JsMsg) => { readonly journalSeq: number; readonly subject: string } | undefined;
const ownOrigin: JournalOrigin = (m) => ({ journalSeq: m.seq, subject: m.subject });

/**
 * A delivery's ack wait as this process can judge it: it may have run out on the server once
 * no extension was sent for two thirds of it (extensions go every third; the rest is the
 * margin for the ack's and the last extension's transit). A process paused, a handler held
 * past `autoExtendMs` or a source stopped while its handler runs all stop the extensions.
 */
function fencedLease(m: JsMsg, ackWaitMs: number): Lease {
  let extendedAt = Date.now();
  const lapsed = () => Date.now() - extendedAt > (ackWaitMs * 2) / 3;
  return {
    lapsed,
    extend() {
      if (lapsed()) return;
      m.working();
      extendedAt = Date.now();
    },
  };
}

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
  /** Handed to the reader and not yet settled, by stream sequence (a drain waits for them). */
  readonly #unsettled = new Set<number>();
  /** What the journal consumer delivered and what of it is settled for good: where a recreation starts. */
  readonly #ledger = new DeliveryLedger();
  /** Bumped when the journal consumer is consumed anew: what the old consumption still yields is dropped. */
  #generation = 0;
  /** Bumped when the replay consumer is consumed anew. */
  #replayGeneration = 0;
  /** A recreation in progress (at most one per consumer). */
  #recovering: Promise<void> | undefined;
  #recoveringReplays: Promise<void> | undefined;
  /** The consumer's filter changes still of use, as its metadata records them (filter-changes.ts). */
  #changes: readonly FilterChange[] = [];
  /** A filter change in progress: journal deliveries wait for it before they are judged. */
  #changing: Promise<void> | undefined;
  /**
   * A durable created at `"new"` on a server with atomic batches: where it started (its
   * consumer's first sequence, and the journal's end per shard then; new-start.ts). As its
   * consumer records it, so a recreation keeps it.
   */
  #newStart: { readonly from: number; readonly at: NewStart } | undefined;
  readonly #journalEnds: (() => Promise<NewStart>) | undefined;
  #stopped = false;
  readonly #origin: JournalOrigin;
  /** Pull requests' lifetime in ms (NATS.js's default, 30 s, when undefined). */
  readonly #pullExpiresMs: number | undefined;
  /** Whether a delivery held past its ack wait is left unsettled (fencedLease), and deliveries are handed one at a time (#hand). */
  readonly #fenced: boolean;
  /** A group partition's source: named in what it parks. */
  readonly #group: Settler["group"];
  /** A group member's last proof of being live (membership.ts, `provenAt`): what a copy read later than its ack wait allows is judged by. */
  readonly #liveSince: (() => number) | undefined;
  readonly #recreatable: (() => Promise<void>) | undefined;
  /** A fenced source's delivery in the handler's hands: settled when it is. */
  #inHand: Promise<void> | undefined;
  #onStop!: () => void;
  readonly #stopping = new Promise<void>((r) => (this.#onStop = r));

  constructor(
    ctx: SourceContext<E>,
    name: string,
    subjects: readonly string[],
    start: StartPosition,
    parked: ParkedStore,
    seams: {
      readonly origin?: JournalOrigin;
      readonly pullExpiresMs?: number;
      readonly fenced?: boolean;
      readonly group?: Settler["group"];
      readonly liveSince?: () => number;
      /** Before a vanished consumer is recreated: rejects (and the subscription fails with that) when its stream is not the one it was made on. */
      readonly recreatable?: () => Promise<void>;
      /**
       * The journal's end per shard, read after the consumer's own stream's end: a group's
       * partition consumer reads copies of every shard. Default: the consumer's stream is
       * its shard's journal, whose end is the one read.
       */
      readonly journalEnds?: () => Promise<NewStart>;
    } = {},
  ) {
    this.#ctx = ctx;
    this.#group = seams.group;
    this.#liveSince = seams.liveSince;
    this.#recreatable = seams.recreatable;
    this.#journalEnds = seams.journalEnds;
    this.#fenced = seams.fenced ?? false;
    this.#origin = seams.origin ?? ownOrigin;
    this.#pullExpiresMs = seams.pullExpiresMs;
    this.#name = name;
    this.#subjects = subjects;
    this.#start = start;
    this.#parked = parked;
    this.#maxDeliver = ctx.settings.maxDeliver ?? (declaredConsumerTemplates().durable.max_deliver as number);
  }

  /** Creates the consumers (or adopts them) without consuming. */
  async prepare(): Promise<void> {
    checkDurableOptions(this.#ctx.settings);
    if (this.#group === undefined) await this.#refusePartitionName();
    await this.#ensureConsumer(undefined);
    await this.#ensureReplayConsumer();
  }

  async start(): Promise<void> {
    await this.prepare();
    try {
      const consumer = await this.#ctx.js.consumers.get(this.#ctx.stream, this.#name);
      this.#messages = await consumer.consume({ ...this.#pull(), ...this.#expires() });
    } catch (e) {
      this.#messages?.stop();
      throw consumerError(e, this.#ctx.stream, `consuming durable ${this.#name}`);
    }
    // Both consumers are consumed before either is pumped: a start that fails delivers nothing.
    const replays = await this.#consumeReplays().catch((e: unknown) => {
      this.#messages?.stop();
      throw e;
    });
    // Stopped while starting (its subscription or bus closed meanwhile): stop() found no
    // consumption to end, so end it here, or it would pull on with no reader.
    if (this.#stopped) {
      this.#messages?.stop(); // undefined when stop() came after it was made
      replays.stop();
      this.#messages = this.#replays = undefined;
      return;
    }
    this.#followJournal(this.#messages);
    this.#pumpReplays(replays);
  }

  /** Pumps a consumption of the journal consumer and watches its status, under the current generation. */
  #followJournal(messages: ConsumerMessages): void {
    const generation = this.#generation;
    const current = () => generation === this.#generation && !this.#stopped;
    this.#pumps.push(
      this.#run(messages, (m) => this.#fromJournal(m), current, this.#ledger),
      this.#watchStatus(messages, (reason) => {
        if (current()) this.#recovering ??= this.#recover(reason).finally(() => (this.#recovering = undefined));
      }),
    );
  }

  /**
   * The journal consumer is gone (an operator deleted it): NATS.js pulls no more from it,
   * so the consumption is ended, the consumer created again at the lowest sequence still
   * owed (delivery-ledger.ts: a nak'd or unsettled delivery comes again; what was settled
   * above it is acknowledged as seen), and consumed anew. Retried with a short backoff
   * while the server refuses; a refusal no retry cures ends the subscription.
   */
  async #recover(reason: string): Promise<void> {
    this.#generation++;
    const old = this.#messages;
    this.#messages = undefined;
    old?.stop();
    await this.#recreating(`recreating durable ${this.#name}`, async () => {
      const fromSeq = this.#ledger.floor();
      if (this.#recreatable) {
        try {
          await this.#recreatable();
        } catch (e) {
          // Its positions belong to a stream that is gone: going on would skip or repeat.
          this.#ctx.fail(e as Error);
          return;
        }
      }
      await this.#ensureConsumer(fromSeq);
      this.#ledger.restarted();
      const consumer = await this.#ctx.js.consumers.get(this.#ctx.stream, this.#name);
      const messages = await consumer.consume({ ...this.#pull(), ...this.#expires() });
      if (this.#stopped) {
        messages.stop();
        return;
      }
      this.#messages = messages;
      this.#followJournal(messages);
      this.#ctx.report({ kind: "consumer_recreated", fromSeq, reason });
      this.#ctx.log.warn({ durable: this.#name, fromSeq }, "durable consumer was gone; recreated it");
    });
  }

  /**
   * Runs `attempt` until it returns, retrying with a short backoff while the server refuses
   * (a SubscriptionError) for up to RECREATE_GIVE_UP_MS; any other refusal ends the
   * subscription. The one retry rule of both consumers' recreation.
   */
  async #recreating(what: string, attempt: () => Promise<void>): Promise<void> {
    const started = Date.now();
    for (let n = 0; !this.#stopped; n++) {
      try {
        await attempt();
        return;
      } catch (e) {
        const error = e instanceof OptionsError ? e : consumerError(e, this.#ctx.stream, what);
        if (!(error instanceof SubscriptionError) || Date.now() - started > RECREATE_GIVE_UP_MS) {
          this.#ctx.fail(error);
          return;
        }
        this.#ctx.log.debug({ err: e, attempt: n }, `${what} failed; trying again`);
        await this.#pause(Math.min(RECREATE_BACKOFF_MAX_MS, 50 * 2 ** n));
      }
    }
  }

  /** Waits `ms`, or less when the source stops. */
  async #pause(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([new Promise((r) => (timer = setTimeout(r, ms))), this.#stopping]);
    clearTimeout(timer);
  }

  async #consumeReplays(): Promise<ConsumerMessages> {
    try {
      const replays = await this.#ctx.js.consumers.get(this.#parked.stream, this.#replayScope.name);
      return (this.#replays = await replays.consume({ ...this.#pull(), ...this.#expires() }));
    } catch (e) {
      throw consumerError(e, this.#ctx.stream, `consuming durable ${this.#name}`);
    }
  }

  #pumpReplays(replays: ConsumerMessages): void {
    const generation = this.#replayGeneration;
    const current = () => generation === this.#replayGeneration && !this.#stopped;
    this.#pumps.push(
      this.#run(replays, (m) => this.#fromParked(m), current),
      this.#watchStatus(replays, (reason) => {
        if (current()) this.#recoveringReplays ??= this.#recoverReplays(reason).finally(() => (this.#recoveringReplays = undefined));
      }),
    );
  }

  /** The replay consumer is gone: made again (it reads the replay state from its start: each entry is removed when settled) and consumed anew. */
  async #recoverReplays(reason: string): Promise<void> {
    this.#replayGeneration++;
    const old = this.#replays;
    this.#replays = undefined;
    old?.stop();
    await this.#recreating(`recreating the replay consumer of durable ${this.#name}`, async () => {
      await this.#ensureReplayConsumer();
      const replays = await this.#consumeReplays();
      if (this.#stopped) {
        replays.stop();
        return;
      }
      this.#pumpReplays(replays);
      this.#ctx.log.warn({ durable: this.#name, reason }, "the durable's replay consumer was gone; recreated it");
    });
  }

  /** A pull's size: the batch, bounded in bytes by the connection's max_payload (pull-size.ts). */
  #pull(): ReturnType<typeof pullSize> {
    return pullSize(this.#ctx.settings.batch, this.#ctx.nc.info?.max_payload);
  }

  #expires(): { expires?: number } {
    return this.#pullExpiresMs === undefined ? {} : { expires: this.#pullExpiresMs };
  }

  /**
   * Moves the consumer to new filters. The server goes on from its own position, which no
   * reply reports; the change is kept in the consumer's metadata with the bounds of that
   * position (filter-changes.ts), so that of a turn begun by then only what the old filter
   * selects is delivered, whatever number of changes the turn sees. Journal deliveries wait
   * while the change is made: none is judged under a change not yet bounded.
   */
  async update(subjects: readonly string[]): Promise<void> {
    const was = this.#subjects;
    let release!: () => void;
    this.#changing = new Promise<void>((r) => (release = r));
    this.#subjects = subjects;
    try {
      const jsm = await this.#ctx.jsm();
      await this.#moveFilter(jsm, await jsm.consumers.info(this.#ctx.stream, this.#name), undefined);
    } catch (e) {
      this.#subjects = was;
      throw e instanceof OptionsError ? e : consumerError(e, this.#ctx.stream, `updating durable ${this.#name}`);
    } finally {
      this.#changing = undefined;
      release();
    }
  }

  /**
   * Puts the consumer `info` shows on this source's filter, with `extra` (other settings to
   * update with it). A change that can add a subject is kept, with the last sequence the
   * consumer had delivered before it, and then the journal's end read after it (the
   * server's position is between); an entry whose end no process read (one stopped in
   * between) is given the end read now, which is after its change too.
   */
  async #moveFilter(jsm: JetStreamManager, info: ConsumerInfo, extra: Partial<ConsumerConfig> | undefined): Promise<void> {
    const stream = this.#ctx.stream;
    const config = info.config;
    const old = config.filter_subjects ?? (config.filter_subject ? [config.filter_subject] : []);
    const same = JSON.stringify(old) === JSON.stringify(this.#subjects);
    let changes = pruneFilterChanges(readFilterChanges(this.#name, config.metadata), info.ack_floor.stream_seq);
    if (changes.length > 0 && this.#keepsChanges) refuseChangesPastEnd(this.#name, changes, (await this.#journalEndsNow()).get(this.#ctx.shard.index) ?? 0);
    if (!same && this.#keepsChanges && old.length > 0 && widens(old, this.#subjects)) {
      changes = withFilterChange(this.#name, changes, { from: Math.max(info.delivered.stream_seq, this.#ledger.last), at: undefined, old });
    }
    const base = extra?.metadata ?? config.metadata ?? {};
    const metadata = withChanges(base, changes);
    const update: Partial<ConsumerConfig> = { ...(same ? {} : this.#filters()), ...extra };
    if (JSON.stringify(metadata) !== JSON.stringify(config.metadata ?? {})) update.metadata = metadata;
    if (Object.keys(update).length > 0) await jsm.consumers.update(stream, this.#name, update);
    this.#changes = changes;
    if (!changes.some((c) => c.at === undefined)) return;
    // Read after the update's reply: the server's position is at or before it.
    const end = (await jsm.streams.info(stream)).state.last_seq;
    changes = mergeExact(changes.map((c) => (c.at === undefined ? { ...c, at: Math.max(end, c.from) } : c)));
    this.#changes = changes;
    try {
      await jsm.consumers.update(stream, this.#name, { metadata: withChanges(metadata, changes) });
    } catch (e) {
      // Left open on the server: the next process to open the durable bounds it (a later end, as safe).
      this.#ctx.log.warn({ durable: this.#name, err: (e as Error).message }, "recording where a filter change took effect failed");
    }
  }

  /** Whether this source keeps and applies filter changes: turns exist (2.12+) and it reads the journal itself (a group reads copies). */
  get #keepsChanges(): boolean {
    return this.#ctx.journal.turns && this.#group === undefined;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#onStop();
    const running = [this.#messages, this.#replays];
    this.#messages = this.#replays = undefined;
    for (const m of running) m?.stop();
    await Promise.all([this.#recovering, this.#recoveringReplays]);
    // A recreation that finished meanwhile saw #stopped: it consumes nothing.
    await Promise.all([...this.#pumps, ...this.#settling]);
  }

  /**
   * Gives the consumer away: waits (up to `timeoutMs`) for what was delivered to be
   * settled, its ack extended meanwhile, then stops. A pull request the server still holds
   * for this process can take the next event after the stop; it comes again after the ack
   * wait (group/README.md: a group's default ack wait is its lease).
   */
  async drain(timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    // A replayed entry in hand (#inHand) is waited for too: stopping ends its extension.
    while ((this.#unsettled.size > 0 || this.#inHand !== undefined) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    await this.stop();
  }

  /** What settling and parking need to know. */
  get #settler(): Settler {
    return {
      durable: this.#name,
      group: this.#group,
      maxDeliver: this.#maxDeliver,
      backoffMs: this.#backoffMs,
      retryMs: this.#ackWaitMs,
      parked: this.#parked,
      log: this.#ctx.log,
      report: (r) => this.#ctx.report(r),
      done: (o) => {
        if (o.storeSeq === undefined) this.#ledger.settled(o.msg.seq);
      },
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
    if (this.#newStart !== undefined) config.metadata = { ...config.metadata, [NEW_START_KEY]: encodeNewStart(this.#newStart.at) };
    // A recreation keeps the changes its turns are judged by.
    if (this.#changes.length > 0) config.metadata = withChanges(config.metadata ?? {}, this.#changes);
    // A "new" durable recreated before anything was delivered starts where it first did.
    const start = fromSeq !== undefined ? { seq: fromSeq } : this.#newStart !== undefined ? { seq: this.#newStart.from } : this.#start;
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
        if (this.#newStart !== undefined) refuseStartPastEnds(this.#name, this.#newStart.at, await this.#journalEndsNow());
        this.#ledger.serverFloor(info.ack_floor.stream_seq);
        // Opened with another filter: a change like updateFilter's.
        await this.#moveFilter(jsm, info, { ...drift.update, ...recordedLimit(info.config, this.#maxDeliver) });
        return;
      } catch (e) {
        if (!(e instanceof JetStreamApiError && e.code === JetStreamApiCodes.ConsumerNotFound)) {
          throw e instanceof OptionsError ? e : consumerError(e, this.#ctx.stream, `reading durable ${this.#name}`);
        }
      }
      try {
        if (fromSeq === undefined && this.#start === "new" && this.#newStart === undefined && this.#ctx.journal.turns) this.#newStart = await this.#startNow();
        const info = await jsm.consumers.add(this.#ctx.stream, this.#config(fromSeq));
        if (fromSeq !== undefined && info.delivered.consumer_seq > 0) await this.#refuseInherited(jsm, fromSeq, info);
        this.#adopt(info.config);
        this.#ledger.serverFloor(info.ack_floor.stream_seq);
        return;
      } catch (e) {
        // Another process made it in between with other options: check ours against it.
        if (attempt === 0 && e instanceof JetStreamApiError && CONSUMER_EXISTS.has(e.code)) continue;
        throw consumerError(e, this.#ctx.stream, `creating durable ${this.#name}`);
      }
    }
  }

  /**
   * A consumer this recreation has just made reports deliveries. Seen on nats-server 2.15
   * (never on 2.10) under load: the deleted consumer's 409 comes before its stored state is
   * gone, and a consumer created under its name a few ms later starts with that state (the
   * old delivered sequences, pending and ack floor; its create reply shows them). It then
   * counts the old deliveries as its own (the nak'd ones wait out their delay, the held
   * ones the ack wait) and goes on after them: what was owed would not come again in time.
   * It is deleted and the recreation tried again after a pause (a SubscriptionError:
   * `#recreating` retries), by when the old state is gone. A consumer another process of
   * this durable made is found by `consumers.info` and adopted, not checked here; one it
   * made between that read and this creation, with the very same start, and already pulled
   * from is deleted too: that process sees it gone and recreates it from its own ledger.
   */
  async #refuseInherited(jsm: JetStreamManager, fromSeq: number, info: ConsumerInfo): Promise<never> {
    const { consumer_seq: deliveries, stream_seq: through } = info.delivered;
    this.#ctx.log.warn({ durable: this.#name, fromSeq, deliveries, through }, "the recreated durable consumer came with the deleted one's deliveries; deleting it to create it again");
    await jsm.consumers.delete(this.#ctx.stream, this.#name).catch(() => undefined);
    throw new SubscriptionError(`durable ${this.#name} was recreated at sequence ${fromSeq} with ${deliveries} deliveries (through sequence ${through}) it never made: the deleted consumer's state`);
  }

  /**
   * A plain durable named like a group's partition consumer (`{group}_p{n}`, which exists on
   * the partitioned stream) would share that partition's parked entries and replay consumer:
   * either's replays could be handed to the other's handlers. Refused (group-source.ts
   * refuses the other way round).
   */
  async #refusePartitionName(): Promise<void> {
    const named = parsePartitionDurable(this.#name);
    if (!named) return;
    const stream = defaultPartitionedStreamName(this.#ctx.decode.namespace);
    try {
      await (await this.#ctx.jsm()).consumers.info(stream, this.#name);
    } catch (e) {
      if (e instanceof JetStreamApiError && (e.code === JetStreamApiCodes.ConsumerNotFound || e.code === JetStreamApiCodes.StreamNotFound)) return;
      throw consumerError(e, stream, `checking that durable ${this.#name} is not a group's partition`);
    }
    throw new OptionsError("durable", `${this.#name} is partition ${named.partition} of group ${named.group}'s consumer on ${stream}: a durable of that name would share its parked entries and replays`);
  }

  /**
   * Where a durable created at `"new"` now starts: after its stream's end, then the journal's
   * end per shard read (so every message after those ends is after the consumer's start).
   * Sharing `journalState` with subscriptions starting together is fine: any end read after
   * this subscription began is a start.
   */
  async #startNow(): Promise<{ from: number; at: NewStart }> {
    try {
      if (this.#journalEnds === undefined) {
        const end = (await this.#ctx.journalState()).lastSeq;
        return { from: end + 1, at: new Map([[this.#ctx.shard.index, end]]) };
      }
      const own = (await (await this.#ctx.jsm()).streams.info(this.#ctx.stream)).state.last_seq;
      return { from: own + 1, at: await this.#journalEnds() };
    } catch (e) {
      throw consumerError(e, this.#ctx.stream, `reading the journal's position for durable ${this.#name}`);
    }
  }

  /** Each journal shard's last sequence now, of the shards this durable reads (one, unless it is a group's partition). */
  async #journalEndsNow(): Promise<NewStart> {
    try {
      if (this.#journalEnds !== undefined) return await this.#journalEnds();
      // Read on the durable's own filter: a restricted user may read no other (own-position.ts).
      return new Map([[this.#ctx.shard.index, (await this.#ctx.journalState(this.#subjects)).lastSeq]]);
    } catch (e) {
      throw consumerError(e, this.#ctx.stream, `reading the journal's position for durable ${this.#name}`);
    }
  }

  /** Takes the settings of the durable as it exists: whoever created it chose them. */
  #adopt(config: ConsumerConfig): void {
    const at = readNewStart(this.#name, config.metadata);
    this.#newStart = at && { from: config.opt_start_seq ?? 1, at };
    const live = liveDurable(config);
    this.#ackWaitMs = live.ackWaitMs;
    this.#backoffMs = [...live.backoffMs];
    if (live.maxDeliver !== undefined) this.#maxDeliver = live.maxDeliver;
  }

  /**
   * The durable's consumer on the parked store, named `#replayName`: what `parked replay`
   * sends back to it. A plain durable of a namespace split in shards is a consumer of its
   * shard's stream, and another shard may have a durable of the same name: each takes its
   * own shard's entries only, under its own name. A group's partition reads every shard.
   */
  get #replayScope(): { name: string; filter: string } {
    const ns = this.#ctx.decode.namespace;
    const shard = this.#ctx.shard;
    if (this.#group !== undefined || shard.count === 1) return { name: this.#name, filter: parkedFilter(ns, this.#name, "replay") };
    return { name: replayConsumerName(this.#name, shard), filter: parkedFilter(ns, this.#name, "replay", shard) };
  }

  async #ensureReplayConsumer(): Promise<void> {
    const jsm = await this.#ctx.jsm();
    const stream = this.#parked.stream;
    const { name, filter } = this.#replayScope;
    const what = `the replay consumer of durable ${this.#name}`;
    try {
      const info = await jsm.consumers.info(stream, name);
      this.#replayAckWaitMs = (info.config.ack_wait ?? 30e9) / 1e6;
      return; // made by another process of this durable, or an earlier run
    } catch (e) {
      if (!(e instanceof JetStreamApiError && e.code === JetStreamApiCodes.ConsumerNotFound)) throw consumerError(e, stream, `reading ${what}`);
    }
    const journal = this.#config(undefined);
    this.#replayAckWaitMs = this.#ackWaitMs;
    try {
      await jsm.consumers.add(stream, {
        durable_name: name,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        filter_subject: filter,
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

  #fromJournal(m: JsMsg): Original | undefined {
    const at = this.#origin(m);
    // A group's partition copies sessions of every shard: the copy's journal subject names its shard.
    const shard = at && (journalShardOf(this.#ctx.decode.namespace, at.subject) ?? this.#ctx.shard).index;
    return at && { msg: m, journalSeq: at.journalSeq, shard: shard!, subject: at.subject, data: m.data, deliveryCount: m.info.deliveryCount };
  }

  #fromParked(m: JsMsg): Original | undefined {
    const e = readParkedAt(this.#ctx.decode.namespace, m.subject, m.seq, m.headers, m.data);
    if (e?.state !== "replay") return undefined;
    // An entry names its journal position by its subject, whose token names the shard (a group partition reads every shard's).
    const shard = (journalShardOf(this.#ctx.decode.namespace, e.subject) ?? this.#ctx.shard).index;
    return { msg: m, journalSeq: e.journalSeq, shard, subject: e.subject, data: m.data, deliveryCount: m.info.deliveryCount, storeSeq: m.seq };
  }

  /** `ledger`: the journal consumer's, which notes every delivery (the replay consumer's have none). */
  async #run(messages: ConsumerMessages, original: (m: JsMsg) => Original | undefined, current: () => boolean, ledger?: DeliveryLedger): Promise<void> {
    const ctx = this.#ctx;
    const settler = this.#settler;
    try {
      for await (const m of messages) {
        // Left by a consumption ended for a recreation: the new consumer delivers it again.
        if (!current()) continue;
        // Judged under the filter change being made once it is bounded (update()).
        if (ledger && this.#changing) await this.#changing;
        // Noted before anything else: even a copy left to come again is owed.
        const repeat = ledger?.received(m.seq) ?? false;
        if (this.#unproven()) {
          // The server may have sent this copy while the member was paused or cut off, and
          // handed it to another since: neither handled nor settled here; it comes again.
          ctx.log.debug({ durable: this.#name, seq: m.seq }, "a delivery read after the member could not prove itself live; left to come again");
          continue;
        }
        const o = original(m);
        if (!o) {
          ctx.log.warn({ durable: this.#name, subject: m.subject }, "not a journal event or parked entry; skipped");
          m.term();
          continue;
        }
        if (repeat) {
          // Settled before the consumer was recreated below it: acknowledged again, not handed twice.
          await acknowledge(settler, o).catch(() => undefined);
          continue;
        }
        if (o.storeSeq === undefined && (this.#begunBeforeStart(o) || this.#outsideFilter(o))) {
          // Seen, not delivered: acknowledged; if the ack is lost it comes again and is skipped again.
          await acknowledge(settler, o).catch(() => undefined);
          ctx.seen(o.shard, o.journalSeq);
          continue;
        }
        const d = decodeMessage(ctx.decode, o.subject, o.data);
        if (!d.ok) {
          reportPoison(ctx, o.journalSeq, o.subject, d.error);
          await this.#parkHeld(settler, o, "poison", d.error.code, d.error.message);
        } else if (hiddenFrom(ctx.decode, d)) {
          await acknowledge(settler, o).catch(() => undefined); // not acknowledged: it comes again and is skipped again
        } else if (o.deliveryCount > this.#maxDeliver) {
          await this.#parkHeld(settler, o, "max_deliver", "NOT_SETTLED", `not settled within ${this.#maxDeliver} deliveries`);
        } else {
          await this.#hand(o, d.event);
        }
      }
    } catch (e) {
      if (!this.#stopped) ctx.fail(consumerError(e, ctx.stream, `durable ${this.#name}`));
    }
  }

  /**
   * Whether a journal delivery is not the filter's to hand over: outside the filter in force
   * (sent under an older one, still buffered or redelivered), or of a turn begun by a filter
   * change that added its subject (filter-changes.ts). A group reads copies under its own
   * partition filters: not judged here.
   */
  #outsideFilter(o: Original): boolean {
    if (this.#group !== undefined) return false;
    if (!anySelects(this.#subjects, o.subject)) return true;
    return this.#keepsChanges && this.#changes.length > 0 && skippedAtFilterChange(this.#changes, o.journalSeq, o.subject, () => turnSpanOfMessage(o.msg, o.journalSeq));
  }

  /** Whether a journal delivery is of a turn begun by a `"new"` durable's start (new-start.ts). */
  #begunBeforeStart(o: Original): boolean {
    return this.#ctx.journal.turns && skippedAtNewStart(this.#newStart?.at, o.shard, o.journalSeq, () => turnSpanOfMessage(o.msg, o.journalSeq));
  }

  /**
   * Hands a delivery to the handler. A fenced (group) source hands one at a time between
   * its journal and replay consumers: each has one outstanding on the server, but a
   * replayed entry must not be handled beside the partition's live event, nor the other
   * way round. A delivery waiting its turn has its ack extended; one still waiting when
   * the source stops is not settled and comes again.
   */
  async #hand(o: Original, event: E): Promise<void> {
    if (!this.#fenced) return this.#ctx.queue.pushEnduring(tracedDelivery(this.#deliver(o, event), "durable", o.msg));
    let release!: () => void;
    const turn = new Promise<void>((r) => (release = r));
    const delivery = this.#deliver(o, event, () => {
      if (this.#inHand === turn) this.#inHand = undefined;
      release();
    });
    while (this.#inHand !== undefined && !this.#stopped) await Promise.race([this.#inHand, this.#stopping]);
    if (this.#stopped) return;
    this.#inHand = turn;
    await this.#ctx.queue.pushEnduring(tracedDelivery(delivery, "durable", o.msg));
  }

  /**
   * True when this member has not proven itself live (a lease renewal answered promptly)
   * for two thirds of the shortest ack wait: a copy read now may have waited unread in the
   * socket past its ack wait (the process paused, the connection stalled) and be in another
   * member's hands. No proof could be made while the process was paused, so the time since
   * the last one is at least as long as the pause.
   */
  #unproven(): boolean {
    if (this.#liveSince === undefined) return false;
    return Date.now() - this.#liveSince() > (Math.min(this.#ackWaitMs, this.#replayAckWaitMs, ...this.#backoffMs) * 2) / 3;
  }

  #deliver(o: Original, event: E, settled?: () => void) {
    const m = o.msg;
    // The ack floor concerns the journal consumer only.
    const seq = o.storeSeq === undefined ? m.seq : undefined;
    if (seq !== undefined) this.#unsettled.add(seq);
    // The server's clock has run since it delivered the message (it may have waited in the
    // pull buffer), so the first extension is at once, and the period follows the shortest
    // ack wait this delivery can have: a fixed period longer than it lets it be handed again
    // while its handler holds it. The extension runs until the settlement is confirmed.
    const started = Date.now();
    const { autoExtendMs } = this.#ctx.settings as DurableSettings;
    const { leaseMs, lease, extend } = this.#holding(o);
    if (autoExtendMs > 0) extend();
    const timer = setInterval(() => {
      if (Date.now() - started > autoExtendMs || this.#stopped || lease?.lapsed()) clearInterval(timer);
      else extend();
    }, Math.max(10, Math.floor(leaseMs / 3)));
    timer.unref();
    const onSettle = () => {
      clearInterval(timer);
      if (seq !== undefined) this.#unsettled.delete(seq);
      settled?.();
    };
    return durableDelivery(this.#settler, o, event, onSettle, (p) => this.#track(p), lease);
  }

  /**
   * How a delivery's ack wait is extended while it is held: at the shortest ack wait it can
   * have, through its fenced lease in a fenced group (a lapsed one is not extended: it may
   * be another holder's now).
   */
  #holding(o: Original): { leaseMs: number; lease: Lease | undefined; extend: () => void } {
    const leaseMs = o.storeSeq === undefined ? Math.min(this.#ackWaitMs, ...this.#backoffMs) : this.#replayAckWaitMs;
    const lease = this.#fenced ? fencedLease(o.msg, leaseMs) : undefined;
    return { leaseMs, lease, extend: () => (lease ? lease.extend() : o.msg.working()) };
  }

  /**
   * Parks a delivery the pump settles itself (poison, or past its deliveries), its ack wait
   * extended while the parked store is written: a write slower than the ack wait would let
   * it come again and be parked, and reported, twice.
   */
  async #parkHeld(settler: Settler, o: Original, reason: ParkReason, code: string, message: string): Promise<void> {
    const { leaseMs, extend } = this.#holding(o);
    extend();
    const timer = setInterval(extend, Math.max(10, Math.floor(leaseMs / 3)));
    try {
      await park(settler, o, reason, code, message);
    } finally {
      clearInterval(timer);
    }
  }

  /** Reports missed heartbeats; calls `gone` when the consumer was deleted or is not found (NATS.js checks after missed heartbeats). */
  async #watchStatus(messages: ConsumerMessages, gone: (reason: string) => void): Promise<void> {
    try {
      for await (const s of messages.status()) {
        if (this.#stopped) return;
        if (s.type === "heartbeats_missed") this.#ctx.report({ kind: "heartbeats_missed", count: s.count });
        else if (s.type === "consumer_deleted" || s.type === "consumer_not_found") gone(s.type);
      }
    } catch {
      // the status feed ends with the messages
    }
  }
}

/** `metadata` with the filter changes recorded (the key removed when there are none). */
function withChanges(metadata: Readonly<Record<string, string>>, changes: readonly FilterChange[]): Record<string, string> {
  const { [FILTER_CHANGES_KEY]: _dropped, ...rest } = metadata;
  return changes.length > 0 ? { ...rest, [FILTER_CHANGES_KEY]: encodeFilterChanges(changes) } : rest;
}
