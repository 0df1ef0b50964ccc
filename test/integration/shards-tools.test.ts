// The per-session tools over a namespace split in S = 3 journal shards, on a real
// nats-server: a partitioned group reads the partitioned copy of every shard (one source
// per shard) and gets each event once, in order per session, with its own shard's journal
// sequence; a parked entry is kept under its shard, so two shards' entries of one journal
// sequence are two entries, and replay sends each to the durable of its own shard (never
// to the other shard's durable of the same name and sequence); `consumers` names every
// shard's durables; the gateway serves status, journal pages and the session list for
// sessions of every shard; the CLI provisions shards, tails and parks per shard.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, newId, startGateway, type DurableDelivery, type DurableSubscription, type Jetloop, type JetloopEvent } from "../../src/index.js";
import { OptionsError } from "../../src/errors.js";
import { sessionPartition } from "../../src/partition/partition.js";
import { connectTest, natsServers, natsUrl, uniqueNamespace } from "../harness/context.js";
import { waitFor } from "../harness/async.js";
import { jetloopIn } from "../harness/cli.js";
import { request, SseReader } from "./gateway/http.js";

const S = 3;
const N = 4;

let bus: Jetloop;
let nc: NatsConnection;
let jsm: JetStreamManager;
let namespace: string;

const shardStream = (k: number) => `${bus.stream}_${k}_of_${S}`;
const shardOf = (sessionId: string) => sessionPartition(sessionId, S);
const step = (sessionId: string): JetloopEvent =>
  createEvent("StepDone", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: "x" }] }] });

/** `perShard` new sessions in each shard. */
function sessionsPerShard(perShard: number): string[][] {
  const by: string[][] = Array.from({ length: S }, () => []);
  while (by.some((b) => b.length < perShard)) {
    const s = newId();
    const b = by[shardOf(s)]!;
    if (b.length < perShard) b.push(s);
  }
  return by;
}

/** Publishes fillers until every shard's stream ends at the same sequence; returns it. */
async function levelShards(): Promise<number> {
  const fillers = sessionsPerShard(1).map((b) => b[0]!);
  const last = async () => Promise.all(Array.from({ length: S }, async (_, k) => (await jsm.streams.info(shardStream(k))).state.last_seq));
  const ends = await last();
  const top = Math.max(...ends);
  for (let k = 0; k < S; k++) for (let i = ends[k]!; i < top; i++) await bus.publish(step(fillers[k]!));
  expect(new Set(await last()).size).toBe(1);
  return top;
}

function collect(sub: DurableSubscription<JetloopEvent>, onDelivery: (d: DurableDelivery<JetloopEvent>) => Promise<void>): void {
  void (async () => {
    for await (const d of sub) await onDelivery(d);
  })().catch(() => undefined);
}

beforeAll(async () => {
  namespace = uniqueNamespace();
  bus = await connect({ servers: natsServers(), namespace, shards: S });
  await bus.provision({ partitions: N });
  nc = await connectTest();
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  await bus?.close();
  for (const name of [...Array.from({ length: S }, (_, k) => shardStream(k)), bus.parked.stream, `${namespace}_partitioned`, `${namespace}_members`]) {
    await jsm?.streams.delete(name).catch(() => undefined);
  }
  await nc?.close();
});

