// A producer's per-session order across a connection cut, against a real nats-server behind
// a TCP proxy: whatever message the cut falls after, however many events over however many
// sessions, through publishAll or concurrent publish calls (some made while the link is
// down), every event is stored once, each result names the sequence that holds it, and each
// session's events are stored in the order the producer handed them over.
import { DeliverPolicy, jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, fromConnection, newId, PublishOrderError, type Jetloop, type JetloopEvent, type PublishResult } from "../../src/index.js";
import { natsServerVersion, uniqueNamespace } from "../harness/context.js";
import { rejection, sleep, waitFor } from "../harness/async.js";
import { startProxy, type TcpProxy } from "../harness/proxy.js";
import { startServer } from "../harness/server.js";
import { linkUp } from "../../src/connection/link.js";

let server: Awaited<ReturnType<typeof startServer>>;
let proxy: TcpProxy;
let raw: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  server = await startServer();
  const target = new URL(server.url);
  proxy = await startProxy(Number(target.port), target.hostname);
  raw = await natsConnect({ servers: server.url });
  jsm = await jetstreamManager(raw);
});

afterAll(async () => {
  await raw?.close();
  await proxy?.close();
  await server?.close();
});

/** A provisioned bus of its own namespace, connected through the proxy. */
async function busOf(ackTimeoutMs: number, reconnectTimeWait: number): Promise<Jetloop> {
  const bus = await connect({ servers: proxy.url, namespace: uniqueNamespace(), ackTimeoutMs, natsOptions: { reconnectTimeWait } });
  await bus.provision();
  return bus;
}

async function drop(bus: Jetloop): Promise<void> {
  await bus.close();
  await jsm.streams.delete(bus.stream).catch(() => undefined);
  await jsm.streams.delete(bus.parked.stream).catch(() => undefined);
}

const decided = (sessionId: string, loopId = newId()): JetloopEvent =>
  createEvent("PermissionDecided", { sessionId, loopId, turnId: newId(), stepId: newId(), toolExecutionId: newId(), effect: "approve" });

/** Event id → every stream sequence holding it (headers only). */
async function stored(stream: string): Promise<Map<string, number[]>> {
  const out = new Map<string, number[]>();
  const pending = (await jsm.streams.info(stream)).state.messages;
  if (pending === 0) return out;
  const consumer = await jetstream(raw).consumers.get(stream, { deliver_policy: DeliverPolicy.All, headers_only: true });
  const messages = await consumer.consume();
  let n = 0;
  for await (const msg of messages) {
    const id = msg.headers?.get("Nats-Msg-Id") ?? "";
    out.set(id, [...(out.get(id) ?? []), msg.seq]);
    if (++n === pending) break;
  }
  await messages.close();
  return out;
}

/**
 * The rules, over `events` in the order the producer handed them over: each result is its
 * event's, each event is stored exactly once at the sequence its result names, and each
 * session's sequences rise in that order.
 */
function checkStored(events: readonly JetloopEvent[], results: readonly PublishResult[], journal: Map<string, number[]>): void {
  expect(results.map((r) => r.eventId)).toEqual(events.map((e) => e.eventId));
  expect([...journal.values()].filter((seqs) => seqs.length > 1), "nothing stored twice").toEqual([]);
  const last = new Map<string, number>();
  events.forEach((e, i) => {
    expect(journal.get(e.eventId), `event ${i} stored once, where its result says`).toEqual([results[i]!.journalSeq]);
    const before = last.get(e.sessionId) ?? 0;
    expect(results[i]!.journalSeq, `session order at event ${i}`).toBeGreaterThan(before);
    last.set(e.sessionId, results[i]!.journalSeq);
  });
  expect(journal.size).toBe(events.length);
}

/** Cuts every connection through the proxy once the server has routed the k-th journal message of `bus`. */
async function cutAt(bus: Jetloop, k: number): Promise<{ seen: () => number; stop: () => void }> {
  let seen = 0;
  const sub = raw.subscribe(`${bus.namespace}.journal.>`, {
    callback: () => {
      if (++seen === k) proxy.cut();
    },
  });
  await raw.flush();
  return { seen: () => seen, stop: () => sub.unsubscribe() };
}

