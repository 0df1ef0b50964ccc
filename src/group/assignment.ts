/**
 * Which live member owns which partition: rendezvous hashing (the member with the highest
 * hash of member and partition wins), so every member computes the same answer from the
 * same member list, and a member joining or leaving moves only the partitions it gains or
 * loses (about 1/M of them), not a reshuffle.
 */
import { fnv1a32 } from "../partition/partition.js";

const utf8 = new TextEncoder();

/**
 * FNV-1a mixes its last bytes poorly: member ids that differ in one byte would rank in
 * the same order for every partition. MurmurHash3's finalizer spreads every input bit.
 */
function score(member: string, partition: number): number {
  let h = fnv1a32(utf8.encode(`${partition}/${member}`));
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/** The owner of `partition` among `members` (non-empty, any order). */
export function partitionOwner(members: readonly string[], partition: number): string {
  let best: string | undefined;
  let bestScore = -1;
  for (const m of members) {
    const s = score(m, partition);
    if (s > bestScore || (s === bestScore && m < best!)) {
      best = m;
      bestScore = s;
    }
  }
  if (best === undefined) throw new Error("a partition needs at least one member");
  return best;
}

/** The partitions (of `partitions`) that `member` owns when `members` are live. */
export function ownedPartitions(members: readonly string[], member: string, partitions: number): number[] {
  const owned: number[] = [];
  for (let p = 0; p < partitions; p++) if (partitionOwner(members, p) === member) owned.push(p);
  return owned;
}