describe("partitioned groups over 3 shards", () => {
  it("the partitioned stream sources every shard, each from its own root", async () => {
    const info = await jsm.streams.info(`${namespace}_partitioned`);
    expect(info.config.sources?.map((s) => [s.name, s.subject_transforms])).toEqual(
      Array.from({ length: S }, (_, k) => [shardStream(k), [{ src: `${namespace}.journal-${k}-of-${S}.*.>`, dest: `${namespace}.partition.{{partition(${N},1)}}.{{wildcard(1)}}.>` }]]),
    );
    // Provisioning again is unchanged (the sources are immutable, and the same).
    const again = await bus.provision({ partitions: N, mode: "verify" });
    expect(again.partitioned?.partitioned.action).toBe("unchanged");
  });

  it("a group gets every event of every shard's sessions once, in order per session, with its shard's journal sequence", async () => {
    const group = `g${newId().slice(-8)}`;
    const sub = (await bus.subscribeEvents({ enduring: "all" }, { durable: group, group: { leaseMs: 1000, member: "a" }, start: "new" }));
    const got: { sessionId: string; journalSeq: number; subject: string }[] = [];
    collect(sub, async (d) => {
      got.push({ sessionId: d.event.sessionId, journalSeq: d.journalSeq, subject: d.subject });
      await d.ack();
    });
    const sessions = sessionsPerShard(2).flat();
    const published = new Map<string, number[]>();
    for (let round = 0; round < 3; round++) {
      for (const s of sessions) {
        const r = await bus.publish(step(s));
        (published.get(s) ?? published.set(s, []).get(s)!).push(r.journalSeq);
      }
    }
    await waitFor("every event delivered", () => got.length >= sessions.length * 3, 20_000);
    await sub.close();
    expect(got.length).toBe(sessions.length * 3);
    for (const s of sessions) {
      const mine = got.filter((g) => g.sessionId === s);
      expect(mine.map((g) => g.journalSeq)).toEqual(published.get(s));
      for (const g of mine) expect(g.subject.startsWith(`${namespace}.journal-${shardOf(s)}-of-${S}.${s}.`)).toBe(true);
    }
  });

  it("a group's parked entries of one journal sequence in two shards are two entries; replay by shard sends one back", async () => {
    const group = `p${newId().slice(-8)}`;
    const replayed: { sessionId: string; journalSeq: number; subject: string }[] = [];
    const sub = (await bus.subscribeEvents({ enduring: "all" }, { durable: group, group: { leaseMs: 1000, member: "a" }, start: "new" }));
    collect(sub, async (d) => {
      if (d.replayed) {
        replayed.push({ sessionId: d.event.sessionId, journalSeq: d.journalSeq, subject: d.subject });
        await d.ack();
      } else d.term("parked by the test");
    });
    const [a, b] = [sessionsPerShard(1)[0]![0]!, sessionsPerShard(1)[2]![0]!];
    const level = await levelShards();
    const ra = await bus.publish(step(a));
    const rb = await bus.publish(step(b));
    expect(ra.journalSeq).toBe(level + 1);
    expect(rb.journalSeq).toBe(level + 1);
    const atLevel = async () => (await bus.parked.list({ group })).filter((e) => e.journalSeq === level + 1);
    await waitFor("both parked", async () => (await atLevel()).length === 2, 20_000);
    const collided = await atLevel();
    expect(collided.map((e) => e.shard)).toEqual([
      { index: 0, count: S },
      { index: 2, count: S },
    ]);
    // One sequence, two shards: refused without the shard, nothing moved.
    await expect(bus.parked.replay({ group }, { seq: level + 1 })).rejects.toBeInstanceOf(OptionsError);
    await expect(bus.parked.show({ group }, level + 1)).rejects.toBeInstanceOf(OptionsError);
    expect((await bus.parked.show({ group }, level + 1, 2))?.subject).toContain(`.journal-2-of-${S}.${b}.`);
    const sent = await bus.parked.replay({ group }, { seq: level + 1, shard: 2 });
    expect(sent.map((e) => e.shard.index)).toEqual([2]);
    await waitFor("replayed", () => replayed.length === 1, 20_000);
    expect(replayed[0]).toMatchObject({ sessionId: b, journalSeq: level + 1 });
    expect(replayed[0]!.subject.startsWith(`${namespace}.journal-2-of-${S}.${b}.`)).toBe(true);
    await waitFor("acked entry removed", async () => (await bus.parked.list({ group })).filter((e) => e.journalSeq === level + 1).length === 1, 20_000);
    expect((await bus.parked.list({ group })).find((e) => e.journalSeq === level + 1)?.shard.index).toBe(0);
    await sub.close();
  });
});

describe("plain durables, parking and consumers over 3 shards", () => {
  it("a durable of one name on two shards: each parks under its shard, replay reaches only its own, consumers names both", async () => {
    const durable = `d${newId().slice(-8)}`;
    const [a, b] = [sessionsPerShard(1)[0]![0]!, sessionsPerShard(1)[1]![0]!];
    const back: Record<string, { sessionId: string; journalSeq: number }[]> = { a: [], b: [] };
    const open = async (session: string, key: "a" | "b") => {
      const sub = (await bus.session(session).subscribeEvents({ enduring: "all" }, { durable, start: "new" }));
      collect(sub, async (d) => {
        if (d.replayed) {
          back[key]!.push({ sessionId: d.event.sessionId, journalSeq: d.journalSeq });
          await d.ack();
        } else d.term("parked by the test");
      });
      return sub;
    };
    const subA = await open(a, "a");
    const subB = await open(b, "b");
    const level = await levelShards();
    const ra = await bus.publish(step(a));
    const rb = await bus.publish(step(b));
    expect([ra.journalSeq, rb.journalSeq]).toEqual([level + 1, level + 1]);
    await waitFor("both parked", async () => (await bus.parked.list(durable)).length === 2, 20_000);
    const entries = await bus.parked.list(durable);
    expect(entries.map((e) => [e.shard.index, e.journalSeq])).toEqual([
      [0, level + 1],
      [1, level + 1],
    ]);

    const report = await bus.consumers();
    expect(report.shards?.map((k) => k.stream)).toEqual(Array.from({ length: S }, (_, k) => shardStream(k)));
    const mine = report.consumers.filter((c) => c.durable === durable);
    expect(mine.map((c) => [c.shard, c.parked])).toEqual([
      [0, 1],
      [1, 1],
    ]);
    expect((await bus.consumer(durable, 1))?.shard).toBe(1);
    expect(await subB.lag()).toMatchObject({ durable, shard: 1, parked: 1 });

    await expect(bus.parked.replay(durable, { seq: level + 1 })).rejects.toBeInstanceOf(OptionsError);
    expect((await bus.parked.list(durable)).length).toBe(2);
    await bus.parked.replay(durable, { seq: level + 1, shard: 1 });
    await waitFor("shard 1's durable got it back", () => back.b!.length === 1, 20_000);
    expect(back.b).toEqual([{ sessionId: b, journalSeq: level + 1 }]);
    // Shard 0's durable of the same name, with an entry of the same sequence, got nothing:
    // its own entry, replayed after, comes to it after anything the first replay could have
    // sent it, and is all it got.
    await bus.parked.replay(durable, { seq: level + 1, shard: 0 });
    await waitFor("shard 0's durable got its own back", () => back.a!.some((d) => d.sessionId === a), 20_000);
    expect(back.a).toEqual([{ sessionId: a, journalSeq: level + 1 }]);
    await subA.close();
    await subB.close();
  });
});

