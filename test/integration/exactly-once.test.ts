// Exactly once at any retry delay, against a real nats-server: a stream provisioned with a
// short duplicate window (1 s), appends resent after it — fenced ones recognise their first
// copy, unfenced ones are reconciled with the journal (storedEvents, publishAll resume) —
// and the provisioning choices that go with it (duplicate window, one size rule).
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, fromConnection, marshalEvent, newId, OptionsError, ServerUnsupportedError, SubjectError, type Jetloop, type JetloopEvent } from "../../src/index.js";
import { supports } from "../../src/subjects/server-features.js";
import { connectTest, natsServerFlavor, natsServers, natsServerVersion, uniqueNamespace } from "../harness/context.js";
import { rejection, sleep } from "../harness/async.js";
import { messageCount, messageIdCounts } from "../harness/stream-state.js";

const FENCING = natsServerFlavor() === "external" || supports(natsServerVersion(), "fencing");
const WINDOW_MS = 1000;
/** Past the window: the stream no longer knows the first copy's message id. */
const afterWindow = () => sleep(WINDOW_MS + 300);

let bus: Jetloop;
let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  // The publish deadline must fit in the window (provisioning refuses a shorter window).
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace(), publishDeadlineMs: 800, ackTimeoutMs: 400 });
  await bus.provision({ duplicateWindow: "1s" });
  nc = await connectTest();
  jsm = await jetstreamManager(nc);
  expect((await jsm.streams.info(bus.stream)).config.duplicate_window).toBe(WINDOW_MS * 1e6);
});

afterAll(async () => {
  await jsm?.streams.delete(bus.stream).catch(() => undefined);
  await jsm?.streams.delete(bus.parked.stream).catch(() => undefined);
  await bus?.close();
});

const decided = (sessionId: string, extra: { reason?: string; createdAt?: string } = {}): JetloopEvent =>
  createEvent("PermissionDecided", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), toolExecutionId: newId(), effect: "approve", ...extra });

const idCounts = (stream: string, subject: string) => messageIdCounts(jetstream(nc), stream, subject);

const sessionSubject = (sessionId: string) => `${bus.namespace}.journal.${sessionId}.>`;

describe("an unfenced append resent after the duplicate window", () => {
  it("is stored twice by publish (the window is the stream's only memory), and never by publishAll with resume", async () => {
    const session = newId();
    const e = decided(session);
    const first = await bus.publish(e);
    await afterWindow();
    // The gap the reconcile closes: the server takes the resend as new.
    const second = await bus.publish(e);
    expect(second).toMatchObject({ duplicate: false });
    expect(second.journalSeq).toBeGreaterThan(first.journalSeq);

    const other = newId();
    const since = new Date(Date.now() - 1000);
    const events = Array.from({ length: 10 }, () => decided(other));
    const firstAttempt = await bus.publishAll(events.filter((_, i) => i % 3 === 0));
    await afterWindow();
    const resumed = await bus.publishAll(events, { resume: { since } });
    expect(resumed.map((r) => r.eventId)).toEqual(events.map((x) => x.eventId));
    for (const [i, r] of resumed.entries()) {
      if (i % 3 === 0) expect(r).toEqual({ ...firstAttempt[i / 3], duplicate: true });
      else expect(r.duplicate).toBe(false);
    }
    const counts = await idCounts(bus.stream, sessionSubject(other));
    expect([...counts.values()].every((c) => c === 1)).toBe(true);
    expect([...counts.keys()].sort()).toEqual(events.map((x) => x.eventId).sort());
  });

  it("storedEvents finds exactly the stored ones, across sessions and among other producers' events, bounded by time (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fc.boolean(), { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 3 }),
        fc.nat({ max: 4 }),
        async (sessions, noise) => {
          const ids = sessions.map(() => newId());
          const events = sessions.flatMap((mask, s) => mask.map((stored) => ({ event: decided(ids[s]!), stored })));
          const since = new Date(Date.now() - 1000);
          // Another producer's events in the same sessions, before and between.
          await bus.publishAll(Array.from({ length: noise }, (_, i) => decided(ids[i % ids.length]!)));
          const acks = new Map<string, number>();
          for (const { event, stored } of events) if (stored) acks.set(event.eventId, (await bus.publish(event)).journalSeq);
          const found = await bus.storedEvents(
            events.map((x) => x.event),
            { since },
          );
          expect(new Map([...found].map(([id, s]) => [id, s.journalSeq]))).toEqual(acks);
          for (const s of found.values()) expect(s.subject.startsWith(`${bus.namespace}.journal.`)).toBe(true);
        },
      ),
      { numRuns: 12 },
    );
  });

  it("is bounded by `since`: an event stored before it is not found", async () => {
    const session = newId();
    const early = decided(session);
    await bus.publish(early);
    await sleep(50);
    const since = new Date();
    await sleep(50);
    const late = decided(session);
    const lateAck = await bus.publish(late);
    const found = await bus.storedEvents([early, late], { since });
    expect([...found.keys()]).toEqual([late.eventId]);
    expect(found.get(late.eventId)).toEqual({ journalSeq: lateAck.journalSeq, subject: lateAck.subject });
  });

  it("refuses what it cannot read exactly, before anything is published: OptionsError for since, SubjectError for a session id", async () => {
    const before = await messageCount(jsm, bus.stream);
    const e = decided(newId());
    for (const since of [undefined, "2026-01-01", new Date(Number.NaN), 0]) {
      expect(await rejection(bus.storedEvents([e], { since } as never))).toBeInstanceOf(OptionsError);
      expect(await rejection(bus.publishAll([e], { resume: { since } as never }))).toBeInstanceOf(OptionsError);
    }
    const bad = { ...e, sessionId: "not-a-session" };
    expect(await rejection(bus.publishAll([e, bad], { resume: { since: new Date() } }))).toBeInstanceOf(SubjectError);
    expect(await messageCount(jsm, bus.stream)).toBe(before);
  });
});