/**
 * `publish` called once per event in the events' order, `chunk` calls at a time with a
 * macrotask between chunks: calls keep coming while the link is down and after it is back.
 */
async function concurrentPublishes(bus: Jetloop, events: readonly JetloopEvent[], chunk: number): Promise<PublishResult[]> {
  const calls: Promise<PublishResult>[] = [];
  for (let i = 0; i < events.length; i++) {
    calls.push(bus.publish(events[i]!));
    if ((i + 1) % chunk === 0) await sleep(1);
  }
  return Promise.all(calls);
}

describe(`a producer's per-session order across a connection cut (nats-server ${natsServerVersion()})`, () => {
  it("the reported break: 500 events over 3 sessions in one publishAll, cut at the 100th message the server saw", async () => {
    const bus = await busOf(300, 2000);
    try {
      const sessions = [newId(), newId(), newId()];
      const events = Array.from({ length: 500 }, (_, i) => decided(sessions[i % 3]!));
      const cut = await cutAt(bus, 100);
      const results = await bus.publishAll(events);
      cut.stop();
      expect(cut.seen()).toBeGreaterThanOrEqual(100);
      checkStored(events, results, await stored(bus.stream));
    } finally {
      await drop(bus);
    }
  });

  it("publish calls that keep coming while the link is down and after it is back", async () => {
    const bus = await busOf(1000, 400);
    try {
      const sessions = [newId(), newId()];
      const events = Array.from({ length: 300 }, (_, i) => decided(sessions[i % 2]!));
      const cut = await cutAt(bus, 20);
      const results = await concurrentPublishes(bus, events, 2);
      cut.stop();
      checkStored(events, results, await stored(bus.stream));
    } finally {
      await drop(bus);
    }
  });

  it("a property over cut points, event counts, session mixes, ack timeouts, reconnect waits, publishAll and concurrent publish calls", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 300 }).chain((n) =>
          fc.record({
            n: fc.constant(n),
            // The k-th journal message the server routes, over the whole range of first attempts.
            k: fc.integer({ min: 1, max: n }),
            sessions: fc.integer({ min: 1, max: 5 }),
            // Which session each event belongs to: round robin, runs, or any mix.
            owner: fc.array(fc.nat(), { minLength: n, maxLength: n }),
            via: fc.constantFrom("publishAll" as const, "publish" as const),
            chunk: fc.integer({ min: 1, max: 64 }),
            ackTimeoutMs: fc.constantFrom(150, 300, 1000),
            reconnectTimeWait: fc.constantFrom(20, 400, 2000),
          }),
        ),
        async ({ n, k, sessions, owner, via, chunk, ackTimeoutMs, reconnectTimeWait }) => {
          const bus = await busOf(ackTimeoutMs, reconnectTimeWait);
          try {
            const ids = Array.from({ length: sessions }, () => newId());
            const events = Array.from({ length: n }, (_, i) => decided(ids[owner[i]! % sessions]!));
            const cut = await cutAt(bus, k);
            const results = via === "publishAll" ? await bus.publishAll(events) : await concurrentPublishes(bus, events, chunk);
            cut.stop();
            checkStored(events, results, await stored(bus.stream));
          } finally {
            await drop(bus);
          }
        },
      ),
      {
        numRuns: 10,
        // Each run costs up to seconds (a reconnect, ack timeouts): the first counterexample is reported as found.
        endOnFailure: true,
        // Beside the generated runs, one where calls keep coming through a long reconnect wait.
        examples: [[{ n: 200, k: 7, sessions: 3, owner: Array.from({ length: 200 }, (_, i) => i), via: "publish", chunk: 3, ackTimeoutMs: 300, reconnectTimeWait: 400 }]],
      },
    );
  }, 180_000);

  it("an ack that does not come while the link stays up (acks held in the proxy): the session is resent whole, in order, nothing stored twice", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 200 }).chain((n) => fc.tuple(fc.constant(n), fc.integer({ min: 1, max: n }), fc.integer({ min: 1, max: 4 }))), async ([n, k, sessions]) => {
        const bus = await busOf(150, 2000);
        try {
          const ids = Array.from({ length: sessions }, () => newId());
          const events = Array.from({ length: n }, (_, i) => decided(ids[i % sessions]!));
          let seen = 0;
          const sub = raw.subscribe(`${bus.namespace}.journal.>`, { callback: () => void (++seen === k && proxy.pause()) });
          await raw.flush();
          const publishing = bus.publishAll(events);
          await waitFor("the pause", () => seen >= k, 10_000);
          await sleep(400);
          proxy.resume();
          const results = await publishing;
          sub.unsubscribe();
          checkStored(events, results, await stored(bus.stream));
        } finally {
          proxy.resume();
          await drop(bus);
        }
      }),
      { numRuns: 5, endOnFailure: true },
    );
  }, 120_000);

  it("where nothing could keep the order (an earlier append had no stream, a later one was stored), the later one is refused with PublishOrderError naming both; what comes after waits behind the earlier one", async () => {
    // A bus over a connection of the test's own: a flush on it proves the refusal was read.
    const own = await natsConnect({ servers: server.url });
    const bus = fromConnection(own, { namespace: uniqueNamespace() });
    await bus.provision();
    const { config } = await jsm.streams.info(bus.stream);
    try {
      const session = newId();
      const [elsewhere, here] = [newId(), newId()];
      // For a while the stream captures only one loop of the session: the other's appends find no stream (503) and are retried.
      const { republish: _republish, ...narrow } = config;
      await jsm.streams.update(bus.stream, { ...narrow, subjects: [`${bus.namespace}.journal.${session}.${here}.>`] });
      const first = decided(session, elsewhere);
      const second = decided(session, here);
      const early = bus.publish(first);
      const late = bus.publish(second);
      await waitFor("the later append stored", async () => (await jsm.streams.info(bus.stream)).state.messages === 1, 10_000);
      await own.flush();
      // Published now, after the earlier one was refused: it is held until that one is resent.
      const third = decided(session, here);
      const after = bus.publish(third);
      after.catch(() => undefined); // awaited below; a failure before then is the test's, not unhandled
      await sleep(100);
      expect((await jsm.streams.info(bus.stream)).state.messages).toBe(1);
      await jsm.streams.update(bus.stream, config);
      const stored1 = await early;
      const err = await rejection(late);
      expect(err).toBeInstanceOf(PublishOrderError);
      expect(err).toMatchObject({ code: "PUBLISH_ORDER", sessionId: session, eventId: second.eventId, journalSeq: 1, earlierEventId: first.eventId, earlierJournalSeq: stored1.journalSeq });
      expect((await after).journalSeq).toBeGreaterThan(stored1.journalSeq);
      const journal = await stored(bus.stream);
      expect([first, second, third].map((e) => journal.get(e.eventId))).toEqual([[stored1.journalSeq], [1], [(await after).journalSeq]]);
    } finally {
      await drop(bus);
      await own.close();
    }
  });

  it("appends held while the link is down fail with ConnectionClosedError as soon as their connection is closed, not at their deadline", async () => {
    const own = await natsConnect({ servers: proxy.url, reconnectTimeWait: 50, maxReconnectAttempts: -1 });
    const bus = fromConnection(own, { namespace: uniqueNamespace() });
    try {
      await bus.provision();
      proxy.down();
      await waitFor("the link down", () => linkUp(own) === false, 5_000, 10);
      const held = bus.publish(decided(newId()));
      held.catch(() => undefined); // awaited below
      await sleep(50);
      const t0 = Date.now();
      await own.close();
      expect(await rejection(held)).toMatchObject({ code: "CONNECTION_CLOSED" });
      expect(Date.now() - t0).toBeLessThan(2_000);
    } finally {
      proxy.up();
      await bus.close();
      await jsm.streams.delete(bus.stream).catch(() => undefined);
      await jsm.streams.delete(bus.parked.stream).catch(() => undefined);
    }
  });
});