describe("the gateway over 3 shards", () => {
  it("serves status, journal pages and the session list for sessions of every shard", async () => {
    const sessions = sessionsPerShard(1).map((b) => b[0]!);
    const seqs = new Map<string, number[]>();
    for (const [i, sid] of sessions.entries()) {
      const loopId = newId();
      const turnId = newId();
      const r1 = await bus.publish(createEvent("SessionStarted", { sessionId: sid, createdAt: `2026-11-29T10:0${i}:00Z` }));
      const r2 = await bus.publish(createEvent("TurnStarted", { sessionId: sid, loopId, turnId, createdAt: `2026-11-29T10:0${i}:01Z` }));
      seqs.set(sid, [r1.journalSeq, r2.journalSeq]);
    }
    const gw = await startGateway(bus, { listen: "127.0.0.1:0" });
    try {
      for (const sid of sessions) {
        const status = await request(`${gw.url}/v1/sessions/${sid}/status`);
        expect(status.status).toBe(200);
        expect(JSON.parse(status.body)).toMatchObject({ session_id: sid, last_journal_seq: seqs.get(sid)![1] });
        const page = await request(`${gw.url}/v1/sessions/${sid}/journal`);
        expect(page.status).toBe(200);
        expect((JSON.parse(page.body) as { events: { journal_seq: number }[] }).events.map((e) => e.journal_seq)).toEqual(seqs.get(sid));
        // The SSE stream (the gateway's default feed mode) resumes in the session's shard: its own events, by their sequences.
        const sse = await SseReader.open(`${gw.url}/v1/sessions/${sid}/events?last_event_id=${seqs.get(sid)![0]! - 1}`);
        try {
          const text = await sse.until((t) => t.includes(`id: ${seqs.get(sid)![1]}\n`));
          expect(text).toContain(`id: ${seqs.get(sid)![0]}\n`);
        } finally {
          sse.close();
        }
        // A resume point is the session's shard's sequence: past its end is refused, whatever other shards hold.
        const past = await request(`${gw.url}/v1/sessions/${sid}/events?last_event_id=${(await jsm.streams.info(shardStream(shardOf(sid)))).state.last_seq + 1}`);
        expect(past.status).toBe(400);
      }
      const list = await request(`${gw.url}/v1/sessions?limit=1000`);
      expect(list.status).toBe(200);
      const listed = (JSON.parse(list.body) as { sessions: { session_id: string }[] }).sessions.map((s) => s.session_id);
      for (const sid of sessions) expect(listed).toContain(sid);
    } finally {
      await gw.close();
    }
  });
});

describe("the CLI over 3 shards", () => {
  it("provision --verify names every shard; tail follows one session's shard; parked and consumers show shards", async () => {
    const base = ["--server", natsUrl(), "--namespace", namespace];
    const verify = await jetloopIn(["provision", "--verify", "--shards", String(S), "--partitions", String(N), ...base]);
    expect(verify.code).toBe(0);
    for (let k = 0; k < S; k++) expect(verify.stdout).toContain(`stream ${shardStream(k)}: unchanged`);
    expect(verify.stdout).toContain(`${namespace}_partitioned: unchanged`);
    const refused = await jetloopIn(["provision", "--verify", "--shards", "2", ...base]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`provisioned in ${S} shards, not 2`);

    const sid = sessionsPerShard(1)[2]![0]!;
    const r = await bus.publish(step(sid));
    const tail = await jetloopIn(["tail", "--session", sid, "--from-seq", String(r.journalSeq), "--no-live", "--json", "--count", "1", ...base]);
    expect(tail.code).toBe(0);
    expect(JSON.parse(tail.stdout.trim())).toMatchObject({ journal_seq: r.journalSeq });
    expect(tail.stderr).toContain(shardStream(2));

    const consumers = await jetloopIn(["consumers", ...base]);
    expect(consumers.code).toBe(0);
    expect(consumers.stderr).toContain(`${S} shards`);
    // The entries the tests above parked (of several shards).
    const parked = await jetloopIn(["parked", "list", "--json", ...base]);
    expect(parked.code).toBe(0);
    const lines = parked.stdout.trim().split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.length).toBeGreaterThan(0);
    for (const l of lines) expect(l).toMatchObject({ shards: S, shard: expect.any(Number) as number });
  });
});
