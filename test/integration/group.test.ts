// Partitioned durable groups in one process: provisioning, ownership, per-session order,
// parking per partition, and a member leaving.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, newId, type DurableDelivery, type DurableSubscription, type Jetloop, type JetloopEvent } from "../../src/index.js";
import { sessionPartition } from "../../src/partition/partition.js";
import { defaultMembersStreamName, defaultPartitionedStreamName } from "../../src/streams/declared.js";
import { partitionDurable } from "../../src/partition/partition-durable.js";
import { natsServers } from "../harness/context.js";
import { uniqueNamespace } from "../harness/namespace.js";
import { sleep } from "../harness/async.js";

const PARTITIONS = 8;
let bus: Jetloop;
let jsm: JetStreamManager;
const opened: { close(): Promise<unknown> }[] = [];

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("g") });
  await bus.provision({ partitions: PARTITIONS });
  jsm = await jetstreamManager(bus.nc);
});
afterAll(async () => {
  for (const o of opened.reverse()) await o.close().catch(() => undefined);
  for (const s of [defaultPartitionedStreamName(bus.namespace), defaultMembersStreamName(bus.namespace), bus.stream, bus.parked.stream]) await jsm.streams.delete(s).catch(() => undefined);
  await bus.close();
});

function step(sessionId: string, n: number): JetloopEvent {
  return createEvent("StepDone", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: String(n) }] }] });
}

async function member(group: string, id: string, leaseMs = 1000): Promise<DurableSubscription<JetloopEvent>> {
  // A new group starts at the journal's end: earlier tests' events are not its work.
  const sub = await bus.subscribeEvents({ enduring: "all" }, { durable: group, group: { leaseMs, member: id }, ackWaitMs: 2000, start: "new" });
  opened.push(sub);
  return sub;
}

/** Hands each delivery to `handle` without waiting (a group keeps one per partition outstanding). */
function run(sub: DurableSubscription<JetloopEvent>, handle: (d: DurableDelivery<JetloopEvent>) => unknown): Promise<void> {
  return (async () => {
    for await (const d of sub) void handle(d);
  })();
}

