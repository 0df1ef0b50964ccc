/**
 * The name of a group partition's durable consumer, `{group}_p{n}` on the partitioned
 * stream, which is also the durable its parked entries are kept under: built here, and read
 * back here by the tools that show a group (`jetloop consumers`, `jetloop parked --group`).
 */
import { MAX_PARTITIONS } from "./partition.js";

export function partitionDurable(group: string, partition: number): string {
  return `${group}_p${partition}`;
}

const NAME = /^(.+)_p(0|[1-9]\d{0,2})$/;

/** The group and partition a consumer name stands for, if it names one of `partitions` (default: any a stream can have). */
export function parsePartitionDurable(name: string, partitions = MAX_PARTITIONS): { readonly group: string; readonly partition: number } | undefined {
  const m = NAME.exec(name);
  if (!m) return undefined;
  const partition = Number(m[2]);
  return partition < partitions ? { group: m[1]!, partition } : undefined;
}
