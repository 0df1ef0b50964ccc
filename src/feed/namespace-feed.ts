/**
 * The `namespace` strategy (README.md in this folder): one core subscription on
 * `{ns}.feed.>` for all the feed subscriptions of a bus that chose it, dispatched locally
 * (feed-index.ts). Each journal shard's stream republishes all it stores into that feed,
 * so per shard the sequences are contiguous: it finds a miss at once and repairs it from
 * that shard's journal for every viewer, in that shard's order (`ShardLane`): its viewers
 * need no gap check of their own. Shards are independent: no order across them.
 */
import type { Msg, Subscription } from "@nats-io/transport-node";
import type { ShardJournal } from "../journal/journal-shards.js";
import { feedRepublish } from "../subjects/subjects.js";
import { permissionRefusal } from "../journal/consumer-errors.js";
import { readJournalRange, retryJournalRead } from "../journal/journal-range.js";
import { turnSpanOfMessage } from "../journal/turn-span.js";
import type { FeedDeps, FeedMessage, FeedStrategy, FeedViewer, GapCheck, RepairReason } from "./feed.js";
import { FeedIndex } from "./feed-index.js";
import { noteFeedMessage } from "../telemetry/index.js";

/** Messages held behind a repair before the rest is left to the journal. */
const HOLD_LIMIT = 65_536;
/** Messages pulled at once when a repair reads the journal. */
const REPAIR_BATCH = 256;

/** Nothing to check: the namespace feed repairs every gap before it dispatches. */
const NO_GAPS: GapCheck = { missedFrom: () => undefined, untaken: () => false, took: () => {}, settled: () => {} };

export class NamespaceFeed implements FeedStrategy {
  readonly #d: FeedDeps;
  readonly #index: FeedIndex<FeedViewer>;
  readonly #subject: string;
  readonly #dispatchTo: (v: FeedViewer) => void;
  #current: FeedMessage | undefined;
  /** During a repair of a gap: the viewers that received something from the repaired range. */
  #reached: Set<FeedViewer> | undefined;
  #sub: Subscription | undefined;
  /** One lane per journal shard, made with the subscription: dropped with it. */
  #lanes: ShardLane[] | undefined;
  #ready: Promise<void> | undefined;

  constructor(deps: FeedDeps) {
    this.#d = deps;
    this.#index = new FeedIndex(deps.namespace);
    this.#subject = feedRepublish(deps.namespace).dest;
    this.#dispatchTo = (v) => {
      this.#reached?.add(v);
      v.onFeed(this.#current!);
    };
  }

  get subscriptions(): number {
    return this.#sub === undefined ? 0 : 1;
  }

  owns(subject: string): boolean {
    return subject === this.#subject;
  }

  gapCheck(): GapCheck {
    return NO_GAPS;
  }

  join(feedSubject: string, viewer: FeedViewer): void {
    this.#index.add(feedSubject, viewer);
    if (this.#sub) return;
    this.#lanes = this.#d.shards.map((s) => new ShardLane(this, this.#d, s));
    this.#sub = this.#d.nc.subscribe(this.#subject, { callback: (err, msg) => this.#onMessage(err, msg) });
  }

  leave(feedSubject: string, viewer: FeedViewer): void {
    this.#index.remove(feedSubject, viewer);
    if (this.#index.size > 0 || !this.#sub) return;
    if (!this.#d.nc.isClosed()) this.#sub.unsubscribe();
    this.#sub = undefined;
    for (const lane of this.#lanes ?? []) lane.dropped = true;
    this.#lanes = undefined;
    this.#ready = undefined;
  }

  /**
   * Resolves once the subscription is on the server and the feed's position is known
   * (each shard's last sequence read after it): from then on every later event is
   * dispatched, in its shard's order, to every viewer joined.
   */
  registered(): Promise<void> {
    this.#ready ??= this.#locate().catch((e: unknown) => {
      this.#ready = undefined;
      throw e;
    });
    return this.#ready;
  }

  /** Something may have been missed (a reconnect, a leader election): read each shard's journal to its end once for everyone. */
  resyncAll(reason: RepairReason): void {
    for (const lane of this.#lanes ?? []) lane.resync(reason);
  }

  /** Hands `m` to the viewers whose feed subjects match; `reached` collects them (a gap repair's). */
  dispatch(m: FeedMessage, reached: Set<FeedViewer> | undefined): void {
    this.#current = m;
    this.#reached = reached;
    this.#index.forMatching(m.subject, this.#dispatchTo);
    this.#current = undefined;
    this.#reached = undefined;
  }

  viewers(): Set<FeedViewer> {
    return this.#index.viewers();
  }

  fail(error: Error): void {
    this.#d.fail(this.#index.viewers(), error, this.#subject);
  }

  async #locate(): Promise<void> {
    const lanes = this.#lanes;
    await this.#d.nc.flush();
    await Promise.all((lanes ?? []).map((lane) => lane.locate()));
  }

  #onMessage(err: Error | null, msg: Msg): void {
    if (err) return this.fail(err);
    const m = this.#d.parse(msg);
    if (m !== undefined) this.#lanes?.[m.shard]?.onMessage(m);
  }
}

/**
 * One shard's sequence on the namespace feed: where it stands, what is held behind a gap,
 * and the repair from that shard's journal. A lane is dropped with the subscription: work
 * for a dropped one stops.
 */
class ShardLane {
  readonly #feed: NamespaceFeed;
  readonly #d: FeedDeps;
  readonly #shard: ShardJournal;
  /** The shard's journal, all of it: what a repair reads. */
  readonly #journal: string;
  /** Last sequence dispatched; undefined until the position is read after subscribing. */
  #last: number | undefined;
  #held: FeedMessage[] = [];
  #overflowed = false;
  #repairing = false;
  /** A repair to the journal's end was asked for while another ran. */
  #toEndPending: RepairReason | undefined;
  dropped = false;

