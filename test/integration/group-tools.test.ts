// A partitioned group as the tools show it: `jetloop consumers` lists the group and each
// partition (owner, lag), and its sums are the partitions' backlog; an entry parked by a
// partition names its group and partition, and `jetloop parked list/replay/drop --group`
// reach every partition's entries without the partition durables' names, replaying each
// into its partition one at a time, in journal order per session.
import { jetstreamManager } from "@nats-io/jetstream";
import fc from "fast-check";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consumersCommand } from "../../src/cli/consumers.js";
import { parkedCommand } from "../../src/cli/parked.js";
import { connect, createEvent, newId, type DurableDelivery, type DurableSubscription, type Jetloop, type JetloopEvent } from "../../src/index.js";
import { partitionDurable } from "../../src/partition/partition-durable.js";
import { sessionPartition } from "../../src/partition/partition.js";
import { defaultMembersStreamName, defaultPartitionedStreamName } from "../../src/streams/declared.js";
import { waitFor } from "../harness/async.js";
import { natsServers } from "../harness/context.js";
import { uniqueNamespace } from "../harness/namespace.js";

const PARTITIONS = 6;
let bus: Jetloop;
const opened: { close(): Promise<unknown> }[] = [];

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("gt") });
  await bus.provision({ partitions: PARTITIONS });
});
afterAll(async () => {
  for (const o of opened.reverse()) await o.close().catch(() => undefined);
  const jsm = await jetstreamManager(bus.nc);
  for (const s of [defaultPartitionedStreamName(bus.namespace), defaultMembersStreamName(bus.namespace), bus.stream, bus.parked.stream]) await jsm.streams.delete(s).catch(() => undefined);
  await bus.close();
});

/** Runs a CLI command in this process; its lines. */
async function cli(command: typeof consumersCommand, argv: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await command([...argv, "--server", natsServers().join(","), "--namespace", bus.namespace], (s) => out.push(...s.split("\n")), (s) => err.push(s));
  return { code, out, err };
}

const step = (sessionId: string, n: number): JetloopEvent =>
  createEvent("StepDone", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: String(n) }] }] });

async function member(group: string, id: string, extra: Record<string, unknown> = {}): Promise<DurableSubscription<JetloopEvent>> {
  const sub = await bus.subscribeEvents({ enduring: "all" }, { durable: group, group: { leaseMs: 1000, member: id }, start: "new", ...extra });
  opened.push(sub);
  return sub;
}

/** Random sessions and how many events each publishes: the family of partition loads. */
const loads = (seed: number) => fc.sample(fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 4, maxLength: 12 }), { numRuns: 1, seed })[0]!.map((n) => ({ session: newId(), n }));

async function publishAll(load: { session: string; n: number }[]): Promise<Map<number, string>> {
  const sessionOf = new Map<number, string>();
  for (let i = 0; i < 4; i++) for (const { session, n } of load) if (i < n) sessionOf.set((await bus.publish(step(session, i))).journalSeq, session);
  return sessionOf;
}

describe("jetloop consumers with a partitioned group", () => {
  it("one line per group with its sums, one per partition with its owner; the sums are the partitions' backlog", async () => {
    const group = `c${newId().slice(-8)}`;
    // Two members that hold what they get: each partition keeps one delivery outstanding, the rest pending.
    const a = await member(group, "a", { ackWaitMs: 30_000 });
    const b = await member(group, "b", { ackWaitMs: 30_000 });
    const held: DurableDelivery<JetloopEvent>[] = [];
    for (const s of [a, b]) void (async () => { for await (const d of s) held.push(d); })();
    await waitFor("both members see both", () => a.group()!.members.length === 2 && b.group()!.members.length === 2, 5000);
    const sessionOf = await publishAll(loads(7));
    const perPartition = Array.from({ length: PARTITIONS }, () => 0);
    for (const s of sessionOf.values()) perPartition[sessionPartition(s, PARTITIONS)]!++;
    const report = async () => (await bus.consumers()).groups.find((g) => g.group === group)!;
    await waitFor("the partitions' backlog is every event", async () => (await report()).total.behind === sessionOf.size, 10_000);
    const g = await report();
    expect(g).toMatchObject({ partitionCount: PARTITIONS, members: ["a", "b"] });
    expect(g.partitions.map((p) => p.durable)).toEqual(Array.from({ length: PARTITIONS }, (_, p) => partitionDurable(group, p)));
    g.partitions.forEach((p, i) => {
      expect(p.pending + p.ackPending).toBe(perPartition[i]);
      expect(p.ackPending).toBeLessThanOrEqual(1);
      expect(p.owner).toBe(a.group()!.owned.includes(i) ? "a" : "b");
    });
    // A member's own view (sub.groupLag()) agrees: the same partitions, owners and sums.
    const own = (await a.groupLag())!;
    expect(own).toMatchObject({ group, partitionCount: PARTITIONS, members: ["a", "b"] });
    expect(own.partitions.map((p) => [p.partition, p.owner, p.pending + p.ackPending])).toEqual(g.partitions.map((p) => [p.partition, p.owner, p.pending + p.ackPending]));
    expect(g.total.pending).toBe(g.partitions.reduce((n, p) => n + p.pending, 0));
    expect(g.total.ackPending).toBe(g.partitions.reduce((n, p) => n + p.ackPending, 0));

    const text = await cli(consumersCommand, []);
    expect(text.code).toBe(0);
    const head = text.out.findIndex((l) => l.startsWith(`group ${group} `));
    expect(text.out[head]).toMatch(new RegExp(`^group ${group} +members=a,b partitions=${PARTITIONS} pending=${g.total.pending} ack_pending=${g.total.ackPending} `));
    for (let p = 0; p < PARTITIONS; p++) {
      expect(text.out[head + 1 + p]).toMatch(new RegExp(`^  ${partitionDurable(group, p)} +partition=${p} owner=${g.partitions[p]!.owner} pending=\\d+ .* max_deliver=5 backoff=-`));
    }
    const json = (await cli(consumersCommand, ["--json"])).out.filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>).filter((r) => r.group === group);
    expect(json[0]).toMatchObject({ group, members: ["a", "b"], partitions: PARTITIONS, pending: g.total.pending, ack_pending: g.total.ackPending });
    expect(json.slice(1).map((r) => [r.partition, r.owner, r.durable])).toEqual(g.partitions.map((p) => [p.partition, p.owner, p.durable]));
    for (const d of held) await d.ack().catch(() => undefined);
  });
});

