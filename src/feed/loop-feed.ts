/**
 * The `loop` strategy (README.md in this folder): one core subscription per followed feed
 * subject, shared by the bus's viewers of it; the server filters. Its gap check is per
 * subject and per viewer (`SubjectGaps`); a reconnect or an election makes every viewer
 * read the journal itself.
 */
import type { Msg, Subscription } from "@nats-io/transport-node";
import type { FeedDeps, FeedMessage, FeedStrategy, FeedViewer, GapCheck, ResyncReason } from "./feed.js";

/** Sequences remembered for the gap check before the oldest is forgotten. */
export const TAKEN_MEMORY = 10_000;

interface Entry {
  readonly sub: Subscription;
  readonly viewers: Set<FeedViewer>;
}

export class LoopFeed implements FeedStrategy {
  readonly #d: FeedDeps;
  readonly #entries = new Map<string, Entry>();
  #flushing: Promise<void> | undefined;

  constructor(deps: FeedDeps) {
    this.#d = deps;
  }

  get subscriptions(): number {
    return this.#entries.size;
  }

  join(feedSubject: string, viewer: FeedViewer): void {
    let entry = this.#entries.get(feedSubject);
    if (!entry) {
      const viewers = new Set<FeedViewer>();
      const sub = this.#d.nc.subscribe(feedSubject, { callback: (err, msg) => this.#onMessage(feedSubject, viewers, err, msg) });
      entry = { sub, viewers };
      this.#entries.set(feedSubject, entry);
    }
    entry.viewers.add(viewer);
  }

  leave(feedSubject: string, viewer: FeedViewer): void {
    const entry = this.#entries.get(feedSubject);
    if (!entry) return;
    entry.viewers.delete(viewer);
    if (entry.viewers.size === 0) {
      this.#entries.delete(feedSubject);
      if (!this.#d.nc.isClosed()) entry.sub.unsubscribe();
    }
  }

  owns(subject: string, feeds: readonly string[]): boolean {
    return feeds.includes(subject);
  }

  /** Viewers that ask before the flush goes out share it, as they then share the journal position read. */
  registered(): Promise<void> {
    // The flush starts in a microtask: whoever asks before then joins it.
    this.#flushing ??= Promise.resolve().then(() => {
      this.#flushing = undefined;
      return this.#d.nc.flush();
    });
    return this.#flushing;
  }

  gapCheck(): GapCheck {
    return new SubjectGaps();
  }

  resyncAll(reason: ResyncReason): void {
    // A viewer on two subjects hears it twice; its resync is requested once.
    for (const { viewers } of this.#entries.values()) for (const v of viewers) v.resync(reason);
  }

  #onMessage(feedSubject: string, viewers: Set<FeedViewer>, err: Error | null, msg: Msg): void {
    if (err) return this.#d.fail(viewers, err, feedSubject);
    const message = this.#d.parse(msg);
    if (message === undefined) return;
    for (const v of viewers) v.onFeed(message);
  }
}

/**
 * A viewer's per-subject gap check. `Nats-Last-Sequence` is the previous sequence of the
 * same journal subject, and a filter spans several subjects, so: after a journal read up to
 * the baseline everything of the filter up to it is known, and every sequence taken since
 * is remembered; a message whose previous sequence is above the baseline and was never
 * taken reveals a miss, closed by reading from the baseline (earlier messages of the same
 * subject may be missing too) to just before the message.
 */
export class SubjectGaps implements GapCheck {
  /** Everything of the filter up to here has been read; `#taken` covers what follows. */
  #baseline = 0;
  /** Made on first use: an idle viewer holds none. */
  #taken: Set<number> | undefined;

  missedFrom(m: FeedMessage): number | undefined {
    return this.untaken(m.lastSeq) ? this.#baseline + 1 : undefined;
  }

  untaken(seq: number): boolean {
    return seq > this.#baseline && !this.#taken?.has(seq);
  }

  took(seq: number): void {
    const taken = (this.#taken ??= new Set());
    taken.add(seq);
    if (taken.size > TAKEN_MEMORY) {
      // Forget the oldest; it becomes the floor of the check.
      const oldest = taken.values().next().value!;
      taken.delete(oldest);
      this.#baseline = Math.max(this.#baseline, oldest);
    }
  }

  settled(seq: number): void {
    this.#baseline = seq;
    this.#taken = undefined;
  }
}
