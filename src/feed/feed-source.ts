/**
 * The journal part of a feed subscription (README.md in this folder): the seam between
 * history and the feed, the journal reads, and the buffering; the strategy it follows the
 * feed with (`loop` or `namespace`) finds and reports the gaps.
 */
import type { JsMsg } from "@nats-io/jetstream";
import { NotProvisionedError } from "../errors.js";
import { feedRepublish, switchChannel } from "../subjects/subjects.js";
import { consumerError } from "../journal/consumer-errors.js";
import { type Decoded, decodeMessage, type Delivery } from "../sources/delivery.js";
import { journalDelivery } from "../sources/journal-read.js";
import { type JournalRange, readJournalRange, readWholeTurns, retryJournalRead } from "../journal/journal-range.js";
import { begunBefore, TURN_REACH, turnSpanOfMessage } from "../journal/turn-span.js";
import type { FeedMode, StartPosition } from "../sources/options.js";
import { reportPoison, type Source, type SourceContext } from "../sources/source.js";
import type { Feeds } from "./feeds.js";
import { FeedIndex } from "./feed-index.js";
import type { FeedMessage, FeedStrategy, FeedViewer, GapCheck, RepairReason, ResyncReason } from "./feed.js";
import { tracedDelivery } from "../telemetry/index.js";

/** Feed messages buffered behind a slow reader before the rest is read back from the journal. */
const INBOX_LIMIT = 4096;

type Resync = ResyncReason | "gap" | "slow_reader" | "filter";

/** A feed source's context: a source's, and the bus's feeds, shared by its feed subscriptions. */
export interface FeedSourceContext<E> extends SourceContext<E> {
  readonly feeds: Feeds;
}

export class FeedSource<E> implements Source, FeedViewer {
  readonly #ctx: FeedSourceContext<E>;
  readonly #start: StartPosition;
  readonly #feed: FeedStrategy;
  readonly #gaps: GapCheck;
  /** The feed subjects followed: the journal filter, on the feed channel (the journal's is derived when read). */
  #feeds: readonly string[];
  /** Last journal sequence taken (delivered, skipped or reported). */
  #lastSeq = 0;
  /** A `"new"` start's position: a turn begun by then counts as before it, and is skipped (turn-span.ts). */
  #newAt: number | undefined;
  /**
   * The filter changes within a turn's reach of the position, oldest first: a turn begun by
   * a change's position counts as before it for what it added, so of that turn only what
   * the filter before it (`old`) selects is delivered. Every change is kept, not the last
   * only: A → A+B → A+B+C inside one turn judges B by the first change and C by the second.
   */
  #changes: { readonly at: number; readonly old: FeedIndex<object> }[] = [];
  /** A filter update between its first step and its resync's request: feed messages wait in the inbox. */
  #updating = false;
  /** Made on first use: an idle, in-order viewer never buffers. */
  #inbox: FeedMessage[] | undefined;
  #overflowed = false;
  #resync: Resync | undefined;
  /** The pump runs only while there is work, so an idle viewer holds no suspended frame. */
  #pump: Promise<void> | undefined;
  /** False until start() has fixed the position: feed messages wait in the inbox until then. */
  #ready = false;
  /** The history read start() opened, for the pump to take first. */
  #history: Reading | undefined;
  /** Bumped by a filter change or stop: reads under an older filter stop. */
  #generation = 0;
  #stopped = false;
  /** Aborted by stop(): a history read waiting for a turn's end gives up at once. */
  readonly #stopping = new AbortController();
  /** Set when the server refused a feed subscription. */
  #refused: Error | undefined;

  /** `subjects`: feed subjects (`ResolvedFilter.feedSubjects`). */
  constructor(ctx: FeedSourceContext<E>, subjects: readonly string[], start: StartPosition, mode: FeedMode) {
    this.#ctx = ctx;
    this.#feeds = subjects;
    this.#start = start;
    this.#feed = ctx.feeds.of(mode);
    this.#gaps = this.#feed.gapCheck();
  }

