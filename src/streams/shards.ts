/**
 * A namespace's journal over S streams (shards). A session lives in exactly one shard, the
 * one the partition hash names (`sessionPartition`, the same the partitioned groups and
 * nats-server's `partition(S, …)` compute), so its order and its journal sequence (its
 * shard's stream sequence) are what they were with one stream. The publisher chooses the
 * shard (it knows the session) and addresses the shard's own subjects; no server mapping
 * is involved, so provisioning is JetStream API only and works on every supported server.
 *
 * S = 1 is the layout of a namespace never split: stream `{base}`, subjects `{ns}.journal.>`.
 * S > 1: shard k is stream `{base}_{k}_of_{S}` on `{ns}.journal-{k}-of-{S}.>`, its metadata
 * saying which shard of how many it is.
 */
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from "@nats-io/jetstream";
import { OptionsError, ShardLayoutError } from "../errors.js";
import { sessionPartition } from "../partition/partition.js";
import { checkNamespace, type JournalShard, MAX_SHARDS, shardOfToken, UNSHARDED } from "../subjects/subjects.js";

export type { JournalShard };

export { MAX_SHARDS };

/** Stream metadata of a shard of S > 1: how many shards, and which this is. */
export const SHARDS_METADATA_KEY = "jetloop_shards";
export const SHARD_METADATA_KEY = "jetloop_shard";

/** A shard count: an integer 1..MAX_SHARDS, else an OptionsError naming `option`. */
export function checkShards(n: unknown, option = "shards"): number {
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > MAX_SHARDS) {
    throw new OptionsError(option, `must be an integer from 1 to ${MAX_SHARDS}`);
  }
  return n;
}

/** Every shard of a namespace split in `count`. */
export function allShards(count: number): JournalShard[] {
  checkShards(count);
  return count === 1 ? [UNSHARDED] : Array.from({ length: count }, (_, index) => ({ index, count }));
}

/** The shard session `sessionId` lives in, of `count`. */
export function shardOfSession(sessionId: string, count: number): JournalShard {
  return count === 1 ? UNSHARDED : { index: sessionPartition(sessionId, count), count };
}

/** The stream of `shard`, for the base stream name `base` (the bus option `stream`). */
export function shardStreamName(base: string, shard: JournalShard): string {
  return shard.count === 1 ? base : `${base}_${shard.index}_of_${shard.count}`;
}

/**
 * How many shards the namespace of base stream `base` was provisioned with, read from the
 * server: 1 when `{base}` exists, S when some `{base}_k_of_S` does, undefined when none does
 * (not provisioned) or the account may not list streams. Several layouts at once (a
 * migration left half done) are refused: which one a session lives in is then unknown.
 * With `namespace`, the namespace's journal streams under any name count too: shards of
 * another count do not overlap this layout's subjects, so the server would let a stream
 * of another name and count be made beside it.
 */
export async function provisionedShards(jsm: JetStreamManager, base: string, namespace?: string): Promise<number | undefined> {
  const found = namespace === undefined ? new Set<number>() : await journalLayouts(jsm, namespace);
  try {
    await jsm.streams.info(base);
    found.add(1);
  } catch (e) {
    if (!(e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound)) throw e;
  }
  // Any shard names its layout, not only shard 0: a layout with some shards missing (half
  // provisioned, or some deleted) is still that layout, never "not provisioned".
  const shard = new RegExp(`^${base.replace(/[-]/g, "\\$&")}_(\\d{1,4})_of_(\\d{1,4})$`);
  const canonical = (t: string) => String(Number(t)) === t;
  for await (const name of jsm.streams.names()) {
    const m = shard.exec(name);
    if (!m || !canonical(m[1]!) || !canonical(m[2]!)) continue;
    const [k, n] = [Number(m[1]), Number(m[2])];
    if (n >= 2 && n <= MAX_SHARDS && k < n) found.add(n);
  }
  if (found.size > 1) {
    const layouts = [...found].sort((a, b) => a - b);
    throw new ShardLayoutError(layouts, 0, `the journal ${base} is provisioned in several layouts at once (${layouts.join(", ")} shards): finish or undo the migration first`);
  }
  return found.size === 1 ? [...found][0] : undefined;
}

/**
 * The shard counts of every stream capturing a journal root of `namespace` (`{ns}.journal.>`
 * or `{ns}.journal-k-of-S.>`), whatever its name.
 */
async function journalLayouts(jsm: JetStreamManager, namespace: string): Promise<Set<number>> {
  const prefix = `${checkNamespace(namespace)}.`;
  const found = new Set<number>();
  for await (const info of jsm.streams.list(`${prefix}>`)) {
    for (const subject of info.config.subjects ?? []) {
      if (!subject.startsWith(prefix) || !subject.endsWith(".>")) continue;
      const shard = shardOfToken(subject.slice(prefix.length, -2));
      if (shard) found.add(shard.count);
    }
  }
  return found;
}
