// An adversary's attack on "a session's appends keep their call order across connection cuts",
// from the rules rather than examples, against a real nats-server behind a proxy that cuts the
// link at an exact publish (harness/proxy.ts, cutEvery). For every generated run: per session
// the stored order is the call order, or the call that could not keep it rejects with
// PublishOrderError naming where both are stored; every call settles once, resolved with the
// sequence its event is stored at, or rejected typed (stored only where the error says it may
// be); nothing is stored twice; no lane is left once all is settled, and a later append of
// every session goes through. A call of an event stored before it, with no append of its
// session refused unstored at or ahead of it, answers duplicate at that copy's place.
import { DeliverPolicy, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busWriters } from "../../src/bus.js";
import { connect as natsConnect } from "@nats-io/transport-node";
import { connect, ConnectionClosedError, createEvent, fromConnection, type Jetloop, JetloopError, type JetloopEvent, newId, PublishOrderError, type PublishResult } from "../../src/index.js";
import type { JournalWriter } from "../../src/publish/journal-writer.js";
import { settledWithin, sleep, waitFor, within } from "../harness/async.js";
import { uniqueNamespace } from "../harness/namespace.js";
import { startProxy, type TcpProxy } from "../harness/proxy.js";
import { type NatsServer, startServer } from "../harness/server.js";
import { supports } from "../../src/subjects/server-features.js";
import { natsServerFlavor, natsServerVersion } from "../harness/context.js";

const ACK_TIMEOUT_MS = 250;
const DEADLINE_MS = 10_000;
// What the server under test can do, known before the tests are collected: a case that needs
// more is reported skipped (with the reason in its name), not passed without running.
const FENCING = natsServerFlavor() === "external" || supports(natsServerVersion(), "fencing");
const ATOMIC = natsServerFlavor() === "external" || supports(natsServerVersion(), "atomicBatch");

let server: NatsServer;
let proxy: TcpProxy;
let observer: Jetloop;
let jsm: JetStreamManager;
let namespace: string;

beforeAll(async () => {
  server = await startServer();
  proxy = await startProxy(server.port, "127.0.0.1", { countPublishes: true });
  namespace = uniqueNamespace();
  observer = await connect({ servers: [server.url], namespace });
  await observer.provision();
  jsm = await jetstreamManager(observer.nc);
}, 60_000);
afterAll(async () => {
  await observer?.close();
  await proxy?.close();
  await server?.close();
});

function cutBus(maxInFlight = 1024): Promise<Jetloop> {
  return connect({
    servers: [proxy.url],
    namespace,
    ackTimeoutMs: ACK_TIMEOUT_MS,
    publishDeadlineMs: DEADLINE_MS,
    maxInFlight,
    natsOptions: { reconnectTimeWait: 10, reconnectJitter: 0 },
  });
}

function writerOf(bus: Jetloop): JournalWriter {
  return busWriters(bus)[0]!;
}

function stepDone(sessionId: string, loopId = newId()) {
  return createEvent("StepDone", { sessionId, loopId, turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: "x" }] }] });
}

interface Call {
  readonly sessionId: string;
  readonly eventId: string;
}

interface Outcome {
  settles: number;
  seq?: number;
  duplicate?: boolean;
  error?: unknown;
}

/** Where each event id of this run is stored: every sequence holding it (more than one is a break). */
async function storedSince(fromSeq: number): Promise<Map<string, number[]>> {
  const stored = new Map<string, number[]>();
  const last = await lastSeq();
  if (last <= fromSeq) return stored;
  const consumer = await jetstream(observer.nc).consumers.get(observer.stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: fromSeq + 1 });
  const messages = await consumer.consume();
  for await (const m of messages) {
    const id = m.headers?.get("Nats-Msg-Id");
    if (id) stored.set(id, [...(stored.get(id) ?? []), m.seq]);
    if (m.seq >= last) break;
  }
  await messages.close();
  return stored;
}

