// An adversary's look at a group's tools: parked group entries replayed after the partition
// count changed (the partitioned stream deleted and provisioned again with another N), entries
// whose group headers contradict their durable, and `consumers` against the server's own state.
import { headers } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, newId, type DurableDelivery, type DurableSubscription, type Jetloop, type JetloopEvent } from "../../src/index.js";
import { sessionPartition } from "../../src/partition/partition.js";
import { partitionDurable } from "../../src/partition/partition-durable.js";
import { defaultMembersStreamName, defaultPartitionedStreamName } from "../../src/streams/declared.js";
import { parkedSubject } from "../../src/subjects/subjects.js";
import { natsServers } from "../harness/context.js";
import { uniqueNamespace } from "../harness/namespace.js";
import { waitFor } from "../harness/async.js";

let bus: Jetloop;
let jsm: JetStreamManager;
const opened: { close(): Promise<unknown> }[] = [];

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("ga") });
  jsm = await jetstreamManager(bus.nc);
});
afterAll(async () => {
  for (const o of opened.reverse()) await o.close().catch(() => undefined);
  for (const s of [defaultPartitionedStreamName(bus.namespace), defaultMembersStreamName(bus.namespace), bus.stream, bus.parked.stream]) await jsm.streams.delete(s).catch(() => undefined);
  await bus.close();
});

function step(sessionId: string): JetloopEvent {
  return createEvent("StepDone", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: "x" }] }] });
}

async function member(group: string): Promise<DurableSubscription<JetloopEvent>> {
  const sub = await bus.subscribeEvents({ enduring: "all" }, { durable: group, group: { leaseMs: 1000, member: newId().slice(-10) }, ackWaitMs: 2000, start: "new" });
  opened.push(sub);
  return sub;
}

function run(sub: DurableSubscription<JetloopEvent>, handle: (d: DurableDelivery<JetloopEvent>) => unknown): void {
  void (async () => {
    for await (const d of sub) void handle(d);
  })();
}

/** Sessions covering every partition of `n` (one each, `extra` more at random). */
function sessionsCovering(n: number, extra: number): string[] {
  const byPartition = new Map<number, string>();
  while (byPartition.size < n) {
    const s = newId();
    if (!byPartition.has(sessionPartition(s, n))) byPartition.set(sessionPartition(s, n), s);
  }
  return [...byPartition.values(), ...Array.from({ length: extra }, () => newId())];
}

