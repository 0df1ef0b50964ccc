/**
 * Where a reader starts in each journal shard it reads (README.md, "Readers over shards").
 * A reader of sessions that all live in one shard (a session handle, a viewer, a
 * per-session durable) reads that shard only, exactly as on a namespace never split; a
 * namespace-wide reader reads every shard it selects sessions of, each from its own
 * position. A journal sequence names a position in one shard's stream, so a start given as
 * one sequence is refused for a reader of several shards: it takes the vector of positions.
 */
import { OptionsError } from "../errors.js";
import { consumerError } from "../journal/consumer-errors.js";
import type { ResolvedFilter, ShardFilter } from "./filter.js";
import type { ShardJournal } from "../journal/journal-shards.js";
import type { ShardPositions, StartPosition, SubscribeStart } from "./options.js";

/** Checks a position vector against the namespace's shard count (one entry per shard). */
export function checkPositions(option: string, positions: ShardPositions, count: number): ShardPositions {
  if (positions.length !== count) {
    throw new OptionsError(option, `a position vector has one entry per journal shard: ${positions.length} given, the namespace has ${count}`);
  }
  return positions;
}

/** Checks a reader's start against what its filter selects; `what` names the reader. */
export function checkStart(start: SubscribeStart, resolved: ResolvedFilter, count: number, what: string): void {
  if (typeof start !== "object") return;
  if ("after" in start) checkPositions("start", start.after, count);
  else if ("seq" in start && resolved.shards.length > 1) {
    throw new OptionsError("start", `{ seq } is a position in one journal shard, and ${what}'s filter selects sessions of ${resolved.shards.length} of the namespace's ${count} shards: start { after: positions } (one entry per shard), "all", "new" or { time }`);
  }
}

/** The start in shard `shard` of a start checked by `checkStart`: after its position, or the same start. */
export function startIn(start: SubscribeStart, shard: number): StartPosition {
  return typeof start === "object" && "after" in start ? { seq: start.after[shard]! + 1 } : start;
}

/**
 * Refuses a position vector one entry of which is past its shard's end now: no reader of
 * this journal was handed it (a vector of another namespace, layout or recreated stream),
 * and starting after it would skip that shard's next events unseen.
 */
export async function checkPositionsReached(option: string, positions: ShardPositions, shards: readonly ShardJournal[], filter?: readonly ShardFilter[]): Promise<void> {
  // The filter's journal subjects where it reads a shard: a restricted user may read positions of her own subjects only.
  const subjects = filter === undefined ? undefined : shards.map((s) => filter.find((f) => f.shard.index === s.shard.index)?.journalSubjects ?? []).map((j) => (j.length > 0 ? j : undefined));
  const ends = await shardEnds(shards, "reading the journal's position", subjects);
  for (const [k, end] of ends.entries()) {
    if (positions[k]! > end) throw new OptionsError(option, `entry ${k} (${positions[k]}) is past the end of journal shard ${k} (last sequence ${end}): not a position this journal handed out`);
  }
}

/**
 * Each shard's last sequence now, read together; a refusal typed, naming `what`.
 * `subjects`: the journal subjects read in each shard (same order), where the caller has a
 * filter (a restricted user may read positions of her own subjects only).
 */
export function shardEnds(shards: readonly ShardJournal[], what: string, subjects?: readonly (readonly string[] | undefined)[]): Promise<number[]> {
  return Promise.all(
    shards.map((s, i) =>
      s.position.state(subjects?.[i]).then(
        (state) => state.lastSeq,
        (e: unknown) => {
          throw consumerError(e, s.stream, what);
        },
      ),
    ),
  );
}