/** The stream's last sequence, asked again while the observer comes back from a restart. */
function lastSeq(): Promise<number> {
  return waitFor("the stream's last sequence", async () => (await jsm.streams.info(observer.stream)).state.last_seq, 30_000, 100);
}

/** Codes whose error says the event may be stored. */
const MAY_BE_STORED = new Set(["PUBLISH_TIMEOUT"]);

/**
 * Every way the run broke the rules, in words (empty: none). A call of an event in `before`
 * (stored before the run) answers duplicate at that place or rejects PUBLISH_ORDER naming
 * it; its place is outside the run's order.
 */
function violations(calls: readonly Call[], outcomes: readonly Outcome[], stored: Map<string, number[]>, before: ReadonlySet<string> = new Set()): string[] {
  const out: string[] = [];
  for (const [id, seqs] of stored) if (seqs.length > 1) out.push(`event ${id} stored ${seqs.length} times (${seqs.join(", ")})`);
  const ordered = new Map<string, { call: number; seq: number }[]>();
  calls.forEach((c, i) => {
    const o = outcomes[i]!;
    const seq = stored.get(c.eventId)?.[0];
    if (o.settles !== 1) out.push(`call ${i} settled ${o.settles} times`);
    if (o.error === undefined) {
      if (seq !== o.seq) out.push(`call ${i} resolved at ${o.seq} but is stored at ${seq}`);
      if (before.has(c.eventId) && o.duplicate !== true) out.push(`call ${i} of an event stored before the run resolved not as a duplicate`);
    } else if (o.error instanceof PublishOrderError) {
      if (seq !== o.error.journalSeq) out.push(`call ${i}: PUBLISH_ORDER says stored at ${o.error.journalSeq}, is at ${seq}`);
      if (!(o.error.earlierJournalSeq > o.error.journalSeq)) out.push(`call ${i}: PUBLISH_ORDER's earlier event is not stored after it`);
      const earlierId = o.error.earlierEventId;
      if (calls.findIndex((e) => e.eventId === earlierId) > i) out.push(`call ${i}: PUBLISH_ORDER names a later call`);
      return;
    } else if (!(o.error instanceof JetloopError)) {
      out.push(`call ${i} rejected untyped: ${o.error instanceof Error ? o.error.message : JSON.stringify(o.error)}`);
    } else if (seq !== undefined && !MAY_BE_STORED.has(o.error.code)) {
      out.push(`call ${i} rejected ${o.error.code} (${o.error.message}) yet stored at ${seq}`);
    }
    if (seq !== undefined && !before.has(c.eventId)) ordered.set(c.sessionId, [...(ordered.get(c.sessionId) ?? []), { call: i, seq }]);
  });
  for (const [session, list] of ordered) {
    const bySeq = [...list].sort((a, b) => a.seq - b.seq);
    for (let j = 1; j < bySeq.length; j++) {
      if (bySeq[j]!.call < bySeq[j - 1]!.call) out.push(`session ${session}: call ${bySeq[j]!.call} stored at ${bySeq[j]!.seq} after call ${bySeq[j - 1]!.call} at ${bySeq[j - 1]!.seq}`);
    }
  }
  return out;
}

/** Publishes `sessions[i]`'s events in call order (one by one, or as one publishAll), recording how each settled. */
function fire(bus: Jetloop, order: readonly number[], sessionIds: readonly string[], mode: "each" | "all", paceMs = 0): { calls: Call[]; outcomes: Outcome[]; done: Promise<unknown> } {
  return fireEvents(
    bus,
    order.map((s) => stepDone(sessionIds[s]!)),
    mode,
    paceMs,
  );
}