describe("a group's tools, adversarially", () => {
  it("consumers: for random group sizes, each partition's owner is the member running it and its figures are the server's (behind = its events)", async () => {
    await bus.provision({ partitions: 8 });
    const rounds = [1, 3].map((m, r) => ({ members: m, events: 5 + r * 9 }));
    for (const round of rounds) {
      const group = `gr${newId().slice(-8)}`;
      const subs = await Promise.all(Array.from({ length: round.members }, () => member(group)));
      // Holds every delivery: each partition keeps one outstanding, the rest pending.
      const held: DurableDelivery<JetloopEvent>[] = [];
      for (const sub of subs) run(sub, (d) => held.push(d));
      await waitFor("every member sees the others", () => subs.every((s) => s.group()!.members.length === round.members), 10_000);
      const perPartition = new Array<number>(8).fill(0);
      for (let i = 0; i < round.events; i++) {
        const s = newId();
        perPartition[sessionPartition(s, 8)]!++;
        await bus.publish(step(s));
      }
      const report = () => bus.consumers().then((c) => c.groups.find((g) => g.group === group)!);
      await waitFor("the backlog is the group's", async () => (await report()).total.behind === round.events, 10_000);
      const g = await report();
      expect(g.members).toEqual(subs.map((s) => s.group()!.member).sort());
      expect(g.partitionCount).toBe(8);
      expect(g.partitions.map((p) => p.partition)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      for (const p of g.partitions) {
        const runner = subs.filter((s) => s.group()!.owned.includes(p.partition)).map((s) => s.group()!.member);
        expect({ partition: p.partition, owner: [p.owner] }).toEqual({ partition: p.partition, owner: runner });
        const info = await jsm.consumers.info(defaultPartitionedStreamName(bus.namespace), partitionDurable(group, p.partition));
        expect({ partition: p.partition, pending: p.pending, ackPending: p.ackPending, behind: p.behind }).toEqual({ partition: p.partition, pending: info.num_pending, ackPending: info.num_ack_pending, behind: perPartition[p.partition] });
        expect(p.ackPending).toBe(Math.min(1, perPartition[p.partition]!));
      }
      expect(g.total.pending + g.total.ackPending).toBe(round.events);
      for (const d of held) d.nak();
      await Promise.all(subs.map((s) => s.close()));
      // A group whose members left: no owner, no members.
      const after = await report();
      expect(after.members).toEqual([]);
      expect(after.partitions.every((p) => p.owner === undefined)).toBe(true);
    }
  });

  it("replayed group entries while the partitions' live events flow: never two of one partition in hand at once, each partition's replays in journal order", async () => {
    await bus.provision({ partitions: 8 });
    const group = `gl${newId().slice(-8)}`;
    const sessions = sessionsCovering(8, 8);
    const sub = await member(group);
    const partitionOf = new Map<number, number>();
    const inHand = new Map<number, number>();
    let overlaps = 0;
    const replayedOrder = new Map<number, number[]>();
    let parkNext = true;
    run(sub, async (d) => {
      const p = sessionPartition(d.event.sessionId, 8);
      partitionOf.set(d.journalSeq, p);
      inHand.set(p, (inHand.get(p) ?? 0) + 1);
      if (inHand.get(p)! > 1) overlaps++;
      await new Promise((r) => setTimeout(r, Math.random() * 6));
      inHand.set(p, inHand.get(p)! - 1);
      if (d.replayed) (replayedOrder.get(p) ?? replayedOrder.set(p, []).get(p)!).push(d.journalSeq);
      // The first round is parked; the rest (and the replays) are acknowledged.
      if (!d.replayed && parkNext) d.term("first round");
      else await d.ack();
    });
    const firstRound = new Set<number>();
    for (let round = 0; round < 3; round++) for (const s of sessions) firstRound.add((await bus.publish(step(s))).journalSeq);
    await waitFor("the first rounds parked", async () => (await bus.parked.list({ group })).length === firstRound.size, 15_000);
    parkNext = false;
    // Replay while each session's next events are published.
    const live = (async () => {
      for (let round = 0; round < 4; round++) for (const s of sessions) await bus.publish(step(s));
    })();
    const sent = await bus.parked.replay({ group }, "all");
    await live;
    expect(sent).toHaveLength(firstRound.size);
    await waitFor("every replay handled", () => [...replayedOrder.values()].reduce((n, l) => n + l.length, 0) === firstRound.size, 15_000);
    await waitFor("nothing behind", async () => (await bus.consumers()).groups.find((g) => g.group === group)!.total.behind === 0, 10_000);
    expect(overlaps).toBe(0);
    for (const [, seqs] of replayedOrder) expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(await bus.parked.list({ group })).toEqual([]);
    await sub.close();
  });

  it("a plain durable named like a group's partition consumer is refused, either way round (they would share parked entries and replays)", async () => {
    await bus.provision({ partitions: 8 });
    for (let round = 0; round < 4; round++) {
      const group = `gp${newId().slice(-8)}`;
      const partition = round * 2 + (round % 2);
      const plain = () => bus.subscribeEvents({ enduring: "all" }, { durable: partitionDurable(group, partition), start: "new" });
      if (round % 2 === 0) {
        const g = await member(group);
        await expect(plain()).rejects.toMatchObject({ code: "OPTIONS_INVALID", option: "durable" });
        await g.close();
      } else {
        const p = await plain();
        opened.push(p);
        await expect(member(group)).rejects.toMatchObject({ code: "OPTIONS_INVALID", option: "durable" });
        await p.close();
      }
    }
  });

  it("an owner that names no durable and no group (a group key left undefined, an empty object, a number) is refused by every operation, nothing dropped or replayed", async () => {
    await bus.provision({ partitions: 8 });
    const durable = `pd${newId().slice(-8)}`;
    const sub = await bus.subscribeEvents({ enduring: "all" }, { durable, start: "new" });
    opened.push(sub);
    void (async () => {
      for await (const d of sub) d.term("parked by the test");
    })();
    for (let i = 0; i < 3; i++) await bus.publish(step(newId()));
    await waitFor("parked", async () => (await bus.parked.list(durable)).length === 3, 10_000);
    const before = await bus.parked.list();
    const owners: unknown[] = [{ group: undefined }, {}, { durable }, { group: durable, durable }, 7, null, "", { group: "" }, { group: 3 }, ["x"]];
    const store = bus.parked as unknown as Record<"list" | "show" | "drop" | "replay", (...a: unknown[]) => Promise<unknown>>;
    for (const owner of owners) {
      for (const call of [() => store.drop(owner, "all"), () => store.replay(owner, "all"), () => store.show(owner, 1), ...(owner === undefined ? [] : [() => store.list(owner)])]) {
        const got = await call().then((v) => ({ resolved: v }), (e: unknown) => e);
        expect({ owner, got }).toMatchObject({ owner, got: { code: "OPTIONS_INVALID" } });
      }
    }
    for (const call of [() => store.drop(undefined, "all"), () => store.replay(undefined, "all"), () => store.show(undefined, 1)]) {
      expect(await call().then((v) => ({ resolved: v }), (e: unknown) => e)).toMatchObject({ code: "OPTIONS_INVALID" });
    }
    expect(await bus.parked.list()).toEqual(before);
    await sub.close();
    await bus.parked.drop(durable, "all");
  });

  it("replay --group after the partition count changed: each entry goes to its session's partition now, and is handled", async () => {
    const group = `ga${newId().slice(-8)}`;
    await bus.provision({ partitions: 8 });
    const first = await member(group);
    run(first, (d) => d.term("parked by the test"));
    const sessions = sessionsCovering(8, 4);
    const seqOf = new Map<number, string>();
    for (const s of sessions) seqOf.set((await bus.publish(step(s))).journalSeq, s);
    await waitFor("all parked", async () => (await bus.parked.list({ group })).length === sessions.length, 15_000);
    await first.close();
    // Some are replayed while no member runs: they wait in the replay state of partitions 4-7.
    const stranded = (await bus.parked.list({ group })).filter((e) => e.group!.partition >= 4 && e.journalSeq % 2 === 0);
    for (const e of stranded) await bus.parked.replay({ group }, { seq: e.journalSeq });
    expect((await bus.parked.list({ group })).filter((e) => e.state === "replay")).toHaveLength(stranded.length);

    // The operator provisions the partitioned stream again with fewer partitions.
    await jsm.streams.delete(defaultPartitionedStreamName(bus.namespace));
    await bus.provision({ partitions: 4 });
    const handled = new Map<number, number>();
    const second = await member(group);
    // The new stream copies the journal again (its live events are acknowledged); each
    // replayed entry is parked again, so where it was handled shows in the store.
    run(second, (d) => {
      if (!d.replayed) return d.ack();
      handled.set(d.journalSeq, (handled.get(d.journalSeq) ?? 0) + 1);
      d.term("again");
    });
    const sent = await bus.parked.replay({ group }, "all");
    expect(sent.map((e) => e.durable).sort()).toEqual([...seqOf].map(([, s]) => partitionDurable(group, sessionPartition(s, 4))).sort());
    await waitFor("every replayed entry handled", () => handled.size === sessions.length, 15_000);
    await waitFor("all parked again", async () => (await bus.parked.list({ group })).filter((e) => e.state === "held").length === sessions.length, 10_000);
    for (const e of await bus.parked.list({ group })) {
      const want = sessionPartition(seqOf.get(e.journalSeq)!, 4);
      expect({ seq: e.journalSeq, durable: e.durable, partition: e.group?.partition }).toEqual({ seq: e.journalSeq, durable: partitionDurable(group, want), partition: want });
    }
    expect([...handled.values()].every((n) => n === 1)).toBe(true);
    await second.close();
    await bus.parked.drop({ group }, "all");
  });

  it("an entry whose group headers contradict its durable's name is not the group's", async () => {
    const group = `gb${newId().slice(-8)}`;
    const js = jetstream(bus.nc);
    // Every way the two can disagree: another partition, another group, a durable that names no partition.
    const cases: { durable: string; group: string; partition: number }[] = [
      { durable: partitionDurable(group, 1), group, partition: 2 },
      { durable: partitionDurable(`${group}x`, 1), group, partition: 1 },
      { durable: `${group}_q1`, group, partition: 1 },
      { durable: partitionDurable(group, 300), group, partition: 300 },
    ];
    let seq = 1000;
    for (const c of cases) {
      const h = headers();
      h.set("Jetloop-Parked-Subject", `${bus.namespace}.journal.${newId()}._.step.StepDone`);
      h.set("Jetloop-Parked-Seq", String(++seq));
      h.set("Jetloop-Parked-Durable", c.durable);
      h.set("Jetloop-Parked-Deliveries", "1");
      h.set("Jetloop-Parked-Reason", "terminated");
      h.set("Jetloop-Parked-Error-Code", "TERMINATED");
      h.set("Jetloop-Parked-Error", "forged");
      h.set("Jetloop-Parked-At", new Date().toISOString());
      h.set("Jetloop-Parked-Group", c.group);
      h.set("Jetloop-Parked-Partition", String(c.partition));
      await js.publish(parkedSubject(bus.namespace, c.durable, "held", seq), new Uint8Array([1]), { headers: h });
    }
    expect(await bus.parked.list({ group })).toEqual([]);
    await expect(bus.parked.replay({ group }, "all")).resolves.toEqual([]);
  });

  it("replay --group with the partitioned stream gone: refused, every entry still held", async () => {
    const group = `gc${newId().slice(-8)}`;
    const sub = await member(group);
    run(sub, (d) => d.term("parked by the test"));
    const sessions = sessionsCovering(4, 2);
    const seqs = new Set<number>();
    for (const s of sessions) seqs.add((await bus.publish(step(s))).journalSeq);
    const ours = async () => (await bus.parked.list({ group })).filter((e) => seqs.has(e.journalSeq));
    await waitFor("all parked", async () => (await ours()).length === sessions.length, 15_000);
    await sub.close();
    const before = await bus.parked.list({ group });
    await jsm.streams.delete(defaultPartitionedStreamName(bus.namespace));
    await expect(bus.parked.replay({ group }, "all")).rejects.toMatchObject({ code: "NOT_PROVISIONED" });
    expect(await bus.parked.list({ group })).toEqual(before);
    expect((await ours()).map((e) => e.state)).toEqual(sessions.map(() => "held"));
    await bus.parked.drop({ group }, "all");
  });

  it("a running member whose partitioned stream is deleted and provisioned again with another count stops with a typed error, not on with the old split and positions", async () => {
    await bus.provision({ partitions: 4 });
    const group = `gd${newId().slice(-8)}`;
    const sub = await member(group);
    const ended = (async () => {
      for await (const d of sub) await d.ack();
    })().then(() => undefined, (e: unknown) => e);
    for (let i = 0; i < 10; i++) await bus.publish(step(newId()));
    // As retention would: the journal keeps less than the old copy had, so sequences differ.
    await jsm.streams.purge(bus.stream, { keep: 3 });
    await jsm.streams.delete(defaultPartitionedStreamName(bus.namespace));
    await bus.provision({ partitions: 2 });
    const error = await Promise.race([ended, new Promise((r) => setTimeout(() => r("still running"), 10_000))]);
    expect(["NOT_PROVISIONED", "SUBSCRIPTION_FAILED"]).toContain((error as { code?: string }).code);
    // A member started again reads the new stream.
    const again = await member(group);
    const got = new Set<number>();
    run(again, async (d) => {
      got.add(d.journalSeq);
      await d.ack();
    });
    const seqs: number[] = [];
    for (let i = 0; i < 8; i++) seqs.push((await bus.publish(step(newId()))).journalSeq);
    await waitFor("the new member handles the new events", () => seqs.every((q) => got.has(q)), 10_000);
    expect(again.group()!.partitions).toBe(2);
    await again.close();
  });
});
