// Adversary: `updateFilter` on a subscription over a namespace of 3 journal shards, live (the
// feed) and durable, on a real nats-server. The rule: once an update settles, the filter in
// effect is the one `sub.filter` reports — the old one when the update failed (typed), the
// new one when it resolved — and every event of a session in it is delivered once, none of a
// session outside it; updates racing each other, or a close, settle so too.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, fromConnection, newId, type Jetloop, type JetloopEvent, type Subscription } from "../../src/index.js";
import { isJetloopError } from "../../src/errors.js";
import { sessionPartition } from "../../src/partition/partition.js";
import { connectTest, natsServers, uniqueNamespace } from "../harness/context.js";
import { sleep, waitFor } from "../harness/async.js";

const S = 3;
let bus: Jetloop;
let jsm: JetStreamManager;
let nc: NatsConnection;
let namespace: string;
const quiet = pino({ level: "silent" });

const shardStream = (k: number) => `${bus.stream}_${k}_of_${S}`;
const step = (sessionId: string): JetloopEvent =>
  createEvent("StepDone", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: "x" }] }] });

function sessionIn(shard: number): string {
  for (;;) {
    const s = newId();
    if (sessionPartition(s, S) === shard) return s;
  }
}

/** A small deterministic generator (the trials are reproducible from their seed). */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

beforeAll(async () => {
  namespace = uniqueNamespace();
  // On a connection the bus does not own: a test flushes it (a close's unsubscriptions reach the server before what it publishes next).
  nc = await connectTest();
  bus = fromConnection(nc, { namespace, shards: S, logger: quiet });
  await bus.provision();
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  for (let k = 0; k < S; k++) await jsm.streams.delete(shardStream(k)).catch(() => undefined);
  await jsm.streams.delete(bus.parked.stream).catch(() => undefined);
  await bus?.close();
});

/**
 * A consumer once the server has dealt with every pull request it held: none waiting (a
 * request for an inbox nobody listens on is dropped when an event comes for it), or an
 * event handed over. The requests were sent before the close (the connection was flushed
 * since) and the events stored after it are pending for them, so from this state on the
 * closed subscription can take nothing: the check reads it, not a quiet window. After 10 s
 * it is read as it is (and the caller's check fails on it). No consumer: undefined.
 */
async function settledConsumer(stream: string, name: string) {
  const read = () => jsm.consumers.info(stream, name).catch(() => undefined);
  const settled = await waitFor(
    `${name} on ${stream} holding no pull request`,
    async () => {
      const info = await read();
      return (info === undefined || info.num_waiting === 0 || info.num_ack_pending > 0) && { info };
    },
    10_000,
    50,
  ).catch(() => undefined);
  return settled === undefined ? read() : settled.info;
}

/** Reads the subscription on; the session and event id of what it was handed, in order. */
function reader(sub: Subscription<JetloopEvent>): { sessionId: string; id: string }[] {
  const got: { sessionId: string; id: string }[] = [];
  void (async () => {
    for await (const d of sub) {
      got.push({ sessionId: d.event.sessionId, id: d.event.eventId });
      if ("ack" in d && typeof d.ack === "function") await (d as { ack: () => Promise<void> }).ack();
    }
  })().catch(() => undefined);
  return got;
}

/**
 * Publishes one event per session and checks the reader gets exactly those of `sub.filter`'s
 * sessions, once each. What is outside the filter is shown absent by order, not by a quiet
 * window: after the round, a sentinel of a session of the filter in each shard the filter
 * covers. A live subscription reads the one feed on one connection, where the feed's copies
 * come in publish order (each republished before its publish is acknowledged); a durable
 * reads each covered shard through its consumer, in journal order; a shard the filter does
 * not cover has no event of it to publish, and its consumer (`durable`), if one is left from
 * an earlier filter, must hand nothing more over: read from the server.
 */
// (A durable's shard selected again resumes its consumer from its ack floor: what it holds of
// earlier rounds may come too, and is not this round's.)
async function deliversItsFilter(sub: Subscription<JetloopEvent>, got: { sessionId: string; id: string }[], sessions: readonly string[], durable?: string): Promise<void> {
  const wanted = new Set(sub.filter.sessions === undefined || sub.filter.sessions === "all" ? sessions : sub.filter.sessions);
  const covered = [...new Set([...wanted].map((s) => sessionPartition(s, S)))];
  const uncovered = Array.from({ length: S }, (_, k) => k).filter((k) => !covered.includes(k));
  // The update's unsubscriptions reach the server before what follows (one connection).
  await nc.flush();
  const handed = async (k: number) => (durable === undefined ? 0 : ((await jsm.consumers.info(shardStream(k), durable).catch(() => undefined))?.delivered.consumer_seq ?? 0));
  const handedBefore = await Promise.all(uncovered.map(handed));
  const round = new Map<string, string>();
  for (const s of sessions) {
    const e = step(s);
    round.set(e.eventId, s);
    await bus.publish(e);
  }
  const sentinels = new Set<string>();
  for (const k of covered) {
    const e = step([...wanted].find((s) => sessionPartition(s, S) === k)!);
    sentinels.add(e.eventId);
    await bus.publish(e);
  }
  await waitFor("the sentinels", () => [...sentinels].every((id) => got.some((g) => g.id === id)), 10_000).catch(() => undefined);
  const mine = () => got.filter((g) => round.has(g.id)).map((g) => g.sessionId);
  const expected = sessions.filter((s) => wanted.has(s)).sort();
  expect({ filter: [...wanted].sort(), got: mine().sort() }).toEqual({ filter: [...wanted].sort(), got: expected });
  if (durable !== undefined) {
    for (const [i, k] of uncovered.entries()) {
      const info = await settledConsumer(shardStream(k), durable);
      expect(info?.delivered.consumer_seq ?? 0, `shard ${k}, outside the filter, handed nothing more`).toBe(handedBefore[i]);
    }
  }
}