/** Publishes `events` in order (one by one, or as one publishAll), recording how each settled. */
function fireEvents(bus: Jetloop, events: readonly JetloopEvent[], mode: "each" | "all", paceMs = 0): { calls: Call[]; outcomes: Outcome[]; done: Promise<unknown> } {
  const calls = events.map((e) => ({ sessionId: e.sessionId, eventId: e.eventId }));
  const outcomes: Outcome[] = calls.map(() => ({ settles: 0 }));
  const record = (i: number, p: Promise<{ journalSeq: number; duplicate: boolean }>) =>
    p.then(
      (r) => {
        outcomes[i]!.settles++;
        outcomes[i]!.seq = r.journalSeq;
        outcomes[i]!.duplicate = r.duplicate;
      },
      (e: unknown) => {
        outcomes[i]!.settles++;
        outcomes[i]!.error = e;
      },
    );
  if (mode === "each" && paceMs > 0) {
    // Paced: a call every paceMs, in order, so appends are in flight all through a fault.
    const paced = (async () => {
      const all: Promise<void>[] = [];
      for (const [i, e] of events.entries()) {
        all.push(record(i, bus.publish(e)));
        if (i % 10 === 9) await sleep(paceMs);
      }
      await Promise.all(all);
    })();
    return { calls, outcomes, done: paced };
  }
  if (mode === "each") return { calls, outcomes, done: Promise.all(events.map((e, i) => record(i, bus.publish(e)))) };
  // publishAll rejects with the first failure: each event's own outcome is read from publish too.
  const all = bus.publishAll(events).then(
    (rs) => rs.forEach((r, i) => Object.assign(outcomes[i]!, { settles: outcomes[i]!.settles + 1, seq: r.journalSeq, duplicate: r.duplicate })),
    () => Promise.all(events.map((e, i) => record(i, bus.publish(e)))),
  );
  return { calls, outcomes, done: all };
}

/** After a run: no lane left, and one more append of every session goes through, after all of it. */
async function laneReleased(bus: Jetloop, sessionIds: readonly string[], stored: Map<string, number[]>): Promise<void> {
  expect(writerOf(bus).lanes).toBe(0);
  const top = Math.max(0, ...[...stored.values()].flat());
  const after = await settledWithin("appends after the run", Promise.all(sessionIds.map((s) => bus.publish(stepDone(s)))), DEADLINE_MS);
  for (const r of after) expect(r.journalSeq).toBeGreaterThan(top);
}

describe("a session's call order across cuts at the k-th publish", () => {
  it("holds, or says PUBLISH_ORDER, for every generated cut schedule and interleaving of sessions", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          k: fc.integer({ min: 1, max: 40 }),
          partial: fc.boolean(),
          times: fc.integer({ min: 1, max: 4 }),
          sessions: fc.integer({ min: 1, max: 4 }),
          order: fc.array(fc.nat(3), { minLength: 10, maxLength: 80 }),
          mode: fc.constantFrom("each" as const, "all" as const),
          maxInFlight: fc.constantFrom(4, 1024),
        }),
        async ({ k, partial, times, sessions, order, mode, maxInFlight }) => {
          const sessionIds = Array.from({ length: sessions }, () => newId());
          const bus = await cutBus(maxInFlight);
          try {
            const from = await lastSeq();
            proxy.cutEvery(k, { partial, times });
            const run = fire(
              bus,
              order.map((s) => s % sessions),
              sessionIds,
              mode,
            );
            await settledWithin("every call", run.done, DEADLINE_MS + 5_000);
            proxy.cutEvery(0);
            const stored = await storedSince(from);
            expect(violations(run.calls, run.outcomes, stored)).toEqual([]);
            await laneReleased(bus, sessionIds, stored);
          } finally {
            proxy.cutEvery(0);
            await bus.close();
          }
        },
      ),
      { numRuns: 25 },
    );
  }, 300_000);
});

/**
 * Makes the server refuse, unstored, every append of loop `blocked` (no stream captures its
 * subjects: "no responders", as in a leader election, while the stream exists); the
 * returned function restores the stream.
 */