  constructor(feed: NamespaceFeed, deps: FeedDeps, shard: ShardJournal) {
    this.#feed = feed;
    this.#d = deps;
    this.#shard = shard;
    this.#journal = feedRepublish(deps.namespace, shard.shard).src;
  }

  async locate(): Promise<void> {
    // Typed: a user confined to her sessions is refused the whole shard's position.
    const { lastSeq } = await this.#shard.position.state().catch((e: unknown) => {
      throw permissionRefusal(e);
    });
    if (this.dropped || this.#last !== undefined) return;
    this.#last = lastSeq;
    const gap = this.#drainHeld();
    if (gap !== undefined) void this.#repair("gap", gap);
  }

  resync(reason: RepairReason): void {
    if (this.#last === undefined) return; // not located yet: the position read comes after
    void this.#repair(reason, undefined);
  }

  onMessage(m: FeedMessage): void {
    if (this.#last === undefined || this.#repairing) return this.#hold(m);
    if (m.seq <= this.#last) return;
    if (m.seq > this.#last + 1) {
      this.#hold(m);
      void this.#repair("gap", m.seq - 1);
      return;
    }
    this.#last = m.seq;
    this.#feed.dispatch(m, undefined);
  }

  #hold(m: FeedMessage): void {
    if (this.#held.length < HOLD_LIMIT) this.#held.push(m);
    else this.#overflowed = true;
  }

  /** Dispatches held messages while they follow on; returns the sequence before the next gap, if any. */
  #drainHeld(): number | undefined {
    const held = this.#held.sort((a, b) => a.seq - b.seq);
    let i = 0;
    for (; i < held.length; i++) {
      const m = held[i]!;
      if (m.seq <= this.#last!) continue;
      if (m.seq > this.#last! + 1) break;
      this.#last = m.seq;
      this.#feed.dispatch(m, undefined);
    }
    this.#held = held.slice(i);
    return this.#held.length > 0 ? this.#held[0]!.seq - 1 : undefined;
  }

  /**
   * Reads the shard's journal after the last dispatched sequence up to `to` (its end when
   * undefined), dispatches it, then what was held meanwhile, all in order; repeats while
   * held messages reveal another gap.
   */
  async #repair(reason: RepairReason, to: number | undefined): Promise<void> {
    if (this.#repairing) {
      if (to === undefined) this.#toEndPending ??= reason;
      return;
    }
    this.#repairing = true;
    const stale = () => this.dropped;
    const index = this.#shard.shard.index;
    try {
      let target = to;
      for (;;) {
        const from = this.#last! + 1;
        const end = target ?? (await retryJournalRead(() => this.#shard.position.state(), stale, this.#d.log)).lastSeq;
        if (stale()) return;
        if (end >= from) {
          // A lost message concerns the viewers it was for; a reconnect or an election, every viewer (as in loop mode).
          const reached = reason === "gap" ? new Set<FeedViewer>() : undefined;
          await retryJournalRead(() => this.#read(from, end, reached), stale, this.#d.log);
          if (stale()) return;
          this.#d.log.info({ reason, shard: index, fromSeq: from, toSeq: end }, "closed a namespace feed gap from the journal");
          for (const v of reached ?? this.#feed.viewers()) v.repaired(index, from, end, reason);
        }
        this.#d.log.debug({ reason, shard: index, fromSeq: from, toSeq: end }, "namespace feed resynced from the journal");
        // What the journal did not have (removed by retention) is not coming either.
        this.#last = Math.max(this.#last!, end);
        if (this.#overflowed) {
          this.#overflowed = false;
          this.#held = [];
          this.#toEndPending ??= reason;
        }
        target = this.#drainHeld();
        if (target !== undefined) {
          reason = "gap";
          continue;
        }
        if (this.#toEndPending === undefined) return;
        reason = this.#toEndPending;
        this.#toEndPending = undefined;
      }
    } catch (e) {
      if (!stale()) this.#feed.fail(e as Error);
    } finally {
      if (!stale()) this.#repairing = false;
    }
  }

  /** One journal read from `from` to `to`; dispatches what is after the last dispatched sequence. */
  async #read(from: number, to: number, reached: Set<FeedViewer> | undefined): Promise<void> {
    const range = { subjects: [this.#journal], from: { seq: Math.max(from, this.#last! + 1) }, toSeq: to, batch: REPAIR_BATCH };
    for await (const m of readJournalRange(this.#shard.journal, range, "reading the journal for the namespace feed")) {
      if (this.dropped) return;
      if (m.seq <= this.#last!) continue;
      this.#last = m.seq;
      const message: FeedMessage = { shard: this.#shard.shard.index, seq: m.seq, lastSeq: 0, subject: m.subject, data: m.data, turn: () => turnSpanOfMessage(m, m.seq) };
      // The journal's copy carries the publish's trace headers as the feed's does.
      noteFeedMessage(message, m);
      this.#feed.dispatch(message, reached);
    }
  }
}
