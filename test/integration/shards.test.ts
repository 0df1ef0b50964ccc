// A namespace's journal over S = 3 streams on a real nats-server: every session lives in
// the shard the partition hash names (its events on that shard's subjects, in that stream
// only, its journal sequence that stream's sequence); publishing, fencing, dedupe and
// reconcile, replay and a live subscription of one session work as on one stream; a bus
// or a provision assuming another count is refused, never written into the wrong shard.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, fromConnection, newId, type Jetloop, type JetloopEvent } from "../../src/index.js";
import { ShardLayoutError } from "../../src/errors.js";
import { sessionPartition } from "../../src/partition/partition.js";
import { supports } from "../../src/subjects/server-features.js";
import { connectTest, natsServerFlavor, natsServers, natsServerVersion, uniqueNamespace } from "../harness/context.js";
import { rejection } from "../harness/async.js";

const S = 3;
const FENCING = natsServerFlavor() === "external" || supports(natsServerVersion(), "fencing");

let bus: Jetloop;
let nc: NatsConnection;
let jsm: JetStreamManager;
let namespace: string;

const streamOf = (sessionId: string) => `${bus.stream}_${sessionPartition(sessionId, S)}_of_${S}`;
const decided = (sessionId: string, loopId = newId()): JetloopEvent =>
  createEvent("PermissionDecided", { sessionId, loopId, turnId: newId(), stepId: newId(), toolExecutionId: newId(), effect: "approve" });

beforeAll(async () => {
  namespace = uniqueNamespace();
  bus = await connect({ servers: natsServers(), namespace, shards: S });
  await bus.provision();
  nc = await connectTest();
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  for (let k = 0; k < S; k++) await jsm?.streams.delete(`${bus.stream}_${k}_of_${S}`).catch(() => undefined);
  await jsm?.streams.delete(bus.parked.stream).catch(() => undefined);
  await bus?.close();
  await nc?.close();
});

describe("a namespace split in 3 journal shards", () => {
  it("provisions one stream per shard, each on its own subjects, marked with its shard", async () => {
    for (let k = 0; k < S; k++) {
      const info = await jsm.streams.info(`${bus.stream}_${k}_of_${S}`);
      expect(info.config.subjects).toEqual([`${namespace}.journal-${k}-of-${S}.>`]);
      expect(info.config.republish).toMatchObject({ src: `${namespace}.journal-${k}-of-${S}.>`, dest: `${namespace}.feed.>` });
      expect(info.config.metadata).toMatchObject({ jetloop_shards: String(S), jetloop_shard: String(k) });
    }
    await expect(jsm.streams.info(bus.stream)).rejects.toThrow();
  });

  it("a connect without the count reads it from the server", async () => {
    const other = await connect({ servers: natsServers(), namespace });
    try {
      expect(other.shards).toBe(S);
    } finally {
      await other.close();
    }
  });

  it("stores every session in the shard its hash names, with that stream's sequence, in order", async () => {
    // Sessions and the order of their events, generated; each shard's sequence is its own.
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 8 }), async (lengths) => {
        const sessions = lengths.map(() => newId());
        const events = sessions.flatMap((s, i) => Array.from({ length: lengths[i]! }, () => decided(s)));
        const results = await bus.publishAll(events);
        for (const [i, r] of results.entries()) {
          const sessionId = events[i]!.sessionId;
          const k = sessionPartition(sessionId, S);
          expect(r.subject.startsWith(`${namespace}.journal-${k}-of-${S}.${sessionId}.`)).toBe(true);
          const stored = await jsm.streams.getMessage(streamOf(sessionId), { seq: r.journalSeq });
          expect(stored?.subject).toBe(r.subject);
        }
        for (const s of sessions) {
          const seen: number[] = [];
          for await (const d of bus.replay({ enduring: "all", sessions: [s] })) seen.push(d.journalSeq);
          const mine = results.filter((_, i) => events[i]!.sessionId === s).map((r) => r.journalSeq);
          expect(seen).toEqual(mine);
        }
      }),
      { numRuns: 6 },
    );
  });

  it("a resent event is a duplicate of its shard's copy; storedEvents finds each in its shard", async () => {
    const sessions = Array.from({ length: 6 }, () => newId());
    const events = sessions.map((s) => decided(s));
    const first = await bus.publishAll(events);
    const again = await bus.publishAll(events);
    expect(again.map((r) => r.duplicate)).toEqual(events.map(() => true));
    expect(again.map((r) => r.journalSeq)).toEqual(first.map((r) => r.journalSeq));
    const found = await bus.storedEvents(events, { since: new Date(Date.now() - 60_000) });
    for (const [i, e] of events.entries()) expect(found.get(e.eventId)).toEqual({ journalSeq: first[i]!.journalSeq, subject: first[i]!.subject });
  });

  it("fences a session on its shard's sequence (2.11+; refused typed before)", async () => {
    const s = newId();
    if (!FENCING) {
      expect(((await rejection(bus.publish(decided(s), { expectedLastSeq: 0 }))) as { code: string }).code).toBe("SERVER_UNSUPPORTED");
      return;
    }
    const a = await bus.publish(decided(s), { expectedLastSeq: 0 });
    const b = await bus.publish(decided(s), { expectedLastSeq: a.journalSeq });
    expect(b.journalSeq).toBeGreaterThan(a.journalSeq);
    expect(((await rejection(bus.publish(decided(s), { expectedLastSeq: a.journalSeq }))) as { code: string }).code).toBe("PUBLISH_CONFLICT");
  });

  it("a live subscription of one session gets its events from the one feed", async () => {
    const s = newId();
    const loopId = newId();
    const early = await bus.publish(decided(s, loopId));
    const sub = await bus.subscribeEvents({ enduring: "all", sessions: [s] }, { start: "all" });
    const late = await bus.publishAll([decided(s, loopId), decided(s, loopId)]);
    const seqs: number[] = [];
    for await (const d of sub) {
      seqs.push(d.journalSeq);
      if (seqs.length === 3) break;
    }
    await sub.close();
    expect(seqs).toEqual([early.journalSeq, ...late.map((r) => r.journalSeq)]);
  });

  it("a bus assuming another count is refused at connect, or by the server before anything is stored", async () => {
    expect(await rejection(connect({ servers: natsServers(), namespace, shards: 2 }))).toBeInstanceOf(ShardLayoutError);
    // A bus over a connection takes the count it is given: a wrong one addresses no stream.
    for (const shards of [1, 2, 4]) {
      const wrong = fromConnection(nc, { namespace, shards, publishDeadlineMs: 1500, ackTimeoutMs: 200 });
      const e = (await rejection(wrong.publish(decided(newId())))) as { code: string };
      expect(["NOT_PROVISIONED", "PUBLISH_TIMEOUT"]).toContain(e.code);
      await wrong.close();
    }
  });

  it("a provision with another count is refused: changing S is a migration", async () => {
    for (const shards of [1, 2, 5]) {
      const e = (await rejection(fromConnection(nc, { namespace, shards }).provision())) as Error;
      expect(e).toBeInstanceOf(ShardLayoutError);
      expect(e.message).toMatch(/migration/);
    }
    const stillThree = await connect({ servers: natsServers(), namespace });
    expect(stillThree.shards).toBe(S);
    await stillThree.close();
  });
});