async function refuseLoop(blocked: string, open: readonly string[]): Promise<() => Promise<void>> {
  const info = await jsm.streams.info(observer.stream);
  const original = info.config;
  const root = `${namespace}.journal`;
  await jsm.streams.update(observer.stream, { ...original, subjects: open.map((l) => `${root}.*.${l}.>`), republish: undefined });
  void blocked;
  return async () => {
    await jsm.streams.update(observer.stream, original);
  };
}

describe("a cautious lane (an append refused unstored)", () => {
  it("an append of the session pipelined behind a refused one is stored first: the later call says PUBLISH_ORDER, the earlier is stored after it", async () => {
    const bus = await cutBus();
    const session = newId();
    const [blocked, open] = [newId(), newId()];
    const restore = await refuseLoop(blocked, [open]);
    try {
      const from = await lastSeq();
      const events = [stepDone(session, blocked), stepDone(session, open), stepDone(session, blocked), stepDone(session, open)];
      const run = events.map((e) => bus.publish(e).then((r) => r, (e: unknown) => e));
      await sleep(300);
      proxy.cut(); // a cut while the lane is cautious
      await sleep(200);
      await restore();
      const outcomes = await settledWithin("every call", Promise.all(run), DEADLINE_MS + 5_000);
      const stored = await storedSince(from);
      const calls = events.map((e) => ({ sessionId: e.sessionId, eventId: e.eventId }));
      expect(violations(calls, outcomes.map((o) => (o instanceof Error ? { settles: 1, error: o } : { settles: 1, seq: (o as { journalSeq: number }).journalSeq })), stored)).toEqual([]);
      expect(outcomes[1]).toBeInstanceOf(PublishOrderError);
      await laneReleased(bus, [session], stored);
    } finally {
      await restore().catch(() => undefined);
      await bus.close();
    }
  }, 60_000);

  it("bus.close() while a cautious lane's probe is out sends nothing more of the lane: every call settles CONNECTION_CLOSED and none of them is stored after", async () => {
    const nc = await natsConnect({ servers: [proxy.url], reconnectTimeWait: 10 });
    const bus = fromConnection(nc, { namespace, ackTimeoutMs: 2_000, publishDeadlineMs: DEADLINE_MS });
    const session = newId();
    const [blocked, open] = [newId(), newId()];
    const restore = await refuseLoop(blocked, [open]);
    let lookups: Awaited<ReturnType<typeof firstLookup>> | undefined;
    try {
      await bus.publish(stepDone(newId(), open)); // warm: the next append goes out at once
      const from = await lastSeq();
      lookups = await firstLookup(); // after lastSeq's own stream info
      const first = bus.publish(stepDone(session, blocked)).then((r) => r, (e: unknown) => e);
      // Its first refusal makes the lane cautious once the writer's stream lookup is answered
      // (a loopback round trip); the probe goes 100 ms after that, its answer held.
      await settledWithin("the refusal's lookup", lookups.seen, 5_000);
      await sleep(40);
      proxy.pause();
      await sleep(100);
      const later = [stepDone(session, open), stepDone(session, open)];
      const held = later.map((e) => bus.publish(e).then((r) => r, (e: unknown) => e));
      await sleep(50);
      await bus.close();
      const outcomes = await settledWithin("every call", Promise.all([first, ...held]), 5_000);
      for (const o of outcomes) expect((o as JetloopError).code).toBe("CONNECTION_CLOSED");
      // The two behind the probe never went out.
      expect(outcomes.map((o) => (o as { mayBeStored?: boolean }).mayBeStored)).toEqual([true, false, false]);
      proxy.resume();
      await restore();
      await sleep(300);
      const stored = await storedSince(from);
      for (const e of later) expect(stored.has(e.eventId)).toBe(false);
    } finally {
      lookups?.stop();
      proxy.resume();
      await restore().catch(() => undefined);
      await bus.close();
      await nc.close();
    }
  }, 60_000);
});

