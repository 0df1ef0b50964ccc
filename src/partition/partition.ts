/**
 * Which partition of N a session falls in. One function for every place that splits a
 * namespace by session (partitioned durable groups now, journal shards later), and equal
 * to what nats-server's `{{partition(N, k)}}` subject-mapping function computes for the
 * session token: FNV-1a (32 bit) of the token's UTF-8 bytes, modulo N. The server does
 * the split (a subject transform on the partitioned stream's source); this function lets
 * a client name a session's partition without asking it, and a test prove the two agree.
 */
import { OptionsError } from "../errors.js";

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const utf8 = new TextEncoder();

/** FNV-1a, 32 bit (Go's hash/fnv New32a), of `bytes`. */
export function fnv1a32(bytes: Uint8Array): number {
  let h = FNV_OFFSET;
  for (const b of bytes) h = Math.imul(h ^ b, FNV_PRIME) >>> 0;
  return h;
}

/** The most partitions a namespace may have (each is a durable consumer per group). */
export const MAX_PARTITIONS = 256;

/** A partition count: an integer 1..MAX_PARTITIONS, else an OptionsError naming `option`. */
export function checkPartitions(n: unknown, option = "partitions"): number {
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > MAX_PARTITIONS) {
    throw new OptionsError(option, `must be an integer from 1 to ${MAX_PARTITIONS}`);
  }
  return n;
}

/** The partition (0..n-1) of session `sessionId` among `n`, as the server's partition(n, …) maps it. */
export function sessionPartition(sessionId: string, n: number): number {
  return fnv1a32(utf8.encode(sessionId)) % checkPartitions(n);
}
