// Forged turn headers (src/subscribe/turn-span.ts), against a real nats-server: the server
// stores `Nats-Batch-Sequence` and `Jetloop-Batch-Size` verbatim on a message published
// outside any batch (no `Nats-Batch-Id`), so such a message names no turn. A "new" feed
// subscription (both feed modes) delivers every event stored after its start whatever
// sequence and size its headers forge (generated: k of n, 2 ≤ k ≤ n ≤ 1,000, spans reaching
// back before the start), once each, in order.
import { headers, type NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, newId, type Jetloop, type JetloopEvent } from "../../src/index.js";
import { encodeEvent } from "../../src/codec/codec.js";
import { allShards, shardStreamName } from "../../src/streams/shards.js";
import { eventSubject } from "../../src/subjects/subjects.js";
import { defaultRegistry } from "../../src/events/catalogue.js";
import { connectTest, natsServers, uniqueNamespace } from "../harness/context.js";

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

/** Publishes `e` outside any batch with forged batch headers; resolves once stored. */
async function forged(e: JetloopEvent, k: number, n: number): Promise<void> {
  const h = headers();
  h.set("Nats-Msg-Id", e.eventId);
  h.set("Nats-Batch-Sequence", String(k));
  h.set("Jetloop-Batch-Size", String(n));
  const subject = eventSubject(bus.namespace, "journal", { ...e, family: defaultRegistry.get(e.type)!.family });
  const ack = (await nc.request(subject, encodeEvent(e), { headers: h, timeout: 5000 })).json<{ seq?: number }>();
  expect(ack.seq).toBeGreaterThan(0);
}

describe("forged turn headers", () => {
  it('a "new" subscription delivers an event stored after its start whose forged headers point back before it', async () => {
    // Enough history that every generated span starts at sequence 1 or later.
    const filler = newId();
    await bus.publishAll(Array.from({ length: 20 }, () => decided(filler)));
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 20 }).chain((k) => fc.record({ k: fc.constant(k), n: fc.integer({ min: k, max: 1000 }), feed: fc.constantFrom("loop" as const, "namespace" as const), count: fc.integer({ min: 1, max: 3 }) })),
        async ({ k, n, feed, count }) => {
          const session = newId();
          const sub = await bus.session(session).subscribeEvents({ enduring: "all" }, { start: "new", feed });
          const events = Array.from({ length: count }, () => decided(session));
          for (const e of events) await forged(e, k, n);
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
});