/** Fires `order` (session indexes) on a fresh bus, faults it with `fault`, and checks every rule. */
async function attack(order: readonly number[], sessions: number, fault: () => Promise<void>, maxInFlight = 1024, paceMs = 0): Promise<void> {
  const sessionIds = Array.from({ length: sessions }, () => newId());
  const bus = await cutBus(maxInFlight);
  try {
    const from = await lastSeq();
    const run = fire(
      bus,
      order.map((s) => s % sessions),
      sessionIds,
      "each",
      paceMs,
    );
    await fault();
    await settledWithin("every call", run.done, DEADLINE_MS + 10_000);
    proxy.cutEvery(0);
    const stored = await storedSince(from);
    expect(violations(run.calls, run.outcomes, stored)).toEqual([]);
    await laneReleased(bus, sessionIds, stored);
  } finally {
    proxy.cutEvery(0);
    await bus.close();
  }
}

describe("bus.close() with appends unacknowledged", () => {
  it("every call settles CONNECTION_CLOSED saying whether it may be stored: never sent (held while the link is down) is not, sent without its ack may be", async () => {
    const nc = await natsConnect({ servers: [proxy.url], reconnectTimeWait: 10 });
    const bus = fromConnection(nc, { namespace, ackTimeoutMs: 2_000, publishDeadlineMs: DEADLINE_MS });
    const session = newId();
    try {
      const from = await lastSeq();
      // Sent, its ack held by the proxy.
      proxy.pause();
      const sentEvents = [stepDone(session), stepDone(session)];
      const sent = sentEvents.map((e) => bus.publish(e).then((r) => r, (e: unknown) => e));
      await sleep(100);
      // Held: the link is down (the lane is held from the cut on, these never go out).
      proxy.down();
      await sleep(50); // the client has seen the cut
      const heldEvents = [stepDone(session), stepDone(session)];
      const held = heldEvents.map((e) => bus.publish(e).then((r) => r, (e: unknown) => e));
      await sleep(50);
      await bus.close();
      const outcomes = (await settledWithin("every call", Promise.all([...sent, ...held]), 5_000)) as ConnectionClosedError[];
      for (const o of outcomes) expect(o).toBeInstanceOf(ConnectionClosedError);
      expect(outcomes.map((o) => (o as { mayBeStored?: boolean }).mayBeStored)).toEqual([true, true, false, false]);
      for (const o of outcomes.slice(0, 2)) expect(o.message).toMatch(/may or may not be stored/);
      for (const o of outcomes.slice(2)) expect(o.message).toMatch(/never sent: it is not stored/);
      proxy.up();
      proxy.resume();
      await sleep(300);
      const stored = await storedSince(from);
      for (const e of heldEvents) expect(stored.has(e.eventId)).toBe(false);
    } finally {
      proxy.up();
      proxy.resume();
      await bus.close();
      await nc.close();
    }
  }, 60_000);
});

