/**
 * A namespace's partitioned groups as an operator sees them (`bus.consumers()`,
 * `jetloop consumers`): each group's partition consumers on the partitioned stream with
 * their lag, redelivery settings and owner, and the group's sums. The owner is what the
 * group's own rule (assignment.ts) gives for the members live in one reading of the
 * membership store; a move in progress shows the new owner.
 */
import { type ConsumerInfo, JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from "@nats-io/jetstream";
import type { Parked } from "../parking/parked-store.js";
import { type ConsumerFigures, type GroupFigures, groupFiguresOf } from "../streams/consumer-figures.js";
import { defaultMembersStreamName, defaultPartitionedStreamName, PARTITIONS_METADATA_KEY } from "../streams/declared.js";
import { partitionOwner } from "./assignment.js";
import { liveAt, readLeases } from "./membership.js";
import { parsePartitionDurable } from "../partition/partition-durable.js";

/** One partition of a durable group: its consumer's figures and the member that owns it. */
export interface GroupPartitionFigures extends ConsumerFigures {
  readonly partition: number;
  /** The live member that owns the partition; undefined while the group has none. */
  readonly owner: string | undefined;
}

/** A durable group's figures: its partitions, their owners and the group's members (in `bus.consumers()`). */
export interface GroupReport extends GroupFigures {
  readonly group: string;
  /** The stream's partition count. */
  readonly partitionCount: number;
  /** The members whose lease is live, sorted. */
  readonly members: readonly string[];
  readonly partitions: readonly GroupPartitionFigures[];
}

const notFound = (e: unknown) => e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound;

/** Every group with a consumer on the namespace's partitioned stream, by name; none when it is not provisioned. */
export async function groupsReport(jsm: JetStreamManager, namespace: string, parked: Parked | undefined): Promise<GroupReport[]> {
  const stream = defaultPartitionedStreamName(namespace);
  let partitionCount: number;
  try {
    partitionCount = Number((await jsm.streams.info(stream)).config.metadata?.[PARTITIONS_METADATA_KEY]);
  } catch (e) {
    if (notFound(e)) return [];
    throw e;
  }
  const byGroup = new Map<string, { partition: number; info: ConsumerInfo }[]>();
  for await (const info of jsm.consumers.list(stream)) {
    const named = info.config.durable_name === undefined ? undefined : parsePartitionDurable(info.config.durable_name, partitionCount);
    if (named) (byGroup.get(named.group) ?? byGroup.set(named.group, []).get(named.group)!).push({ partition: named.partition, info });
  }
  if (byGroup.size === 0) return [];
  const counts = (await parked?.counts()) ?? new Map<string, number>();
  const membersStream = defaultMembersStreamName(namespace);
  const reports: GroupReport[] = [];
  for (const [group, infos] of [...byGroup].sort(([a], [b]) => a.localeCompare(b))) {
    const members = await readLeases(jsm, membersStream, namespace, group).then(
      (leases) => liveAt(leases, Date.now()),
      (e: unknown) => (notFound(e) ? [] : Promise.reject(e as Error)),
    );
    const figures = groupFiguresOf(stream, [...infos].sort((a, b) => a.partition - b.partition), counts);
    const partitions = figures.partitions.map((p) => ({ ...p, owner: members.length > 0 ? partitionOwner(members, p.partition) : undefined }));
    reports.push({ ...figures, group, partitionCount, members, partitions });
  }
  return reports;
}
