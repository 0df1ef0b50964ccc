// Forged turn headers (src/journal/turn-span.ts), against a real nats-server: the server
// stores `Nats-Batch-Sequence` and `Jetloop-Batch-Size` verbatim on a message published
// outside any batch (no `Nats-Batch-Id`), so such a message names no turn. A "new" feed
// subscription (both feed modes) delivers every event stored after its start whatever
// sequence and size its headers forge (generated: k of n, 2 ≤ k ≤ n ≤ 1,000, spans reaching
// back before the start; with and without a forged `Nats-Batch-Id`, which a server before
// 2.12 stores verbatim too), once each, in order.
import { headers, type NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, newId, type Jetloop, type JetloopEvent } from "../../src/index.js";
import { encodeEvent } from "../../src/codec/codec.js";
import { allShards, shardStreamName } from "../../src/streams/shards.js";
import { eventSubject } from "../../src/subjects/subjects.js";
import { defaultRegistry } from "../../src/events/catalogue.js";
import { supports } from "../../src/subjects/server-features.js";
import { connectTest, natsServers, natsServerVersion, uniqueNamespace } from "../harness/context.js";

let nc: NatsConnection;
let bus: Jetloop;

beforeAll(async () => {
  nc = await connectTest();
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace() });
  await bus.provision();
});

afterAll(async () => {
  if (bus) {
    const jsm = await bus.jetstreamManager();
    for (const shard of allShards(bus.shards)) await jsm.streams.delete(shardStreamName(bus.stream, shard)).catch(() => undefined);
    await jsm.streams.delete(bus.parked.stream).catch(() => undefined);
    await bus.close();
  }
  await nc?.close();
});

const decided = (sessionId: string): JetloopEvent =>
  createEvent("PermissionDecided", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), toolExecutionId: newId(), effect: "approve" });

/**
 * Publishes `e` outside any batch with forged batch headers (and a forged batch id, with
 * `commit`); resolves with whether it was stored: a server with atomic batches (2.12+)
 * refuses a batch beginning at sequence k > 1, one before them stores the headers verbatim.
 */
async function forged(e: JetloopEvent, k: number, n: number, id?: string): Promise<boolean> {
  const h = headers();
  h.set("Nats-Msg-Id", e.eventId);
  if (id !== undefined) {
    h.set("Nats-Batch-Id", id);
    h.set("Nats-Batch-Commit", "1");
  }
  h.set("Nats-Batch-Sequence", String(k));
  h.set("Jetloop-Batch-Size", String(n));
  const subject = eventSubject(bus.namespace, "journal", { ...e, family: defaultRegistry.get(e.type)!.family });
  const ack = (await nc.request(subject, encodeEvent(e), { headers: h, timeout: 5000 })).json<{ seq?: number; error?: unknown }>();
  const stored = ack.error === undefined;
  if (id === undefined || stored) expect(ack.seq).toBeGreaterThan(0);
  else expect(supports(natsServerVersion(), "atomicBatch")).toBe(true);
  return stored;
}

describe("forged turn headers", () => {
  it('a "new" subscription delivers an event stored after its start whose forged headers point back before it', async () => {
    // Enough history that every generated span starts at sequence 1 or later.
    const filler = newId();
    await bus.publishAll(Array.from({ length: 20 }, () => decided(filler)));
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 20 }).chain((k) => fc.record({
            k: fc.constant(k),
            n: fc.integer({ min: k, max: 1000 }),
            id: fc.option(fc.constantFrom("forged", "0123456789abcdefghijkl"), { nil: undefined }),
            feed: fc.constantFrom("loop" as const, "namespace" as const),
            count: fc.integer({ min: 1, max: 3 }),
          }),
        ),
        async ({ k, n, id, feed, count }) => {
          const session = newId();
          const sub = await bus.session(session).subscribeEvents({ enduring: "all" }, { start: "new", feed });
          const events: JetloopEvent[] = [];
          for (let i = 0; i < count; i++) {
            const e = decided(session);
            if (await forged(e, k, n, id)) events.push(e);
          }
          // The subscription's end is known: one event more, stored plainly.
          const last = decided(session);
          await bus.publish(last);
          events.push(last);
          const got: string[] = [];
          const timer = setTimeout(() => void sub.close(), 3000);
          for await (const d of sub) if (got.push(d.event.eventId) === events.length) break;
          clearTimeout(timer);
          await sub.close();
          expect(got).toEqual(events.map((e) => e.eventId));
        },
      ),
      { numRuns: 8 },
    );
  }, 120_000);

  if (supports(natsServerVersion(), "atomicBatch"))
    it("a real batch whose Jetloop-Batch-Size is forged larger ends at its commit: a replay or an \"all\" subscription of the namespace reads it at once, not failing for another session's header", async () => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 6, max: 1000 }), fc.constantFrom("replay" as const, "subscribe" as const), async (m, n, how) => {
          const mine = decided(newId());
          await bus.publish(mine);
          // Another session's real batch of m messages, each saying it is of n.
          const hostile = Array.from({ length: m }, () => decided(newId()));
          const batchId = newId().replaceAll("-", "").slice(0, 22);
          for (const [i, e] of hostile.entries()) {
            const h = headers();
            h.set("Nats-Msg-Id", e.eventId);
            h.set("Nats-Batch-Id", batchId);
            h.set("Nats-Batch-Sequence", String(i + 1));
            h.set("Jetloop-Batch-Size", String(n));
            const subject = eventSubject(bus.namespace, "journal", { ...e, family: defaultRegistry.get(e.type)!.family });
            if (i < m - 1) nc.publish(subject, encodeEvent(e), { headers: h });
            else {
              h.set("Nats-Batch-Commit", "1");
              expect((await nc.request(subject, encodeEvent(e), { headers: h, timeout: 5000 })).json<{ count?: number }>().count).toBe(m);
            }
          }
          const began = Date.now();
          const got: string[] = [];
          if (how === "replay") for await (const d of bus.replay({ enduring: "all" })) got.push(d.event.eventId);
          else {
            const sub = await bus.subscribeEvents({ enduring: "all" }, { start: "all" });
            const after = decided(newId());
            await bus.publish(after);
            for await (const d of sub) if (got.push(d.event.eventId) && d.event.eventId === after.eventId) break;
            await sub.close();
            expect(got.at(-1)).toBe(after.eventId);
          }
          expect(Date.now() - began).toBeLessThan(3000);
          expect(got).toEqual(expect.arrayContaining([mine.eventId, ...hostile.map((e) => e.eventId)]));
          expect(new Set(got).size).toBe(got.length);
        }),
        { numRuns: 4 },
      );
    }, 120_000);
});