describe("other faults", () => {
  it("a server restart (graceful, and a SIGKILL) in the middle of many sessions' appends", async () => {
    // Ten calls every 5 ms for about 1.5 s: appends in flight before, during and after the restart.
    const order = Array.from({ length: 3_000 }, (_, i) => (i * 7) % 5);
    await attack(order, 5, async () => {
      await sleep(200);
      await server.restart();
    }, 1024, 5);
    await attack(order, 5, async () => {
      await sleep(200);
      await server.kill();
      await server.restart();
    }, 1024, 5);
  }, 120_000);

  it("a cut at every k-th publish during repeated resends of 10,000 sessions: every lane released", async () => {
    const order = Array.from({ length: 10_000 }, (_, i) => i);
    await attack(order, 10_000, async () => {
      proxy.cutEvery(2_000, { times: 3 });
      await Promise.resolve();
    }, 512);
  }, 120_000);

  // nats-server 2.11+: on 2.10 a fence is SERVER_UNSUPPORTED before anything is sent.
  it.skipIf(!FENCING)("fenced appends across cuts (nats-server 2.11+: fencing): each resolves at its fence, none refused as a conflict with itself", async () => {
    expect(observer.supports("fencing")).toBe(true);
    const bus = await cutBus();
    const session = newId();
    try {
      let last = 0;
      proxy.cutEvery(3, { times: 6 });
      for (let i = 0; i < 12; i++) {
        // A fenced append, with two unfenced ones of the session pipelined behind it.
        const fenced = bus.publish(stepDone(session), { expectedLastSeq: last });
        const behind = [bus.publish(stepDone(session)), bus.publish(stepDone(session))];
        const [a, b, c] = await settledWithin("a fenced append and two behind it", Promise.all([fenced, ...behind]), DEADLINE_MS + 5_000);
        expect(a.journalSeq).toBeGreaterThan(last);
        expect(b!.journalSeq).toBeGreaterThan(a.journalSeq);
        expect(c!.journalSeq).toBeGreaterThan(b!.journalSeq);
        last = c!.journalSeq;
      }
      proxy.cutEvery(0);
      expect(writerOf(bus).lanes).toBe(0);
    } finally {
      proxy.cutEvery(0);
      await bus.close();
    }
  }, 120_000);

  it("an event refused by validation in the middle of a session's appends: refused typed, the rest stored in order across cuts", async () => {
    const bus = await cutBus();
    const session = newId();
    try {
      const from = await lastSeq();
      const events = Array.from({ length: 30 }, () => stepDone(session));
      const bad = { ...events[10]!, turnId: "not-a-uuid" };
      const calls = events.map((e) => ({ sessionId: e.sessionId, eventId: e.eventId }));
      proxy.cutEvery(4, { times: 3 });
      const outcomes = await settledWithin(
        "every call",
        Promise.all(events.map((e, i) => bus.publish(i === 10 ? bad : e).then((r): Outcome => ({ settles: 1, seq: r.journalSeq }), (error: unknown): Outcome => ({ settles: 1, error })))),
        DEADLINE_MS + 5_000,
      );
      proxy.cutEvery(0);
      expect((outcomes[10]!.error as JetloopError).code).toBe("EVENT_INVALID");
      const stored = await storedSince(from);
      expect(stored.has(events[10]!.eventId)).toBe(false);
      expect(violations(calls, outcomes, stored)).toEqual([]);
      await laneReleased(bus, [session], stored);
    } finally {
      proxy.cutEvery(0);
      await bus.close();
    }
  }, 60_000);

  it.skipIf(!ATOMIC)("atomic turns and plain appends of other sessions across cuts (nats-server 2.12+: atomic batches): each turn whole or not at all, every call settled typed, nothing stored twice", async () => {
    expect(observer.supports("atomicBatch")).toBe(true);
    const bus = await cutBus();
    try {
      const from = await lastSeq();
      const turns = Array.from({ length: 6 }, () => {
        const s = newId();
        return Array.from({ length: 5 }, () => stepDone(s));
      });
      const plainSession = newId();
      const plain = Array.from({ length: 40 }, () => stepDone(plainSession));
      proxy.cutEvery(7, { times: 4, partial: true });
      const turnOutcomes = turns.map((t) => bus.publishAll(t, { atomic: true }).then((r) => r, (e: unknown) => e));
      const run = fire(bus, plain.map(() => 0), [plainSession], "each");
      const settled = await settledWithin("every turn", Promise.all(turnOutcomes), DEADLINE_MS + 10_000);
      await settledWithin("every append", run.done, DEADLINE_MS + 10_000);
      proxy.cutEvery(0);
      const stored = await storedSince(from);
      for (const [id, seqs] of stored) expect(seqs.length, `event ${id} stored once`).toBe(1);
      settled.forEach((o, i) => {
        const held = turns[i]!.filter((e) => stored.has(e.eventId)).length;
        if (o instanceof Error) {
          expect(o).toBeInstanceOf(JetloopError);
          expect([0, 5]).toContain(held);
        } else {
          expect(held).toBe(5);
          expect((o as { journalSeq: number }[]).map((r) => r.journalSeq)).toEqual(turns[i]!.map((e) => stored.get(e.eventId)![0]));
        }
      });
    } finally {
      proxy.cutEvery(0);
      await bus.close();
    }
  }, 120_000);
});

