/**
 * The journal part of a subscription over journal shards (README.md, "Readers over
 * shards"): one source per shard it selects sessions of, each over its own shard's
 * context, behind one `Source`. They share the subscription's delivery queue, so per shard
 * (per session) the order is kept and across shards none is promised. A namespace not
 * split has one part, and behaves as the part alone.
 */
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

/** Starts the parts together; if one fails, stops them all once every start has settled, and rejects with the first failure. */
async function startAll(parts: readonly ShardPart[]): Promise<void> {
  const results = await Promise.allSettled(parts.map((p) => p.start()));
  const failed = results.find((r) => r.status === "rejected");
  if (failed === undefined) return;
  await Promise.allSettled(parts.map((p) => p.stop()));
  throw failed.reason;
}

export class ShardedSource implements Source {
  readonly #make: MakePart;
  /** The parts by shard index, in shard order. */
  readonly #parts = new Map<number, ShardPart>();
  /** Per shard no longer selected: where its part stood, for a later selection of it. */
  readonly #left = new Map<number, number>();

  constructor(make: MakePart, filters: readonly ShardFilter[], start: (shard: number) => StartPosition) {
    this.#make = make;
    for (const f of filters) this.#add(f, start(f.shard.index));
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
   * resumes from its ack floor); a shard no longer selected stops. `subjects`: a filter's
   * subjects for its part (the feed's or the journal's).
   */
  async updateShards(filters: readonly ShardFilter[], subjects: (f: ShardFilter) => readonly string[]): Promise<void> {
    const next = new Set(filters.map((f) => f.shard.index));
    const added: ShardPart[] = [];
    for (const f of filters) {
      const k = f.shard.index;
      if (this.#parts.has(k)) continue;
      const left = this.#left.get(k);
      added.push(this.#add(f, left === undefined ? "new" : { seq: left + 1 }));
    }
    try {
      await startAll(added);
    } catch (e) {
      for (const f of filters) if (added.includes(this.#parts.get(f.shard.index)!)) this.#parts.delete(f.shard.index);
      throw e;
    }
    for (const f of filters) {
      const part = this.#parts.get(f.shard.index)!;
      if (!added.includes(part)) await part.update(subjects(f));
    }
    const gone = [...this.#parts.entries()].filter(([k]) => !next.has(k));
    for (const [k, part] of gone) {
      this.#parts.delete(k);
      if (part.lastSeq !== undefined) this.#left.set(k, part.lastSeq);
    }
    await Promise.all(gone.map(([, part]) => part.stop()));
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.#parts.values()].map((p) => p.stop()));
  }

  owns(subject: string): boolean {
    for (const p of this.#parts.values()) if (p.owns?.(subject) === true) return true;
    return false;
  }

  #add(f: ShardFilter, start: StartPosition): ShardPart {
    const part = this.#make(f, start);
    this.#parts.set(f.shard.index, part);
    return part;
  }
}