  async start(): Promise<void> {
    const ctx = this.#ctx;
    this.#follow();
    // The feed subscriptions exist on the server before the journal position is read, and
    // a refusal (permissions) has arrived by then: it fails subscribeEvents itself.
    await this.#feed.registered();
    if (this.#refused) throw this.#refused;
    // A missing stream is NOT_PROVISIONED (with its hint), as for every other read.
    const state = await ctx.journalState(this.#journalSubjects()).catch((e: unknown) => {
      throw consumerError(e, ctx.stream, "reading the journal's position");
    });
    const dest = feedRepublish(ctx.decode.namespace).dest;
    // A restricted user's position does not read the stream's configuration (streamRead false): the operator's provision is trusted.
    if (state.streamRead && state.republishDest !== dest) {
      throw new NotProvisionedError(ctx.stream, `stream ${ctx.stream} does not republish the journal to ${dest}; run \`jetloop provision\``);
    }
    const start = this.#start;
    let history: { from: JournalRange["from"]; to: number } | undefined;
    if (start === "new") this.#lastSeq = this.#newAt = state.lastSeq;
    else if (start === "all") history = { from: { seq: 1 }, to: state.lastSeq };
    else if ("seq" in start) {
      this.#lastSeq = start.seq - 1;
      history = { from: start, to: state.lastSeq };
    } else history = { from: start, to: state.lastSeq };
    this.#gaps.settled(this.#lastSeq);
    let first: Reading | undefined;
    // The first read is opened here, so a refused consumer fails subscribeEvents itself. It
    // never ends inside a turn: the feed takes over after the turn's end.
    if (history && history.to > this.#lastSeq) first = await this.#open(history.from, history.to, true);
    this.#history = first;
    this.#ready = true;
    this.#kick();
  }

  /** `subjects`: feed subjects. */
  async update(subjects: readonly string[]): Promise<void> {
    this.#generation++;
    // No feed message is taken past the pump until the filter's resync is requested: one of
    // a new subject taken while the subscriptions register moved the position past that
    // subject's earlier events, which the resync then never read.
    this.#updating = true;
    try {
      this.#unfollow();
      // A second change at the same position: the filter between judged nothing, and the first
      // change's older filter stands (so the list holds at most a turn's reach of entries).
      if (this.#ctx.journal.turns && this.#changes.at(-1)?.at !== this.#lastSeq) this.#changes.push({ at: this.#lastSeq, old: subjectIndex(this.#ctx.decode.namespace, this.#feeds) });
      this.#feeds = subjects;
      // The new filter goes on after the position: nothing at or before it is its to take, so
      // the gap check starts there (a repair from an older baseline would read the new
      // filter's earlier events as missed; the resync settles there anyway).
      this.#gaps.settled(this.#lastSeq);
      this.#follow();
      await this.#feed.registered();
      // What the old filter had buffered is dropped; the new filter's events after the
      // position are read from the journal.
      this.#inbox = undefined;
      this.#overflowed = false;
      this.#requestResync("filter");
    } finally {
      this.#updating = false;
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopping.abort();
    this.#generation++;
    this.#unfollow();
    this.#inbox = undefined;
    await this.#pump;
  }

  /** The last journal sequence taken (delivered, skipped or reported), in its shard. */
  get lastSeq(): number {
    return this.#lastSeq;
  }

  /** True when a permission error on `subject` concerns this source's feed subscriptions. */
  owns(subject: string): boolean {
    return this.#feed.owns(subject, this.#feeds);
  }

  onFeed(message: FeedMessage): void {
    // Another shard's session on the same feed subject: its sequences are another stream's.
    if (this.#overflowed || this.#stopped || message.shard !== this.#ctx.shard.index) return;
    if (this.#ready && !this.#updating && this.#pump === undefined && this.#resync === undefined && !this.#inbox?.length && this.#takeNow(message)) return;
    const inbox = (this.#inbox ??= []);
    if (inbox.length >= INBOX_LIMIT) {
      // The reader is far behind: stop buffering; the journal holds the rest.
      this.#overflowed = true;
      return;
    }
    inbox.push(message);
    this.#kick();
  }

  resync(reason: ResyncReason): void {
    this.#requestResync(reason);
  }

  repaired(shard: number, fromSeq: number, toSeq: number, reason: RepairReason): void {
    if (!this.#stopped && shard === this.#ctx.shard.index) this.#ctx.report({ kind: "gap_closed", fromSeq, toSeq, reason });
  }

  fail(error: Error): void {
    this.#refused ??= error;
    this.#ctx.fail(error);
  }

  #requestResync(reason: Resync): void {
    this.#resync ??= reason;
    this.#kick();
  }

  #follow(): void {
    for (const f of this.#feeds) this.#feed.join(f, this);
  }

  #unfollow(): void {
    for (const f of this.#feeds) this.#feed.leave(f, this);
  }

  /** Starts the pump unless it runs. */
  #kick(): void {
    if (!this.#ready || this.#pump || this.#stopped) return;
    this.#pump = this.#run().finally(() => {
      this.#pump = undefined;
      // Work that arrived while the pump was finishing.
      if (this.#inbox?.length || this.#resync !== undefined || this.#overflowed) this.#kick();
    });
  }

  async #run(): Promise<void> {
    try {
      const history = this.#history;
      this.#history = undefined;
      if (history) await this.#read(history);
      while (!this.#stopped) {
        const reason = this.#resync;
        if (reason !== undefined) {
          this.#resync = undefined;
          await this.#resyncNow(reason);
          continue;
        }
        const m = this.#inbox?.shift();
        if (m) {
          await this.#take(m);
        } else if (this.#overflowed) {
          this.#overflowed = false;
          this.#resync = "slow_reader";
        } else {
          return;
        }
      }
    } catch (e) {
      if (!this.#stopped) this.#ctx.fail(e as Error);
    }
  }

  /** Takes a message at once when nothing is in the way; false leaves it to the pump. */
  #takeNow(m: FeedMessage): boolean {
    if (m.seq <= this.#lastSeq) return true; // read from the journal already
    if (this.#gaps.missedFrom(m) !== undefined || !this.#ctx.queue.hasRoom()) return false;
    this.#lastSeq = m.seq;
    const item = this.#admit(m.seq, m.subject, m.data, m);
    if (item) this.#ctx.queue.offerEnduring(item);
    return true;
  }

  /** One feed message, in order. */
  async #take(m: FeedMessage): Promise<void> {
    if (m.seq <= this.#lastSeq) return; // read from the journal already
    const from = this.#gaps.missedFrom(m);
    if (from !== undefined) {
      // The feed lost something before this message: read the filter from where the check
      // says up to just before it; what was taken is skipped.
      const generation = this.#generation;
      await this.#catchUp(m.seq - 1, from);
      if (generation !== this.#generation) return;
      this.#ctx.log.info({ fromSeq: from, toSeq: m.seq - 1, missed: m.lastSeq }, "closed a feed gap from the journal");
      this.#ctx.report({ kind: "gap_closed", fromSeq: from, toSeq: m.seq - 1, reason: "gap" });
    }
    this.#lastSeq = m.seq;
    await this.#deliver(m.seq, m.subject, m.data, m);
  }

  async #resyncNow(reason: Resync): Promise<void> {
    const from = this.#lastSeq + 1;
    await this.#retrying(() => this.#feed.registered());
    const to = (await this.#retrying(() => this.#ctx.journalState(this.#journalSubjects()))).lastSeq;
    await this.#catchUp(to);
    // A resync that found the journal no further than what was taken closed no gap: a
    // report of fromSeq N+1 toSeq N would tell viewers and the repair metric of a loss
    // that did not happen.
    if (reason !== "filter" && to >= from) this.#ctx.report({ kind: "gap_closed", fromSeq: from, toSeq: to, reason });
    this.#ctx.log.debug({ reason, fromSeq: from, toSeq: to }, "feed viewer resynced from the journal");
  }

  /** The journal subjects of the feed subjects followed: what a read, and a restricted user's position, name. */
  #journalSubjects(): string[] {
    const ns = this.#ctx.decode.namespace;
    return this.#feeds.map((f) => switchChannel(ns, f, "feed", "journal", this.#ctx.shard));
  }

  /** Reads the journal from `from` (after the last sequence taken) up to `to`; takes what was not taken. */
  async #catchUp(to: number, from = this.#lastSeq + 1): Promise<void> {
    if (to < from) {
      this.#settle(this.#lastSeq);
      return;
    }
    const reading = await this.#retrying(() => this.#open({ seq: from }, to));
    await this.#read(reading);
  }

  /**
   * A read of the filter up to `to`. `wholeTurns` (history): one that ends inside a turn goes
   * on to its end, and says where it ended (a catch-up needs not: the feed follows it).
   */
  async #open(from: JournalRange["from"], to: number, wholeTurns = false): Promise<Reading> {
    // The generation of the filter the read is made with, taken with its subjects: a change
    // while the read opens makes it stale (taken after the await, it read an old filter as new).
    const generation = this.#generation;
    const range = { subjects: this.#journalSubjects(), from, toSeq: to, batch: this.#ctx.settings.batch };
    const what = "reading the journal for a feed subscription";
    const messages: Reading["messages"] = wholeTurns
      ? readWholeTurns(this.#ctx.journal, range, what, undefined, this.#stopping.signal, (m, e) => reportPoison(this.#ctx, m.seq, m.subject, e))
      : readJournalRange(this.#ctx.journal, range, what);
    const first = await this.#ctx.feeds.limitCatchUp(() => messages.next());
    return { messages, first, to, generation };
  }

  async #read(r: Reading): Promise<void> {
    let next = r.first;
    while (!next.done) {
      if (r.generation !== this.#generation) {
        await r.messages.return();
        return;
      }
      const m = next.value;
      if (m.seq > this.#lastSeq || this.#gaps.untaken(m.seq)) {
        this.#lastSeq = Math.max(this.#lastSeq, m.seq);
        // The journal's copy carries the publish's trace headers as the feed's does.
        await this.#deliver(m.seq, m.subject, m.data, undefined, m);
      }
      next = await r.messages.next();
    }
    // A read that went on to a turn's end covered the journal up to there.
    if (r.generation === this.#generation) this.#settle(next.value ?? r.to);
  }

  /** Everything of the filter up to `to` has been read: the gap check starts over. */
  #settle(to: number): void {
    this.#lastSeq = Math.max(this.#lastSeq, to);
    this.#gaps.settled(this.#lastSeq);
  }

  async #deliver(seq: number, subject: string, data: Uint8Array, shared?: FeedMessage, carrier: object | undefined = shared): Promise<void> {
    const item = this.#admit(seq, subject, data, shared, carrier);
    if (item) await this.#ctx.queue.pushEnduring(item);
  }

  /**
   * Decodes and checks one event taken in order; undefined when it is not delivered (poison,
   * internal). `carrier`: where its trace context is (the feed message, or the journal's copy).
   */
  #admit(seq: number, subject: string, data: Uint8Array, shared: FeedMessage | undefined, carrier: object | undefined = shared): Delivery<E> | undefined {
    this.#gaps.took(seq);
    if (this.#begunBeforeStart(seq, shared, carrier) || this.#begunBeforeChange(seq, subject, shared, carrier)) {
      this.#ctx.seen(this.#ctx.shard.index, seq);
      return undefined;
    }
    return tracedDelivery(journalDelivery(this.#ctx, seq, subject, data, shared && decodeShared(this.#ctx.decode, shared)), "feed", carrier);
  }

  /**
   * Whether the event at `seq` is of a turn begun by a `"new"` start: taken (seen, not a
   * gap) but not delivered. Only a message within a batch's reach of the start can be.
   */
  #begunBeforeStart(seq: number, shared: FeedMessage | undefined, journal: object | undefined): boolean {
    const start = this.#newAt;
    if (start === undefined || seq > start + TURN_REACH || !this.#ctx.journal.turns) return false;
    return begunBefore(shared ? shared.turn?.() : (journal ? turnSpanOfMessage(journal, seq) : undefined), start);
  }

  /**
   * Whether the event at `seq` is of a turn begun by a filter change's position and not
   * selected by the filter before that change: taken, not delivered (what the older filter
   * selected goes on). Taken in order, so a change a turn's reach behind is forgotten.
   */
  #begunBeforeChange(seq: number, subject: string, shared: FeedMessage | undefined, journal: object | undefined): boolean {
    while (this.#changes.length > 0 && seq > this.#changes[0]!.at + TURN_REACH) this.#changes.shift();
    let span: ReturnType<typeof turnSpanOfMessage> | null = null;
    for (const c of this.#changes) {
      if (seq <= c.at) continue;
      let selected = false;
      c.old.forMatching(subject, () => (selected = true));
      if (selected) continue;
      span ??= shared ? shared.turn?.() : journal ? turnSpanOfMessage(journal, seq) : undefined;
      if (begunBefore(span, c.at)) return true;
    }
    return false;
  }

  #retrying<T>(op: () => Promise<T>): Promise<T> {
    return retryJournalRead(op, () => this.#stopped, this.#ctx.log);
  }
}

/**
 * Decodes a feed message once for all the bus's viewers of it (the gateway has many clients
 * per session): they then share the event object, which readers treat as read-only.
 */
function decodeShared<E>(ctx: SourceContext<E>["decode"], m: FeedMessage): Decoded<E> {
  return (m.decoded ??= decodeMessage(ctx, m.subject, m.data)) as Decoded<E>;
}

/** The feed subjects `feeds` as an index, to tell whether they select a journal subject. */
function subjectIndex(namespace: string, feeds: readonly string[]): FeedIndex<object> {
  const index = new FeedIndex<object>(namespace);
  const selected = {};
  for (const f of feeds) index.add(f, selected);
  return index;
}

/** A journal read whose consumer exists, with its first result. */
interface Reading {
  /** Returns the last sequence covered when it went on to a turn's end (readWholeTurns). */
  readonly messages: AsyncGenerator<JsMsg, number | void, undefined>;
  readonly first: IteratorResult<JsMsg, number | void>;
  readonly to: number;
  readonly generation: number;
}
