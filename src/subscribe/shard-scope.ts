/**
 * Which journal shard a reader reads. A reader of sessions that all live in one shard (a
 * session handle, a viewer, a per-session durable) reads that shard only, exactly as on a
 * namespace never split.
 */
import type { JournalShards, ShardJournal } from "./journal-shards.js";
import { OptionsError } from "../errors.js";
import type { ResolvedFilter } from "./filter.js";

/** The one shard `resolved` selects sessions of (the first when it has no journal part); refused when it selects several. */
export function oneShard(shards: JournalShards, resolved: ResolvedFilter, what: string): ShardJournal {
  if (resolved.shards.length > 1) {
    throw new OptionsError("sessions", `${what} reads one journal shard: the filter selects sessions of ${resolved.shards.length} of the namespace's ${shards.count} shards`);
  }
  return shards.all[resolved.shards[0]?.shard.index ?? 0]!;
}
