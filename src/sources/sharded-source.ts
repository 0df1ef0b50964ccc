/**
 * The journal part of a subscription over journal shards (README.md, "Readers over
 * shards"): one source per shard it selects sessions of, each over its own shard's
 * context, behind one `Source`. They share the subscription's delivery queue, so per shard
 * (per session) the order is kept and across shards none is promised. A namespace not
 * split has one part, and behaves as the part alone.
 */
import { SubscriptionError } from "../errors.js";
import type { ShardFilter } from "./filter.js";
import type { StartPosition } from "./options.js";
import type { Source } from "./source.js";

/** One shard's source, as the composite drives it. */
export interface ShardPart extends Source {
  /** The last journal sequence the part took (a feed's), so a shard selected again resumes after it. */
  readonly lastSeq?: number;
  owns?(subject: string): boolean;
}

/**
 * Makes shard `filter.shard`'s part. A durable's part runs its shard's own replay consumer
 * (durable-source.ts `#replayScope`): parked entries name their shard, so each goes back to
 * the part of the shard it was read from.
 */
export type MakePart = (filter: ShardFilter, start: StartPosition) => ShardPart;

/** What the composite needs of its subscription besides the parts. */
export interface ShardedSourceOptions {
  /** Where shard `shard`'s part starts. */
  readonly start: (shard: number) => StartPosition;
  /** A filter's subjects for its part (the feed's or the journal's). */
  readonly subjects: (f: ShardFilter) => readonly string[];
  /** Ends the subscription: an update that failed and could not be undone left neither filter in effect. */
  readonly fail: (e: Error) => void;
}

/** Starts the parts together; if one fails, stops them all once every start has settled, and rejects with the first failure. */
async function startAll(parts: readonly ShardPart[]): Promise<void> {
  const results = await Promise.allSettled(parts.map((p) => p.start()));
  const failed = results.find((r) => r.status === "rejected");
  if (failed === undefined) return;
  await Promise.allSettled(parts.map((p) => p.stop()));
  throw failed.reason;
}

const closedDuringUpdate = () => new SubscriptionError("the subscription was closed during its filter update: the update did not take effect");

export class ShardedSource implements Source {
  readonly #make: MakePart;
  readonly #options: ShardedSourceOptions;
  /** The parts by shard index, in shard order. */
  readonly #parts = new Map<number, ShardPart>();
  /** The filter each part runs now, by shard index. */
  readonly #filters = new Map<number, ShardFilter>();
  /** Per shard no longer selected: where its part stood, for a later selection of it. */
  readonly #left = new Map<number, number>();
  #stopped = false;

  constructor(make: MakePart, filters: readonly ShardFilter[], options: ShardedSourceOptions) {
    this.#make = make;
    this.#options = options;
    for (const f of filters) this.#add(f, options.start(f.shard.index));
  }

  get shards(): readonly number[] {
    return [...this.#parts.keys()];
  }

  /**
   * Starts every part; one that fails fails the whole, and every part is stopped — each once
   * its own start has settled: one stopped while still starting would finish afterwards and
   * consume on with no reader (a durable's part taking its shard's deliveries from the next
   * subscription of that durable).
   */
  start(): Promise<void> {
    return startAll([...this.#parts.values()]);
  }

  /** The parts' own subjects are per shard: `updateShards` takes them. */
  update(): Promise<void> {
    return Promise.reject(new Error("a sharded source is updated per shard (updateShards)"));
  }

  /**
   * Moves to a new selection: a shard still selected switches its filter in place (its
   * position kept); a shard newly selected starts at its journal's end now (after where this
   * subscription's part stood, when it read that shard before; an existing durable consumer
   * resumes from its ack floor); a shard no longer selected stops. All or nothing: when a
   * part fails, the parts started for it stop and the parts switched go back to their
   * filters, so the old selection is in effect (and the error is thrown); one that cannot go
   * back ends the subscription. The caller runs one update at a time.
   */
  async updateShards(filters: readonly ShardFilter[]): Promise<void> {
    if (this.#stopped) throw closedDuringUpdate();
    const next = new Set(filters.map((f) => f.shard.index));
    // Added to #parts before they start, so a stop() meanwhile stops them too.
    const added = new Map<number, ShardPart>();
    for (const f of filters) {
      const k = f.shard.index;
      if (this.#parts.has(k)) continue;
      const left = this.#left.get(k);
      added.set(k, this.#add(f, left === undefined ? "new" : { seq: left + 1 }));
    }
    const dropAdded = async () => {
      for (const k of added.keys()) this.#forget(k);
      await Promise.allSettled([...added.values()].map((p) => p.stop()));
    };
    try {
      await startAll([...added.values()]);
      if (this.#stopped) throw closedDuringUpdate();
    } catch (e) {
      await dropAdded();
      throw e;
    }
    const switched: [ShardPart, ShardFilter][] = [];
    try {
      for (const f of filters) {
        if (added.has(f.shard.index)) continue;
        const part = this.#parts.get(f.shard.index)!;
        if (this.#stopped) throw closedDuringUpdate();
        const was = this.#filters.get(f.shard.index)!;
        switched.push([part, was]);
        await part.update(this.#options.subjects(f));
        this.#filters.set(f.shard.index, f);
      }
      if (this.#stopped) throw closedDuringUpdate();
    } catch (e) {
      await dropAdded();
      await this.#restore(switched);
      throw e;
    }
    const gone = [...this.#parts.entries()].filter(([k]) => !next.has(k));
    for (const [k, part] of gone) {
      this.#forget(k);
      if (part.lastSeq !== undefined) this.#left.set(k, part.lastSeq);
    }
    await Promise.all(gone.map(([, part]) => part.stop()));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.allSettled([...this.#parts.values()].map((p) => p.stop()));
  }

  owns(subject: string): boolean {
    for (const p of this.#parts.values()) if (p.owns?.(subject) === true) return true;
    return false;
  }

  /** Puts switched parts back on their filters; one that cannot go back ends the subscription (neither filter is in effect). */
  async #restore(switched: readonly [ShardPart, ShardFilter][]): Promise<void> {
    if (this.#stopped) return;
    for (const [part, was] of switched) {
      try {
        await part.update(this.#options.subjects(was));
        this.#filters.set(was.shard.index, was);
      } catch (e) {
        this.#options.fail(new SubscriptionError(`a filter update failed part-way and shard ${was.shard.index}'s part could not go back to the old filter (${e instanceof Error ? e.message : String(e)}): neither filter is in effect, so the subscription ends`, { cause: e }));
        return;
      }
    }
  }

  #add(f: ShardFilter, start: StartPosition): ShardPart {
    const part = this.#make(f, start);
    this.#parts.set(f.shard.index, part);
    this.#filters.set(f.shard.index, f);
    return part;
  }

  #forget(shard: number): void {
    this.#parts.delete(shard);
    this.#filters.delete(shard);
  }
}