describe("a fenced append resent after the duplicate window", () => {
  it(FENCING ? "recognises its first copy, also when other events of the session came after it, and stores nothing twice" : "is refused on a server without fencing (ServerUnsupportedError)", async () => {
    const session = newId();
    if (!FENCING) {
      expect(await rejection(bus.publish(decided(session), { expectedLastSeq: 0 }))).toBeInstanceOf(ServerUnsupportedError);
      return;
    }
    const a = decided(session);
    const b = decided(session);
    const ackA = await bus.publish(a, { expectedLastSeq: 0 });
    const ackB = await bus.publish(b, { expectedLastSeq: ackA.journalSeq });
    await bus.publish(decided(session)); // another writer's event, unfenced, after both
    await afterWindow();
    const before = await messageCount(jsm, bus.stream);
    expect(await bus.publish(a, { expectedLastSeq: 0 })).toEqual({ ...ackA, duplicate: true });
    expect(await bus.publish(b, { expectedLastSeq: ackA.journalSeq })).toEqual({ ...ackB, duplicate: true });
    expect(await messageCount(jsm, bus.stream)).toBe(before);
    const counts = await idCounts(bus.stream, sessionSubject(session));
    expect(counts.get(a.eventId)).toBe(1);
    expect(counts.get(b.eventId)).toBe(1);
  });
});

describe("the duplicate window, a provisioning choice", () => {
  it("is set and verified, refused below the publish deadline, above maxAge, or unreadable", async () => {
    const other = fromConnection(nc, { namespace: uniqueNamespace(), publishDeadlineMs: 5000 });
    try {
      await other.provision({ duplicateWindow: "10m" });
      expect((await jsm.streams.info(other.stream)).config.duplicate_window).toBe(600e9);
      expect(await other.provision({ mode: "verify" })).toMatchObject({ action: "drifted", drift: [{ field: "duplicate_window", live: 600e9, desired: 120e9 }] });
      for (const [duplicateWindow, extra] of [["4s", {}], ["1h", { maxAge: "30m" }], ["ten minutes", {}], ["0", {}], ["-5s", {}]] as const) {
        const err = await rejection(other.provision({ duplicateWindow, ...extra }));
        expect(err, duplicateWindow).toBeInstanceOf(OptionsError);
        expect(err).toMatchObject({ option: "duplicateWindow" });
      }
      expect((await jsm.streams.info(other.stream)).config.duplicate_window).toBe(600e9);
    } finally {
      await jsm.streams.delete(other.stream).catch(() => undefined);
      await jsm.streams.delete(other.parked.stream).catch(() => undefined);
      await other.close();
    }
  });
});

describe("one size rule on the stream", () => {
  it("max_msg_size holds an event at the codec's cap with every header jetloop sends", async () => {
    const small = fromConnection(nc, { namespace: uniqueNamespace(), maxEventBytes: 1024 });
    try {
      await small.provision();
      const createdAt = "2026-11-30T10:00:00.123456789Z";
      const session = newId();
      const base = marshalEvent(decided(session, { reason: "x", createdAt })).length - 1;
      const atCap = decided(session, { reason: "x".repeat(1024 - base), createdAt });
      expect(marshalEvent(atCap).length).toBe(1024);
      const ack = await small.publish(atCap, FENCING ? { expectedLastSeq: 0 } : {});
      expect(ack.journalSeq).toBe(1);
    } finally {
      await jsm.streams.delete(small.stream).catch(() => undefined);
      await jsm.streams.delete(small.parked.stream).catch(() => undefined);
      await small.close();
    }
  });
});