describe("one event published twice in a session's lane", () => {
  it("the second call answers duplicate at the first's place, across a cut as without one", async () => {
    const bus = await cutBus();
    const session = newId();
    try {
      await bus.publish(stepDone(newId())); // warm: the ack subscription is on the server
      const a = stepDone(session);
      const b = stepDone(session);
      proxy.cutEvery(1, { times: 1 }); // the first publish goes through, the cut takes the rest
      const outcomes = await settledWithin(
        "every call",
        Promise.all([bus.publish(stepDone(newId())), bus.publish(a), bus.publish(b), bus.publish(a)].map((p) => p.then((r) => r, (e: unknown) => e))),
        DEADLINE_MS + 5_000,
      );
      proxy.cutEvery(0);
      expect(proxy.cuts).toBeGreaterThan(0);
      const [, ra, rb, again] = outcomes as { journalSeq: number; duplicate: boolean }[];
      expect(rb!.journalSeq).toBeGreaterThan(ra!.journalSeq);
      expect(again).toMatchObject({ journalSeq: ra!.journalSeq, duplicate: true });
    } finally {
      proxy.cutEvery(0);
      await bus.close();
    }
  }, 60_000);
});

/**
 * Narrows the stream to loop `open`'s subjects (an append of any other loop finds no stream:
 * refused unstored, as in a leader election) and, with `holdAcks`, stores without answering
 * (no_ack): an append is stored but its ack never comes. `answer()` turns the acks back on,
 * the subjects still narrow; `restore()` restores the stream. no_ack is set explicitly both
 * ways: an update that omits it keeps the stream's.
 */
async function narrowStream(open: string, holdAcks: boolean): Promise<{ answer: () => Promise<void>; restore: () => Promise<void> }> {
  const { config } = await jsm.streams.info(observer.stream);
  const narrow = { ...config, subjects: [`${namespace}.journal.*.${open}.>`], republish: undefined };
  await jsm.streams.update(observer.stream, { ...narrow, no_ack: holdAcks });
  return {
    answer: async () => void (await jsm.streams.update(observer.stream, { ...narrow, no_ack: false })),
    restore: async () => void (await jsm.streams.update(observer.stream, { ...config, no_ack: false })),
  };
}

/**
 * The writer looks the stream up on an append's first refusal-unstored: once the server has
 * the lookup, the writer has counted that refusal (`seen`).
 */
async function firstLookup(): Promise<{ seen: Promise<void>; stop: () => void }> {
  let lookedUp = () => {};
  const seen = new Promise<void>((resolve) => (lookedUp = resolve));
  const sub = observer.nc.subscribe(`$JS.API.STREAM.INFO.${observer.stream}`, { max: 1, callback: () => lookedUp() });
  await observer.nc.flush();
  return { seen, stop: () => sub.unsubscribe() };
}

