/**
 * The namespace's journal as its readers see it: one shard (a namespace never split) or
 * several (streams/shards.ts), each with where its reads go and where it ends now.
 */
import type { JournalPositions } from "../streams/position.js";
import type { JournalShard } from "../streams/shards.js";
import type { JournalSource } from "./journal-range.js";

/** One shard of the namespace's journal: its stream, where reads of it go, where it ends now. */
export interface ShardJournal {
  readonly shard: JournalShard;
  readonly stream: string;
  /** Where the shard's reads go (replay, history, gap repair, reconcile): journal/journal-range.ts. */
  readonly journal: JournalSource;
  /** Where subscriptions that start at "new" begin (the stream's info, or a restricted user's own consumer: streams/position.ts). */
  readonly position: JournalPositions;
}

/** The namespace's journal shards: one (the namespace never split) or `count`. */
export interface JournalShards {
  readonly count: number;
  readonly all: readonly ShardJournal[];
  /** The shard session `sessionId` lives in. */
  of(sessionId: string): ShardJournal;
}
