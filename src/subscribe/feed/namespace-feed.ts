/**
 * The `namespace` strategy (README.md in this folder): one core subscription on
 * `{ns}.feed.>` for all the feed subscriptions of a bus that chose it, dispatched locally
 * (feed-index.ts). Its feed's sequences are contiguous, so it finds a miss at once and
 * repairs it for every viewer, in journal order: its viewers need no gap check of their own.
 */
import type { Msg, Subscription } from "@nats-io/transport-node";
import { feedRepublish } from "../../subjects/subjects.js";
import { readJournalRange, retryJournalRead } from "../journal-range.js";
import type { FeedDeps, FeedMessage, FeedStrategy, FeedViewer, GapCheck, RepairReason } from "./feed.js";
import { FeedIndex } from "./feed-index.js";
import { noteFeedMessage } from "../../telemetry/index.js";

/** Messages held behind a repair before the rest is left to the journal. */
const HOLD_LIMIT = 65_536;
/** Messages pulled at once when a repair reads the journal. */
const REPAIR_BATCH = 256;

/** Nothing to check: the namespace feed repairs every gap before it dispatches. */
const NO_GAPS: GapCheck = { missedFrom: () => undefined, untaken: () => false, took: () => {}, settled: () => {} };

export class NamespaceFeed implements FeedStrategy {
  readonly #d: FeedDeps;
  readonly #journal: string;
  readonly #index: FeedIndex<FeedViewer>;
  readonly #subject: string;
  readonly #dispatchTo: (v: FeedViewer) => void;
  #current: FeedMessage | undefined;
  /** During a repair of a gap: the viewers that received something from the repaired range. */
  #reached: Set<FeedViewer> | undefined;
  #sub: Subscription | undefined;
  /** Last sequence dispatched; undefined until the position is read after subscribing. */
  #last: number | undefined;
  #ready: Promise<void> | undefined;
  #held: FeedMessage[] = [];
  #overflowed = false;
  #repairing = false;
  /** A repair to the journal's end was asked for while another ran. */
  #toEndPending: RepairReason | undefined;
  /** Bumped when the subscription is dropped: work for an older one stops. */
  #generation = 0;

  constructor(deps: FeedDeps) {
    this.#d = deps;
    this.#index = new FeedIndex(deps.namespace);
    const { src, dest } = feedRepublish(deps.namespace);
    this.#subject = dest;
    this.#journal = src;
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
    this.#generation++;
    this.#sub = this.#d.nc.subscribe(this.#subject, { callback: (err, msg) => this.#onMessage(err, msg) });
  }

  leave(feedSubject: string, viewer: FeedViewer): void {
    this.#index.remove(feedSubject, viewer);
    if (this.#index.size > 0 || !this.#sub) return;
    if (!this.#d.nc.isClosed()) this.#sub.unsubscribe();
    this.#sub = undefined;
    this.#generation++;
    this.#last = undefined;
    this.#ready = undefined;
    this.#held = [];
    this.#overflowed = false;
    this.#repairing = false;
    this.#toEndPending = undefined;
  }

  /**
   * Resolves once the subscription is on the server and the feed's position is known
   * (the journal's last sequence read after it): from then on every later event is
   * dispatched, in order, to every viewer joined.
   */
  registered(): Promise<void> {
    this.#ready ??= this.#locate().catch((e: unknown) => {
      this.#ready = undefined;
      throw e;
    });
    return this.#ready;
  }

  /** Something may have been missed (a reconnect, a leader election): read the journal to its end once for everyone. */
  resyncAll(reason: RepairReason): void {
    if (this.#last === undefined) return; // not located yet: the position read comes after
    void this.#repair(reason, undefined);
  }

  async #locate(): Promise<void> {
    const generation = this.#generation;
    await this.#d.nc.flush();
    const { lastSeq } = await this.#d.journalState();
    if (generation !== this.#generation || this.#last !== undefined) return;
    this.#last = lastSeq;
    const gap = this.#drainHeld();
    if (gap !== undefined) void this.#repair("gap", gap);
  }

  #onMessage(err: Error | null, msg: Msg): void {
    if (err) {
      this.#d.fail(this.#index.viewers(), err, this.#subject);
      return;
    }
    const m = this.#d.parse(msg);
    if (m === undefined) return;
    if (this.#last === undefined || this.#repairing) return this.#hold(m);
    if (m.seq <= this.#last) return;
    if (m.seq > this.#last + 1) {
      this.#hold(m);
      void this.#repair("gap", m.seq - 1);
      return;
    }
    this.#last = m.seq;
    this.#dispatch(m);
  }

  #hold(m: FeedMessage): void {
    if (this.#held.length < HOLD_LIMIT) this.#held.push(m);
    else this.#overflowed = true;
  }

  #dispatch(m: FeedMessage): void {
    this.#current = m;
    this.#index.forMatching(m.subject, this.#dispatchTo);
    this.#current = undefined;
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
      this.#dispatch(m);
    }
    this.#held = held.slice(i);
    return this.#held.length > 0 ? this.#held[0]!.seq - 1 : undefined;
  }

  /**
   * Reads the journal after the last dispatched sequence up to `to` (the journal's end
   * when undefined), dispatches it, then what was held meanwhile, all in order; repeats
   * while held messages reveal another gap.
   */
  async #repair(reason: RepairReason, to: number | undefined): Promise<void> {
    if (this.#repairing) {
      if (to === undefined) this.#toEndPending ??= reason;
      return;
    }
    this.#repairing = true;
    const generation = this.#generation;
    const stale = () => generation !== this.#generation;
    try {
      let target = to;
      for (;;) {
        const from = this.#last! + 1;
        const end = target ?? (await retryJournalRead(() => this.#d.journalState(), stale, this.#d.log)).lastSeq;
        if (stale()) return;
        if (end >= from) {
          // A lost message concerns the viewers it was for; a reconnect or an election, every viewer (as in loop mode).
          const reached = reason === "gap" ? new Set<FeedViewer>() : undefined;
          this.#reached = reached;
          try {
            await retryJournalRead(() => this.#read(from, end, generation), stale, this.#d.log);
          } finally {
            this.#reached = undefined;
          }
          if (stale()) return;
          this.#d.log.info({ reason, fromSeq: from, toSeq: end }, "closed a namespace feed gap from the journal");
          for (const v of reached ?? this.#index.viewers()) v.repaired(from, end, reason);
        }
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
      if (!stale()) this.#d.fail(this.#index.viewers(), e as Error, this.#subject);
    } finally {
      if (!stale()) this.#repairing = false;
    }
  }

  /** One journal read from `from` to `to`; dispatches what is after the last dispatched sequence. */
  async #read(from: number, to: number, generation: number): Promise<void> {
    const range = { subjects: [this.#journal], from: { seq: Math.max(from, this.#last! + 1) }, toSeq: to, batch: REPAIR_BATCH };
    for await (const m of readJournalRange(this.#d.journal, range, "reading the journal for the namespace feed")) {
      if (generation !== this.#generation) return;
      if (m.seq <= this.#last!) continue;
      this.#last = m.seq;
      const message: FeedMessage = { seq: m.seq, lastSeq: 0, subject: m.subject, data: m.data };
      // The journal's copy carries the publish's trace headers as the feed's does.
      noteFeedMessage(message, m);
      this.#dispatch(message);
    }
  }
}