describe("parked entries of a partitioned group", () => {
  it("name their group and partition; list, replay and drop by --group; replay comes back per partition in journal order, one at a time", async () => {
    const group = `p${newId().slice(-8)}`;
    const sub = await member(group, "a", { maxDeliver: 1 });
    const replayed = new Map<string, number[]>();
    const busy = new Set<number>();
    let overlap = 0;
    void (async () => {
      for await (const d of sub) {
        if (!d.replayed) {
          void d.term("refused");
          continue;
        }
        void (async () => {
          const p = sessionPartition(d.event.sessionId, PARTITIONS);
          if (busy.has(p)) overlap++;
          busy.add(p);
          await new Promise((r) => setTimeout(r, Math.random() * 5));
          (replayed.get(d.event.sessionId) ?? replayed.set(d.event.sessionId, []).get(d.event.sessionId)!).push(d.journalSeq);
          busy.delete(p);
          await d.ack();
        })();
      }
    })();
    const sessionOf = await publishAll(loads(11));
    await waitFor("every event parked", async () => (await bus.parked.list({ group })).length === sessionOf.size, 15_000);
    const entries = await bus.parked.list({ group });
    expect(entries.map((e) => e.journalSeq)).toEqual([...sessionOf.keys()].sort((x, y) => x - y));
    for (const e of entries) {
      const p = sessionPartition(sessionOf.get(e.journalSeq)!, PARTITIONS);
      expect(e.group).toEqual({ name: group, partition: p });
      expect(e.durable).toBe(partitionDurable(group, p));
    }
    expect((await bus.consumers()).groups.find((g) => g.group === group)!.total.parked).toBe(sessionOf.size);

    const listed = await cli(parkedCommand, ["list", "--group", group, "--json"]);
    const rows = listed.out.filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows.map((r) => [r.journal_seq, r.group, r.partition])).toEqual(entries.map((e) => [e.journalSeq, group, e.group!.partition]));
    expect((await cli(parkedCommand, ["list", "--group", group])).out[0]).toMatch(new RegExp(`^#${entries[0]!.journalSeq} ${group}_p\\d+ group=${group}/\\d+ held terminated`));
    expect((await cli(parkedCommand, ["show", "--group", group, "--seq", String(entries[0]!.journalSeq)])).code).toBe(0);

    // Drop one by journal sequence alone; replay the rest.
    const dropped = entries[0]!;
    const drop = await cli(parkedCommand, ["drop", "--group", group, "--seq", String(dropped.journalSeq)]);
    expect(drop.err).toContain("1 dropped");
    const replay = await cli(parkedCommand, ["replay", "--group", group, "--all"]);
    expect(replay.err).toContain(`${entries.length - 1} sent back to group ${group}`);
    await waitFor("every replayed entry handled and gone", async () => [...replayed.values()].flat().length === entries.length - 1 && (await bus.parked.list({ group })).length === 0, 15_000);
    const expected = new Map<string, number[]>();
    for (const e of entries.slice(1)) {
      const s = sessionOf.get(e.journalSeq)!;
      (expected.get(s) ?? expected.set(s, []).get(s)!).push(e.journalSeq);
    }
    expect(replayed).toEqual(expected);
    expect(overlap).toBe(0);
    await expect(bus.parked.list({ group: "a.b" })).rejects.toMatchObject({ code: "OPTIONS_INVALID", option: "group" });
    await expect(cli(parkedCommand, ["replay", "--group", group, "--durable", "x", "--all"])).rejects.toMatchObject({ code: "OPTIONS_INVALID" });
  });
});

describe("a group whose membership store is gone", () => {
  it("its renewals are refused promptly, which still proves the member live: its partitions go on", async () => {
    const group = `m${newId().slice(-8)}`;
    // Its rebalances and renewals fail and say so: a logger of its own keeps the test quiet.
    const quiet = await connect({ servers: natsServers(), namespace: bus.namespace, logger: pino({ level: "silent" }) });
    try {
      const sub = await quiet.subscribeEvents({ enduring: "all" }, { durable: group, group: { leaseMs: 600, member: "a" }, start: "new" });
      const got: number[] = [];
      void (async () => {
        for await (const d of sub) {
          got.push(d.journalSeq);
          await d.ack();
        }
      })();
      await waitFor("a owns every partition", () => sub.group()!.owned.length === PARTITIONS, 5000);
      const jsm = await jetstreamManager(bus.nc);
      await jsm.streams.delete(defaultMembersStreamName(bus.namespace));
      await new Promise((r) => setTimeout(r, 700)); // past 2/3 of the ack wait: every proof since is a refusal
      const seqs = (await Promise.all(Array.from({ length: 6 }, () => bus.publish(step(newId(), 0))))).map((r) => r.journalSeq);
      await waitFor("every event handled", () => seqs.every((s) => got.includes(s)), 10_000);
      await sub.close();
    } finally {
      await quiet.close();
    }
  });
});