describe("a duplicate of a copy stored before the call, a later append of its session refused meanwhile", () => {
  it("answers duplicate at the earlier copy's place: a refusal behind an append cannot reorder it", async () => {
    const bus = await cutBus();
    const session = newId();
    const [blocked, open] = [newId(), newId()];
    const again = stepDone(session, open);
    const earlier = await bus.publish(again);
    const { answer, restore } = await narrowStream(open, true);
    const lookups = await firstLookup();
    try {
      // Ahead: stored above `again`'s copy, its ack held; then `again` (a duplicate, no ack
      // either); behind it an append refused. Each is resent until its ack comes.
      const ahead = stepDone(session, open);
      const behind = stepDone(session, blocked);
      const run = [ahead, again, behind].map((e) => bus.publish(e).then((r) => r, (err: unknown) => err));
      await settledWithin("the refusal's lookup", lookups.seen, 5_000);
      await answer();
      const [a, dup] = await settledWithin("the two ahead of the refused one", Promise.all(run.slice(0, 2)), DEADLINE_MS);
      await restore();
      const late = await settledWithin("the refused one", run[2]!, DEADLINE_MS);
      expect(a).toMatchObject({ eventId: ahead.eventId });
      expect((a as PublishResult).journalSeq).toBeGreaterThan(earlier.journalSeq);
      expect(dup).toMatchObject({ eventId: again.eventId, journalSeq: earlier.journalSeq, duplicate: true });
      expect((late as PublishResult).journalSeq).toBeGreaterThan((a as PublishResult).journalSeq);
      await laneReleased(bus, [session], await storedSince(earlier.journalSeq - 1));
    } finally {
      lookups?.stop();
      await restore().catch(() => undefined);
      await bus.close();
    }
  }, 60_000);

  it("for generated refusals and duplicates at generated places of a lane, across cuts: a duplicate with no refusal ahead of it answers at its earlier copy's place", async () => {
    type Kind = "fresh" | "duplicate" | "refused";
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          lane: fc.array(fc.record({ session: fc.nat(1), kind: fc.constantFrom<Kind>("fresh", "fresh", "duplicate", "refused") }), { minLength: 3, maxLength: 16 }),
          // Acks held (stored unanswered) until the first refusal is counted: what is ahead of it is resent after it.
          holdAcks: fc.boolean(),
          k: fc.integer({ min: 0, max: 12 }),
          times: fc.integer({ min: 1, max: 2 }),
        }),
        async ({ lane, holdAcks, k, times }) => {
          const sessionIds = [newId(), newId()];
          const [blocked, open] = [newId(), newId()];
          const bus = await cutBus();
          try {
            const from = await lastSeq();
            const events = lane.map(({ session, kind }) => stepDone(sessionIds[session]!, kind === "refused" ? blocked : open));
            const duplicates = lane.flatMap(({ kind }, i) => (kind === "duplicate" ? [events[i]!] : []));
            await Promise.all(duplicates.map((e) => bus.publish(e)));
            const refusing = lane.some(({ kind }) => kind === "refused");
            const stream = refusing ? await narrowStream(open, holdAcks) : undefined;
            const lookups = await firstLookup();
            try {
              if (k > 0) proxy.cutEvery(k, { times });
              const run = fireEvents(bus, events, "each");
              if (stream) {
                // Cut before the server has it, the lookup is not seen: the rules hold either way.
                await within(lookups.seen, 2_000, undefined);
                await stream.restore();
              }
              await settledWithin("every call", run.done, DEADLINE_MS + 5_000);
              proxy.cutEvery(0);
              const stored = await storedSince(from);
              expect(violations(run.calls, run.outcomes, stored, new Set(duplicates.map((e) => e.eventId)))).toEqual([]);
              lane.forEach(({ session, kind }, i) => {
                const refusedAhead = lane.slice(0, i + 1).some((c) => c.session === session && c.kind === "refused");
                if (kind === "duplicate" && !refusedAhead) expect(run.outcomes[i], `call ${i}`).toMatchObject({ seq: stored.get(events[i]!.eventId)![0], duplicate: true });
              });
              await laneReleased(bus, sessionIds, stored);
            } finally {
              lookups.stop();
              await stream?.restore();
            }
          } finally {
            proxy.cutEvery(0);
            await bus.close();
          }
        },
      ),
      { numRuns: 12 },
    );
  }, 120_000);
});