describe("updateFilter over 3 shards", () => {
  for (const kind of ["live", "durable"] as const) {
    it(`${kind}: racing updates that add and remove shards settle to the filter reported`, async () => {
      const sessions = [sessionIn(0), sessionIn(0), sessionIn(1), sessionIn(2)];
      const durable = kind === "durable" ? `u${newId().slice(-8)}` : undefined;
      const sub = await bus.subscribeEvents({ enduring: "all", sessions: [sessions[0]!] }, { start: "new", ...(durable ? { durable } : {}) });
      const got = reader(sub);
      try {
        const next = rng(kind === "live" ? 26 : 62);
        for (let trial = 0; trial < 8; trial++) {
          // 2 or 3 updates at once, each to a non-empty random subset of the sessions.
          const updates = Array.from({ length: 2 + Math.floor(next() * 2) }, () => {
            const chosen = sessions.filter(() => next() < 0.5);
            return chosen.length > 0 ? chosen : [sessions[Math.floor(next() * sessions.length)]!];
          });
          const results = await Promise.allSettled(updates.map((u) => sub.updateFilter({ enduring: "all", sessions: u })));
          for (const r of results) if (r.status === "rejected") expect(isJetloopError(r.reason), String(r.reason)).toBe(true);
          expect(sub.closed).toBe(false);
          await deliversItsFilter(sub, got, sessions, durable);
        }
      } finally {
        await sub.close();
      }
    }, 120_000);
  }

  for (const kind of ["live", "durable"] as const) {
    it(`${kind}: adding a shard whose stream is gone fails typed and leaves the old filter in effect`, async () => {
      const ns = uniqueNamespace();
      const own = await connect({ servers: natsServers(), namespace: ns, shards: S, logger: quiet });
      try {
        await own.provision();
        const sessions = [sessionIn(0), sessionIn(1), sessionIn(2)];
        const durable = kind === "durable" ? `g${newId().slice(-8)}` : undefined;
        const sub = await own.subscribeEvents({ enduring: "all", sessions: [sessions[0]!] }, { start: "new", ...(durable ? { durable } : {}) });
        const got = reader(sub);
        await jsm.streams.delete(`${own.stream}_2_of_${S}`);
        const e = await sub.updateFilter({ enduring: "all", sessions }).then(() => undefined, (err: unknown) => err);
        expect(isJetloopError(e), String(e)).toBe(true);
        expect([...(sub.filter.sessions as Iterable<string>)]).toEqual([sessions[0]]);
        for (const s of sessions.slice(0, 2)) await own.publish(step(s));
        // A sentinel of session 0 after session 1's event: the feed republishes each before its
        // publish is acknowledged, so on the live kind's connection session 1's would come
        // first. The durable kind reads each shard through its own consumer, with no order
        // between them: shard 1's, if the failed update left one, is read from the server.
        const sentinel = step(sessions[0]!);
        await own.publish(sentinel);
        await waitFor("the sentinel", () => got.some((g) => g.id === sentinel.eventId), 10_000);
        expect(got.map((g) => g.sessionId)).toEqual([sessions[0], sessions[0]]);
        const shard1 = await settledConsumer(`${own.stream}_1_of_${S}`, durable ?? "(none)");
        expect(shard1?.delivered.consumer_seq ?? 0, "shard 1 handed nothing over").toBe(0);
        await sub.close();
      } finally {
        for (let k = 0; k < S; k++) await jsm.streams.delete(`${own.stream}_${k}_of_${S}`).catch(() => undefined);
        await jsm.streams.delete(own.parked.stream).catch(() => undefined);
        await own.close();
      }
    }, 60_000);
  }

  it("durable: a close during an update that adds a shard leaves no consumption behind", async () => {
    const sessions = [sessionIn(0), sessionIn(1), sessionIn(2)];
    for (let trial = 0; trial < 6; trial++) {
      const durable = `c${newId().slice(-8)}`;
      const sub = await bus.subscribeEvents({ enduring: "all", sessions: [sessions[0]!] }, { durable, start: "new" });
      const update = sub.updateFilter({ enduring: "all", sessions }).then(() => undefined, (e: unknown) => e as Error);
      if (trial % 3 === 1) await sleep(trial * 3);
      await sub.close();
      const e = await update;
      if (e !== undefined) expect(isJetloopError(e), (e).message).toBe(true);
      await nc.flush();
      for (const s of sessions) await bus.publish(step(s));
      // No shard's consumer of the closed subscription pulls on: its event waits, undelivered.
      for (let k = 0; k < S; k++) {
        const info = await settledConsumer(shardStream(k), durable);
        if (info) expect({ trial, k, delivered: info.num_ack_pending, waiting: info.num_waiting }).toEqual({ trial, k, delivered: 0, waiting: 0 });
      }
    }
  }, 120_000);
});
