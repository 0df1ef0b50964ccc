/**
 * Which live member owns which partition: rendezvous hashing (the member with the highest
 * hash of member and partition wins), so every member computes the same answer from the
 * same member list, and a member joining or leaving moves only the partitions it gains or
 * loses (about 1/M of them), not a reshuffle.
 */
import { fnv1a32 } from "../../partition/partition.js";

const utf8 = new TextEncoder();

/** The owner of `partition` among `members` (non-empty, any order). */
export function partitionOwner(members: readonly string[], partition: number): string {
  let best: string | undefined;
  let bestScore = -1;
  for (const m of members) {
    const score = fnv1a32(utf8.encode(`${m}/${partition}`));
    if (score > bestScore || (score === bestScore && m < best!)) {
      best = m;
      bestScore = score;
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