describe("partitioned durable groups", () => {
  it("provision: the partition count is fixed once the stream exists", async () => {
    const again = await bus.provision({ partitions: PARTITIONS });
    expect(again.partitioned?.partitioned.action).toBe("unchanged");
    expect(again.partitioned?.members.action).toBe("unchanged");
    await expect(bus.provision({ partitions: PARTITIONS + 1 })).rejects.toMatchObject({ code: "PROVISION_DRIFT" });
    await expect(bus.provision({ partitions: 0 })).rejects.toMatchObject({ code: "OPTIONS_INVALID" });
  });

  it("two members split the partitions; every session's events are handled once, in journal order, one at a time", async () => {
    const group = `g${newId().slice(-8)}`;
    const sessions = Array.from({ length: 24 }, () => newId());
    const handled = new Map<string, number[]>();
    const busy = new Set<string>();
    let overlap = 0;
    const handler = (d: DurableDelivery<JetloopEvent>) => async () => {
      const s = d.event.sessionId;
      if (busy.has(s)) overlap++;
      busy.add(s);
      await sleep(Math.random() * 3);
      (handled.get(s) ?? handled.set(s, []).get(s)!).push(d.journalSeq);
      busy.delete(s);
      await d.ack();
    };
    const a = await member(group, "a");
    const b = await member(group, "b");
    void run(a, (d) => handler(d)());
    void run(b, (d) => handler(d)());
    const published = new Map<string, number[]>();
    for (let i = 0; i < 10; i++) {
      const rs = await Promise.all(sessions.map((s) => bus.publish(step(s, i))));
      rs.forEach((r, j) => (published.get(sessions[j]!) ?? published.set(sessions[j]!, []).get(sessions[j]!)!).push(r.journalSeq));
    }
    await expect.poll(() => [...handled.values()].reduce((n, v) => n + v.length, 0), { timeout: 20_000 }).toBeGreaterThanOrEqual(240);
    expect(handled).toEqual(published);
    expect(overlap).toBe(0);
    // Each member's view is its last reading of the members (renewed every lease / 6): the
    // work can be done before a member has read the other's arrival (a CI run on 2.10).
    await expect.poll(() => [a.group()!.members, b.group()!.members], { timeout: 5_000 }).toEqual([["a", "b"], ["a", "b"]]);
    await expect.poll(() => a.group()!.owned.length + b.group()!.owned.length, { timeout: 5_000 }).toBe(PARTITIONS);
    const [sa, sb] = [a.group()!, b.group()!];
    expect([...sa.owned, ...sb.owned].sort((x, y) => x - y)).toEqual(Array.from({ length: PARTITIONS }, (_, p) => p));
    expect(sa.owned.length).toBeGreaterThan(0);
    expect(sb.owned.length).toBeGreaterThan(0);
    // The server's partition is the session's hash: the partitioned stream's subject
    // (<ns>.partition.<p>.<session>.…, the server's transform) names the partition the
    // client's sessionPartition computes, for every session.
    const prefix = `${bus.namespace}.partition.`;
    const info = await jsm.streams.info(defaultPartitionedStreamName(bus.namespace), { subjects_filter: `${prefix}>` });
    const serverPartitions = new Map<string, Set<number>>();
    for (const subject of Object.keys(info.state.subjects ?? {})) {
      const [p, s] = subject.slice(prefix.length).split(".");
      (serverPartitions.get(s!) ?? serverPartitions.set(s!, new Set()).get(s!)!).add(Number(p));
    }
    for (const s of sessions) expect(serverPartitions.get(s), s).toEqual(new Set([sessionPartition(s, PARTITIONS)]));
  });

  it("a member that leaves gives its partitions to the others within the lease", async () => {
    const group = `g${newId().slice(-8)}`;
    const a = await member(group, "a", 600);
    const b = await member(group, "b", 600);
    const got: number[] = [];
    void run(a, async (d) => {
      got.push(d.journalSeq);
      await d.ack();
    });
    void run(b, async (d) => {
      got.push(d.journalSeq);
      await d.ack();
    });
    await expect.poll(() => b.group()!.owned.length, { timeout: 5_000 }).toBeGreaterThan(0);
    await b.close();
    // Within the lease (600 ms) and a renewal; bounded generously for a loaded machine.
    await expect.poll(() => a.group()!.owned.length, { timeout: 10_000 }).toBe(PARTITIONS);
    const sessions = Array.from({ length: 16 }, () => newId());
    const seqs = (await Promise.all(sessions.map((s) => bus.publish(step(s, 0))))).map((r) => r.journalSeq);
    await expect.poll(() => got.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(seqs.length);
    expect([...got].sort((x, y) => x - y)).toEqual([...seqs].sort((x, y) => x - y));
  });

  it("a failing event parks under its partition's durable name", async () => {
    const group = `g${newId().slice(-8)}`;
    const sub = await bus.subscribeEvents({ enduring: "all" }, { durable: group, group: { leaseMs: 1000, member: "a" }, maxDeliver: 1, start: "new" });
    opened.push(sub);
    const session = newId();
    const replayed: number[] = [];
    void run(sub, async (d) => {
      if (!d.replayed) return d.term("refused");
      replayed.push(d.journalSeq);
      await d.ack();
    });
    const { journalSeq } = await bus.publish(step(session, 0));
    const durable = partitionDurable(group, sessionPartition(session, PARTITIONS));
    await expect.poll(async () => (await bus.parked.list(durable)).filter((e) => e.journalSeq === journalSeq), { timeout: 10_000 }).toHaveLength(1);
    // Lag per partition and for the group: the parked entry is counted under its partition.
    const lag = (await sub.groupLag())!;
    expect(lag.partitions.map((p) => p.durable)).toEqual(Array.from({ length: PARTITIONS }, (_, p) => partitionDurable(group, p)));
    expect(lag.partitions[sessionPartition(session, PARTITIONS)]!.parked).toBe(1);
    expect(lag.total).toMatchObject({ parked: 1, pending: 0, ackPending: 0 });
    // A replayed entry comes back to its partition's consumer, and leaves the store when acknowledged.
    await bus.parked.replay(durable, "all");
    await expect.poll(() => replayed, { timeout: 10_000 }).toEqual([journalSeq]);
    await expect.poll(() => bus.parked.list(durable), { timeout: 10_000 }).toEqual([]);
    expect(await bus.parked.list(durable)).toEqual([]);
  });
});
