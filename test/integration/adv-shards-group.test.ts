// An adversary's look at partitioned groups over a journal split in shards: several members
// while sessions of every shard publish, and a copy stored in a shard its session does not
// live in (a raw publish by a writer of the namespace) — never handled as that shard's event.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, newId, type DurableDelivery, type DurableSubscription, type Jetloop, type JetloopEvent } from "../../src/index.js";
import { shardOfSession } from "../../src/streams/shards.js";
import { defaultPartitionedStreamName } from "../../src/streams/declared.js";
import { natsServers } from "../harness/context.js";
import { uniqueNamespace } from "../harness/namespace.js";
import { waitFor } from "../harness/async.js";

const S = 3;
let bus: Jetloop;
let jsm: JetStreamManager;
const opened: { close(): Promise<unknown> }[] = [];
const logs: string[] = [];

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("asg"), shards: S, logger: pino({ level: "warn" }, { write: (line: string) => void logs.push(line) }) });
  await bus.provision({ partitions: 4 });
  jsm = await jetstreamManager(bus.nc);
});
afterAll(async () => {
  for (const o of opened.reverse()) await o.close().catch(() => undefined);
  for await (const name of jsm.streams.names()) if (name.startsWith(bus.namespace)) await jsm.streams.delete(name).catch(() => undefined);
  await bus.close();
});

function step(sessionId: string): JetloopEvent {
  return createEvent("StepDone", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: "x" }] }] });
}

function run(sub: DurableSubscription<JetloopEvent>, handle: (d: DurableDelivery<JetloopEvent>) => unknown): void {
  void (async () => {
    for await (const d of sub) void handle(d);
  })();
}

describe("partitioned groups over shards, adversarially", () => {
  it("a copy stored in another shard than its session's is never handed to a group member nor a namespace-wide durable", async () => {
    const group = `g${newId().slice(-8)}`;
    const seen: DurableDelivery<JetloopEvent>[] = [];
    const members = await Promise.all([0, 1].map(() => bus.subscribeEvents({ enduring: "all" }, { durable: group, group: { leaseMs: 1000, member: newId().slice(-10) }, ackWaitMs: 2000, start: "new" })));
    opened.push(...members);
    for (const m of members) run(m, async (d) => { seen.push(d); await d.ack(); });
    const plainName = `d${newId().slice(-8)}`;
    const plain = await bus.subscribeEvents({ enduring: "all" }, { durable: plainName, start: "new" });
    opened.push(plain);
    const plainSeen: DurableDelivery<JetloopEvent>[] = [];
    run(plain, async (d) => { plainSeen.push(d); await d.ack(); });
    await waitFor("members see each other", () => members.every((m) => m.group()!.members.length === 2), 10_000);

    // Sessions of every shard, several events each.
    const sessions = Array.from({ length: 9 }, () => newId());
    const published: { session: string; shard: number; seq: number }[] = [];
    for (let round = 0; round < 3; round++) {
      for (const s of sessions) {
        const r = await bus.publish(step(s));
        published.push({ session: s, shard: shardOfSession(s, S).index, seq: r.journalSeq });
      }
    }
    // A session of shard a, its event stored in shard b ≠ a by a raw publish.
    const victim = sessions[0]!;
    const home = shardOfSession(victim, S).index;
    const wrong = (home + 1) % S;
    const loc = bus.journalOf(victim);
    const original = await jsm.streams.getMessage(loc.stream, { seq: published[0]!.seq });
    const forged = original!.subject.replace(`.journal-${home}-of-${S}.`, `.journal-${wrong}-of-${S}.`);
    expect(forged).not.toBe(original!.subject);
    await bus.nc.request(forged, original!.data, { timeout: 5000 });
    const after = await bus.publish(step(victim));
    published.push({ session: victim, shard: home, seq: after.journalSeq });

    await waitFor("the group handled every published event", () => seen.length >= published.length, 15_000);
    await waitFor("the plain durable took every published event", () => plainSeen.length >= published.length, 15_000);
    // Each reader refused the misplaced copy, and said so.
    await waitFor("both refusals logged", () => logs.some((l) => l.includes("DELIVERY_INVALID")) && logs.some((l) => l.includes("not a journal event")), 5000);
    // Every consumer of the group and of the plain durable, on every shard and partition, has
    // nothing pending and nothing unacknowledged: the copy was refused and settled, and no
    // reader can be handed it (again) from here on. This state, not a quiet window, is what
    // the deliveries below are counted in.
    await waitFor(
      "every consumer of both readers settled",
      async () => {
        const infos = [];
        for await (const stream of jsm.streams.names()) {
          if (!stream.startsWith(bus.namespace)) continue;
          for await (const c of jsm.consumers.list(stream)) if (c.name.startsWith(group) || c.name === plainName) infos.push(c);
        }
        return infos.length > 0 && infos.every((c) => c.num_pending === 0 && c.num_ack_pending === 0);
      },
      15_000,
      100,
    );
    for (const got of [seen, plainSeen]) {
      const key = (d: { shard: number; journalSeq: number }) => `${d.shard}:${d.journalSeq}`;
      expect(got.map(key).sort()).toEqual(published.map((p) => `${p.shard}:${p.seq}`).sort());
      for (const d of got) {
        expect(d.shard).toBe(shardOfSession(d.event.sessionId, S).index);
        expect(d.subject.startsWith(`${bus.namespace}.journal-${d.shard}-of-${S}.${d.event.sessionId}.`)).toBe(true);
      }
      // per session, in journal order
      for (const s of sessions) {
        const seqs = got.filter((d) => d.event.sessionId === s).map((d) => d.journalSeq);
        expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      }
    }
  }, 60_000);

  it("members joining and leaving while sessions of every shard publish: each event acknowledged once, one at a time per session, in its shard's order", async () => {
    const group = `j${newId().slice(-8)}`;
    const join = async () => {
      const sub = await bus.subscribeEvents({ enduring: "all" }, { durable: group, group: { leaseMs: 1000, member: newId().slice(-10) }, ackWaitMs: 2000, start: "new" });
      opened.push(sub);
      run(sub, async (d) => {
        const s = d.event.sessionId;
        if (busy.has(s)) overlaps.push(`${s} ${d.journalSeq}`);
        busy.add(s);
        await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 15)));
        busy.delete(s);
        await d.ack().then(() => acked.push({ s, shard: d.shard, seq: d.journalSeq }), () => undefined);
      });
      return sub;
    };
    const busy = new Set<string>();
    const overlaps: string[] = [];
    const acked: { s: string; shard: number; seq: number }[] = [];
    const sessions = Array.from({ length: 12 }, () => newId());
    const published: string[] = [];
    const first = await join();
    for (let round = 0; round < 8; round++) {
      for (const s of sessions) published.push(`${shardOfSession(s, S).index}:${(await bus.publish(step(s))).journalSeq}`);
      if (round === 2) await join();
      if (round === 4) await first.close();
      if (round === 6) await join();
    }
    await waitFor("every event acknowledged", () => acked.length >= published.length, 30_000);
    // No delivery can come again once every partition consumer of the group has
    // nothing pending and nothing unacknowledged: the server's state, not a quiet window.
    await waitFor(
      "the group's consumers settled",
      async () => {
        const infos = [];
        for await (const ci of jsm.consumers.list(defaultPartitionedStreamName(bus.namespace))) if (ci.config.durable_name?.startsWith(`${group}_`)) infos.push(ci);
        return infos.length > 0 && infos.every((ci) => ci.num_ack_pending === 0 && ci.num_pending === 0);
      },
      15_000,
      50,
    );
    expect(overlaps).toEqual([]);
    expect(acked.map((a) => `${a.shard}:${a.seq}`).sort()).toEqual([...published].sort());
    for (const s of sessions) {
      const seqs = acked.filter((a) => a.s === s).map((a) => a.seq);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    }
  }, 90_000);
});
