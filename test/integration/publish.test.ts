// Publishing against a real nats-server: what an append stores (checked on the raw
// stream, not through jetloop's subscriber), deduplication, pipelining, fencing, and a
// typed error with nothing stored for every kind of bad input.
import { createServer, type Server } from "node:net";
import { DeliverPolicy, jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect as natsConnect, headers as natsHeaders, type NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  connect,
  ConnectionClosedError,
  createEvent,
  EventEncodeError,
  EventValidationError,
  fromConnection,
  type Jetloop,
  marshalEvent,
  newId,
  NIL_UUID,
  NotProvisionedError,
  OptionsError,
  PermissionDeniedError,
  PublishConflictError,
  ServerUnsupportedError,
  unmarshalEvent,
  unmarshalPreview,
  type JetloopEvent,
} from "../../src/index.js";
import { supports } from "../../src/subjects/server-features.js";
import { journalHeaderRoom } from "../../src/publish/journal-writer.js";
import { connectTest, natsServerFlavor, natsServers, natsServerVersion, uniqueNamespace } from "../harness/context.js";
import { startServer, type NatsServer } from "../harness/server.js";
import { rejection, waitFor } from "../harness/async.js";
import { messageCount } from "../harness/stream-state.js";

const ns = uniqueNamespace();
/** Fencing needs 2.11+: the oldest project asserts the refusal, the others the fence. */
const FENCING = natsServerFlavor() === "external" || supports(natsServerVersion(), "fencing");

let bus: Jetloop;
let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: ns });
  expect(bus.supports("fencing")).toBe(FENCING);
  expect((await bus.provision()).action).toBe("created");
  nc = await connectTest();
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  await jsm?.streams.delete(bus.stream).catch(() => undefined);
  await bus?.close();
});

// --- helpers -----------------------------------------------------------------------

type Coords = { sessionId: string; loopId: string; turnId: string; stepId: string };
const coords = (): Coords => ({ sessionId: newId(), loopId: newId(), turnId: newId(), stepId: newId() });
const decided = (c: Coords, extra: { reason?: string; createdAt?: string } = {}) =>
  createEvent("PermissionDecided", { ...c, toolExecutionId: newId(), effect: "approve", ...extra });
const preview = (c: Coords) => createEvent("ToolCallStarted", { ...c, toolExecutionId: newId(), toolName: "bash" });

/**
 * Watches `{ns}.live.>` from the test connection. `untilControl(via)` publishes a control
 * preview through `via` and returns the event ids seen before it arrived: anything sent
 * earlier on that connection has arrived by then.
 */
async function watchLive(): Promise<{ untilControl(via: Jetloop): Promise<string[]> }> {
  const seen: string[] = [];
  const sub = nc.subscribe(`${ns}.live.>`, {
    callback: (_err, m) => {
      seen.push(unmarshalPreview(m.data).eventId);
    },
  });
  await nc.flush(); // the server has the subscription before anything is published
  return {
    async untilControl(via: Jetloop) {
      const control = preview(coords());
      await via.publish(control);
      await waitFor("the control preview", () => seen.includes(control.eventId), 5000, 5);
      sub.unsubscribe();
      return seen.slice(0, seen.indexOf(control.eventId));
    },
  };
}

/** The journal subject, spelled out here rather than built by the module under test. */
function journalSubject(e: { sessionId: string; loopId?: string | undefined }, family: string, type: string): string {
  return `${ns}.journal.${e.sessionId}.${e.loopId ?? "_"}.${family}.${type}`;
}

/** Reads `n` messages of the stream from `fromSeq` with an ordered consumer. */
async function readStream(fromSeq: number, n: number): Promise<{ seq: number; subject: string; id: string }[]> {
  const consumer = await jetstream(nc).consumers.get(bus.stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: fromSeq });
  const out: { seq: number; subject: string; id: string }[] = [];
  const messages = await consumer.consume();
  for await (const m of messages) {
    out.push({ seq: m.seq, subject: m.subject, id: m.headers?.get("Nats-Msg-Id") ?? "" });
    if (out.length === n) break;
  }
  await messages.close();
  return out;
}

// --- what an append stores --------------------------------------------------------------

describe("an enduring append", () => {
  it("returns the stream sequence of the stored message: its journal subject, marshalEvent bytes, Nats-Msg-Id = event id", async () => {
    const c = coords();
    const { sessionId, loopId, turnId } = c;
    const gate = newId();
    const events: [JetloopEvent, string][] = [
      [createEvent("SessionStarted", { sessionId }), "session"],
      [createEvent("LoopStarted", { sessionId, loopId }), "loop"],
      [createEvent("TurnStarted", { sessionId, loopId, turnId }), "turn"],
      [createEvent("PermissionRequested", { ...c, toolExecutionId: newId(), request: { toolName: "read_file", requirements: [{ kind: "fs.read", match: "/etc/hosts", description: "read /etc/hosts" }] } }), "tool"],
      [decided(c), "tool"],
      [createEvent("UserInputRequested", { ...c, toolExecutionId: newId(), question: "which?" }), "tool"],
      [createEvent("GateOpened", { sessionId, gate: { id: gate, kind: "harness.form", resolver: "session" } }), "gate"],
      [createEvent("GateResolved", { sessionId, gateId: gate, resolver: "session", reason: "answered" }), "gate"],
      [createEvent("StepDone", { ...c, messages: [{ role: "assistant", blocks: [{ type: "text", text: "done" }] }] }), "step"],
      [createEvent("TurnDone", { sessionId, loopId, turnId }), "turn"],
      [createEvent("LoopIdle", { sessionId, loopId }), "loop"],
      [createEvent("SessionStopped", { sessionId }), "session"],
    ];
    const before = await messageCount(jsm, bus.stream);
    let last = 0;
    for (const [event, family] of events) {
      const r = await bus.publish(event);
      expect(r.journalSeq).toBeGreaterThan(last);
      last = r.journalSeq;
      const stored = await jsm.streams.getMessage(bus.stream, { seq: r.journalSeq });
      expect(stored).not.toBeNull();
      expect(stored!.seq).toBe(r.journalSeq);
      expect(stored!.subject).toBe(journalSubject(event, family, event.type));
      expect(r).toEqual({ journalSeq: stored!.seq, duplicate: false, subject: stored!.subject, eventId: event.eventId });
      expect(stored!.data).toEqual(marshalEvent(event));
      expect(stored!.header.get("Nats-Msg-Id")).toBe(event.eventId);
      expect(unmarshalEvent(stored!.data)).toEqual(event);
    }
    // Session-scoped events sit under the `_` loop token.
    expect(journalSubject(events[0]![0], "session", "SessionStarted")).toContain(`.${sessionId}._.session.`);
    const state = (await jsm.streams.info(bus.stream)).state;
    expect(state.messages).toBe(before + events.length);
    expect(state.last_seq).toBe(last);
  });

  it("stores an event published twice once, reporting the duplicate with the original sequence", async () => {
    const c = coords();
    const e = decided(c);
    const before = await messageCount(jsm, bus.stream);
    const first = await bus.publish(e);
    const again = await bus.publish(e);
    expect(first.duplicate).toBe(false);
    expect(again).toEqual({ ...first, duplicate: true });
    // Concurrent copies of one event (a retry racing the original) are stored once too.
    const e2 = decided(c);
    const racing = await Promise.all([bus.publish(e2), bus.publish(e2), bus.publish(e2)]);
    expect(new Set(racing.map((r) => r.journalSeq)).size).toBe(1);
    expect(racing.filter((r) => !r.duplicate)).toHaveLength(1);
    // Another connection (a restarted producer) is deduplicated by the server as well.
    const other = await connect({ servers: natsServers(), namespace: ns });
    try {
      expect(await other.publish(e)).toMatchObject({ journalSeq: first.journalSeq, duplicate: true });
    } finally {
      await other.close();
    }
    expect(await messageCount(jsm, bus.stream)).toBe(before + 2);
    const stored = await jsm.streams.getMessage(bus.stream, { seq: first.journalSeq });
    expect(stored!.header.get("Nats-Msg-Id")).toBe(e.eventId);
  });

  it("publishAll of 1000 events returns strictly increasing sequences in the order given, stored in that order", async () => {
    const loops = [coords(), coords(), coords()];
    const events = Array.from({ length: 1000 }, (_, i) => decided(loops[i % 3]!));
    const results = await bus.publishAll(events);
    expect(results.map((r) => r.eventId)).toEqual(events.map((e) => e.eventId));
    for (let i = 1; i < results.length; i++) expect(results[i]!.journalSeq).toBeGreaterThan(results[i - 1]!.journalSeq);
    expect(results.every((r) => !r.duplicate)).toBe(true);
    // Only this file writes to the stream: the batch is contiguous.
    const first = results[0]!.journalSeq;
    expect(results[999]!.journalSeq).toBe(first + 999);
    const stored = await readStream(first, 1000);
    expect(stored.map((m) => m.seq)).toEqual(results.map((r) => r.journalSeq));
    expect(stored.map((m) => m.id)).toEqual(events.map((e) => e.eventId));
    expect(stored.map((m) => m.subject)).toEqual(results.map((r) => r.subject));
  });

  it("keeps the order when appends wait for an in-flight slot (maxInFlight 4)", async () => {
    const narrow = fromConnection(nc, { namespace: ns, maxInFlight: 4 });
    try {
      const c = coords();
      const events = Array.from({ length: 200 }, () => decided(c));
      const results = await narrow.publishAll(events);
      const seqs = results.map((r) => r.journalSeq);
      expect(seqs).toEqual(Array.from({ length: 200 }, (_, i) => seqs[0]! + i));
      expect((await readStream(seqs[0]!, 200)).map((m) => m.id)).toEqual(events.map((e) => e.eventId));
    } finally {
      await narrow.close();
    }
  });

  it("sends an ephemeral event on core NATS only: journal sequence 0, nothing stored", async () => {
    const before = await messageCount(jsm, bus.stream);
    const r = await bus.publish(preview(coords()));
    expect(r.journalSeq).toBe(0);
    expect(r.subject.startsWith(`${ns}.live.`)).toBe(true);
    expect(await messageCount(jsm, bus.stream)).toBe(before);
  });
});

// --- fencing ------------------------------------------------------------------------

if (FENCING) {
  describe("fencing (nats-server 2.11+)", () => {
    it("lets exactly one of two writers racing on one session with the same expectedLastSeq win", async () => {
      const writerA = bus;
      const writerB = await connect({ servers: natsServers(), namespace: ns });
      try {
        const session = newId();
        // The writers use different loops: the fence covers the whole session.
        const a = { ...coords(), sessionId: session };
        const b = { ...coords(), sessionId: session };
        let last = 0;
        for (let round = 0; round < 10; round++) {
          const ea = decided(a);
          const eb = decided(b);
          const settled = await Promise.allSettled([writerA.publish(ea, { expectedLastSeq: last }), writerB.publish(eb, { expectedLastSeq: last })]);
          const won = settled.filter((s) => s.status === "fulfilled");
          const lost = settled.filter((s) => s.status === "rejected");
          expect(won).toHaveLength(1);
          expect(lost).toHaveLength(1);
          const seq = won[0]!.value.journalSeq;
          const err = lost[0]!.reason as PublishConflictError;
          expect(err).toBeInstanceOf(PublishConflictError);
          expect(err).toMatchObject({ code: "PUBLISH_CONFLICT", sessionId: session, expectedLastSeq: last, actualLastSeq: seq });
          // The loser's event is not stored anywhere.
          const loserId = settled[0].status === "rejected" ? ea.eventId : eb.eventId;
          const stored = await jsm.streams.getMessage(bus.stream, { last_by_subj: `${ns}.journal.${session}.>` });
          expect(stored!.seq).toBe(seq);
          expect(stored!.header.get("Nats-Msg-Id")).not.toBe(loserId);
          last = seq;
        }
        // Ten rounds, ten events in the session: every loser's append was refused.
        const subjects = (await jsm.streams.info(bus.stream, { subjects_filter: `${ns}.journal.${session}.>` })).state.subjects ?? {};
        expect(Object.values(subjects).reduce((x, y) => x + y, 0)).toBe(10);
      } finally {
        await writerB.close();
      }
    });

    it("accepts expectedLastSeq 0 on an empty session and refuses it once the session has an event", async () => {
      const c = coords();
      const first = await bus.publish(createEvent("SessionStarted", { sessionId: c.sessionId }), { expectedLastSeq: 0 });
      expect(first.journalSeq).toBeGreaterThan(0);
      const err = await rejection(bus.publish(decided(c), { expectedLastSeq: 0 }));
      expect(err).toBeInstanceOf(PublishConflictError);
      expect(err).toMatchObject({ code: "PUBLISH_CONFLICT", expectedLastSeq: 0, actualLastSeq: first.journalSeq });
      // The session-scoped event (loop `_`) counts for loop events of the same session.
      const next = await bus.publish(decided(c), { expectedLastSeq: first.journalSeq });
      expect(next.journalSeq).toBeGreaterThan(first.journalSeq);
    });

    it("is per session: appends to other sessions neither trip nor are tripped by the fence", async () => {
      const a = coords();
      const b = coords();
      const a1 = await bus.publish(decided(a), { expectedLastSeq: 0 });
      // Session b moves the stream on, fenced and unfenced.
      const b1 = await bus.publish(decided(b), { expectedLastSeq: 0 });
      const b2 = await bus.publish(decided(b));
      expect(b1.journalSeq).toBeGreaterThan(a1.journalSeq);
      expect(b2.journalSeq).toBeGreaterThan(b1.journalSeq);
      // a's last journal sequence is still a1, although the stream is at b2.
      const a2 = await bus.publish(decided(a), { expectedLastSeq: a1.journalSeq });
      expect(a2.journalSeq).toBe(b2.journalSeq + 1);
      // a conflict in a leaves b untouched
      expect(await rejection(bus.publish(decided(a), { expectedLastSeq: a1.journalSeq }))).toBeInstanceOf(PublishConflictError);
      expect((await bus.publish(decided(b), { expectedLastSeq: b2.journalSeq })).journalSeq).toBeGreaterThan(a2.journalSeq);
    });

    it("reports an append retried after its ack was lost as a duplicate, even when the server checks the fence first", async () => {
      const c = coords();
      const e1 = decided(c);
      const before = await messageCount(jsm, bus.stream);
      // The first attempt reaches the stream, but its ack is lost: sent here by hand with
      // the headers jetloop sends, so the bus only sees its resend.
      const h = natsHeaders();
      h.set("Nats-Msg-Id", e1.eventId);
      h.set("Nats-Expected-Stream", bus.stream);
      h.set("Nats-Expected-Last-Subject-Sequence", "0");
      h.set("Nats-Expected-Last-Subject-Sequence-Subject", `${ns}.journal.${c.sessionId}.>`);
      const lost = (await nc.request(journalSubject(c, "tool", "PermissionDecided"), marshalEvent(e1), { headers: h, timeout: 5000 })).json<{ seq: number }>();
      expect(lost.seq).toBeGreaterThan(0);

      expect(await bus.publish(e1, { expectedLastSeq: 0 })).toMatchObject({ journalSeq: lost.seq, duplicate: true });
      // The session moves on; the stale resend is still the same append, not a conflict.
      const e2 = await bus.publish(decided(c), { expectedLastSeq: lost.seq });
      expect(await bus.publish(e1, { expectedLastSeq: 0 })).toMatchObject({ journalSeq: lost.seq, duplicate: true });
      // A different event with the stale fence is a real conflict.
      const err = await rejection(bus.publish(decided(c), { expectedLastSeq: 0 }));
      expect(err).toBeInstanceOf(PublishConflictError);
      expect(err).toMatchObject({ actualLastSeq: e2.journalSeq });
      expect(await messageCount(jsm, bus.stream)).toBe(before + 2);
    });
  });
} else {
  describe("fencing on nats-server 2.10", () => {
    it("refuses publish with expectedLastSeq with ServerUnsupportedError and publishes nothing", async () => {
      const c = coords();
      const e = decided(c);
      const before = await messageCount(jsm, bus.stream);
      for (const expectedLastSeq of [0, 1, 1000]) {
        const err = await rejection(bus.publish(e, { expectedLastSeq }));
        expect(err).toBeInstanceOf(ServerUnsupportedError);
        expect(err).toMatchObject({ code: "SERVER_UNSUPPORTED", feature: "fencing", required: "2.11.0", actual: bus.serverVersion });
      }
      expect(await messageCount(jsm, bus.stream)).toBe(before);
      expect(await jsm.streams.getMessage(bus.stream, { last_by_subj: `${ns}.journal.${c.sessionId}.>` })).toBeNull();
      // Without the fence the same event goes through.
      expect((await bus.publish(e)).journalSeq).toBeGreaterThan(0);
    });
  });
}

describe("dedupe and the expected-sequence check on the server", () => {
  // Which check the server runs first decides what a resend with a stale fence gets. Observed
  // on R1 streams: 2.10.27 dedupes first, 2.15.1 checks the expected sequence first. (On R3,
  // the other way round; see the report.) jetloop copes with both.
  it("never stores a resend twice; reports it as a duplicate (dedupe first) or a sequence mismatch (fence first)", async () => {
    const session = newId();
    const subject = `${ns}.journal.${session}.${newId()}.tool.PermissionDecided`;
    const send = async (id: string, expected?: number) => {
      const h = natsHeaders();
      h.set("Nats-Msg-Id", id);
      if (expected !== undefined) {
        h.set("Nats-Expected-Last-Subject-Sequence", String(expected));
        // 2.11+: the fence covers the session; 2.10 ignores this header and checks the subject.
        h.set("Nats-Expected-Last-Subject-Sequence-Subject", `${ns}.journal.${session}.>`);
      }
      const r = await nc.request(subject, "{}", { headers: h, timeout: 5000 });
      return r.json<{ seq: number; duplicate?: boolean; error?: { err_code: number; description: string } }>();
    };
    const before = await messageCount(jsm, bus.stream);
    const first = await send("resend-1-" + session, 0);
    const moved = await send("resend-2-" + session);
    const resend = await send("resend-1-" + session, 0);
    expect(await messageCount(jsm, bus.stream)).toBe(before + 2);
    const duplicate = { seq: first.seq, duplicate: true };
    const mismatch = { seq: 0, error: { code: 400, err_code: 10071, description: `wrong last sequence: ${moved.seq}` } };
    const version = bus.serverVersion;
    if (version.startsWith("2.10.")) expect(resend).toMatchObject(duplicate);
    else if (version.startsWith("2.15.")) expect(resend).toMatchObject(mismatch);
    else expect(resend).toMatchObject(resend.duplicate ? duplicate : mismatch);
  });
});

// --- bad input ------------------------------------------------------------------------

describe("bad input gets a typed error and nothing is published", () => {
  it("an invalid event: EventValidationError", async () => {
    const c = coords();
    const good = decided(c);
    const before = await messageCount(jsm, bus.stream);
    const bad: [Record<string, unknown>, string][] = [
      [{ ...good, toolExecutionId: undefined }, "toolExecutionId"],
      [{ ...good, stepId: undefined }, "stepId"],
      [{ ...good, effect: "ask" }, "effect"],
      [{ ...createEvent("SessionStarted", { sessionId: c.sessionId }), loopId: c.loopId }, "loopId"],
      [{ ...good, eventId: "not-a-uuid" }, "eventId"],
      [{ ...good, type: "NoSuchEvent" }, "type"],
    ];
    for (const [event, field] of bad) {
      const err = await rejection(bus.publish(event as unknown as JetloopEvent));
      expect(err, field).toBeInstanceOf(EventValidationError);
      expect((err as EventValidationError).field).toBe(field);
    }
    // An ephemeral event too never leaves when invalid: a core subscriber sees nothing.
    const live = await watchLive();
    const err = await rejection(bus.publish({ ...preview(c), toolExecutionId: NIL_UUID }));
    expect(err).toBeInstanceOf(EventValidationError);
    expect(await live.untilControl(bus)).toEqual([]);
    expect(await messageCount(jsm, bus.stream)).toBe(before);
  });

  it("ids with subject metacharacters, whitespace, uppercase, or the nil UUID: EventValidationError", async () => {
    const c = coords();
    const good = decided(c);
    const before = await messageCount(jsm, bus.stream);
    for (const field of ["sessionId", "loopId"] as const) {
      for (const bad of ["a.b", "*", ">", `${c.sessionId}.>`, "has space", ` ${c.sessionId}`, `${c.sessionId}\n`, c.sessionId.toUpperCase(), NIL_UUID, "_", ""]) {
        const err = await rejection(bus.publish({ ...good, [field]: bad }));
        expect(err, `${field}=${JSON.stringify(bad)}`).toBeInstanceOf(EventValidationError);
        expect(err).toMatchObject({ code: "EVENT_INVALID", field });
      }
    }
    expect(await messageCount(jsm, bus.stream)).toBe(before);
  });

  it("an event over maxEventBytes: EventEncodeError too_large", async () => {
    const small = fromConnection(nc, { namespace: ns, maxEventBytes: 1024 });
    try {
      const before = await messageCount(jsm, bus.stream);
      const err = await rejection(small.publish(decided(coords(), { reason: "x".repeat(2000) })));
      expect(err).toBeInstanceOf(EventEncodeError);
      expect(err).toMatchObject({ code: "EVENT_ENCODE", reason: "too_large", eventType: "PermissionDecided" });
      // The same event fits the default cap.
      expect(await messageCount(jsm, bus.stream)).toBe(before);
    } finally {
      await small.close();
    }
  });

  it("expectedLastSeq that is not a non-negative integer, or on an ephemeral event: OptionsError", async () => {
    const c = coords();
    const before = await messageCount(jsm, bus.stream);
    for (const expectedLastSeq of [-1, 1.5, Number.NaN]) {
      expect(await rejection(bus.publish(decided(c), { expectedLastSeq }))).toMatchObject({ code: "OPTIONS_INVALID", option: "expectedLastSeq" });
    }
    expect(await rejection(bus.publish(preview(c), { expectedLastSeq: 0 }))).toBeInstanceOf(OptionsError);
    expect(await messageCount(jsm, bus.stream)).toBe(before);
  });

  it("an invalid namespace or other option: OptionsError at connect, before dialing", async () => {
    let accepted = 0;
    const listener: Server = createServer((socket) => {
      accepted++;
      socket.destroy();
    });
    await new Promise<void>((r) => listener.listen(0, "127.0.0.1", r));
    const port = (listener.address() as { port: number }).port;
    try {
      const bad: [Record<string, unknown>, string][] = [
        [{ namespace: "a.*" }, "namespace"],
        [{ namespace: "a.>" }, "namespace"],
        [{ namespace: "has space" }, "namespace"],
        [{ namespace: "" }, "namespace"],
        [{ namespace: "a..b" }, "namespace"],
        [{ namespace: "a.b.c.d.e" }, "namespace"],
        [{ namespace: 42 }, "namespace"],
        [{ stream: "a.b" }, "stream"],
        [{ maxEventBytes: 10 }, "maxEventBytes"],
        [{ maxInFlight: 0 }, "maxInFlight"],
      ];
      for (const [options, option] of bad) {
        // Refused before any connection: the listener below accepts none (not a time bound,
        // which a loaded machine could break).
        const err = await rejection(connect({ servers: `nats://127.0.0.1:${port}`, ...options }));
        expect(err, JSON.stringify(options)).toBeInstanceOf(OptionsError);
        expect(err).toMatchObject({ code: "OPTIONS_INVALID", option });
        // And over a connection the caller owns, synchronously.
        expect(() => fromConnection(nc, options as Parameters<typeof connect>[0])).toThrow(OptionsError);
      }
      expect(accepted).toBe(0);
    } finally {
      await new Promise((r) => listener.close(r));
    }
  });

  it("before provisioning: NotProvisionedError at once, not after the publish deadline", async () => {
    const other = fromConnection(nc, { namespace: uniqueNamespace(), publishDeadlineMs: 30_000 });
    try {
      const started = Date.now();
      const err = await rejection(other.publish(decided(coords())));
      expect(err).toBeInstanceOf(NotProvisionedError);
      expect(err).toMatchObject({ code: "NOT_PROVISIONED", stream: other.stream });
      expect(Date.now() - started).toBeLessThan(2000);
      // Many at once fail the same way.
      const all = await Promise.allSettled(Array.from({ length: 20 }, () => other.publish(decided(coords()))));
      expect(all.every((s) => s.status === "rejected" && s.reason instanceof NotProvisionedError)).toBe(true);
      expect(await rejection(jsm.streams.info(other.stream))).toBeTruthy();
    } finally {
      await other.close();
    }
  });

  it("after close: ConnectionClosedError, for a bus that owns its connection and one that does not", async () => {
    const before = await messageCount(jsm, bus.stream);
    const owned = await connect({ servers: natsServers(), namespace: ns });
    await owned.close();
    const borrowed = fromConnection(nc, { namespace: ns });
    await borrowed.close();
    const live = await watchLive();
    for (const closed of [owned, borrowed]) {
      const c = coords();
      for (const event of [decided(c), preview(c)]) {
        const err = await rejection(closed.publish(event));
        expect(err).toBeInstanceOf(ConnectionClosedError);
        expect(err).toMatchObject({ code: "CONNECTION_CLOSED" });
      }
      expect(await rejection(closed.publishAll([decided(c)]))).toBeInstanceOf(ConnectionClosedError);
    }
    // Nothing went out on the borrowed connection before a control sent on it.
    const control = fromConnection(nc, { namespace: ns });
    expect(await live.untilControl(control)).toEqual([]);
    await control.close();
    expect(nc.isClosed()).toBe(false);
    await borrowed.close(); // idempotent
    expect(await messageCount(jsm, bus.stream)).toBe(before);
  });
});

// --- servers with their own limits -----------------------------------------------------

describe("a server whose max_payload (2048) is smaller than the event", () => {
  let server: NatsServer;
  let small: Jetloop;
  let admin: JetStreamManager;
  let adminNc: NatsConnection;
  beforeAll(async () => {
    server = await startServer({ configText: "max_payload: 2048" });
    small = await connect({ servers: server.url, namespace: ns });
    await small.provision();
    adminNc = await natsConnect({ servers: server.url });
    admin = await jetstreamManager(adminNc);
  });
  afterAll(async () => {
    await small?.close();
    await adminNc?.close();
    await server?.close();
  });

  /** A PermissionDecided whose encoding is exactly `size` bytes. */
  function eventOfSize(size: number) {
    const c = coords();
    // One fixed time: Go's form drops a fraction's trailing zeros, so "now" varies in length.
    const createdAt = "2026-11-30T10:00:00.123456789Z";
    const base = marshalEvent(decided(c, { reason: "x", createdAt })).length - 1;
    const e = decided(c, { reason: "x".repeat(size - base), createdAt });
    expect(marshalEvent(e).length).toBe(size);
    return e;
  }

  /** The codec's cap on this server: max_payload less the room jetloop's headers may take. */
  const cap = () => 2048 - journalHeaderRoom(small.stream, ns);

  it("the codec's cap leaves room for the headers: what it refuses is EventEncodeError, never the server's MessageTooLargeError", async () => {
    expect(small.nc.info?.max_payload).toBe(2048);
    for (const size of [3000, 2049, 2048, 2000, cap() + 1]) {
      const err = await rejection(small.publish(eventOfSize(size)));
      expect(err, `${size} bytes`).toBeInstanceOf(EventEncodeError);
      expect(err).toMatchObject({ code: "EVENT_ENCODE", reason: "too_large" });
    }
    // A preview too big for the server as well.
    const c = coords();
    const err = await rejection(small.publish(createEvent("ToolCallCompleted", { ...c, toolExecutionId: newId(), resultPreview: "y".repeat(2048) })));
    expect(err).toBeInstanceOf(EventEncodeError);
    expect(await messageCount(admin, small.stream)).toBe(0);
    // At the cap, with its headers, it is stored.
    expect((await small.publish(eventOfSize(cap()))).journalSeq).toBe(1);
    expect(await messageCount(admin, small.stream)).toBe(1);
  });

  it("one size rule, at the edge with real headers: every event the codec accepts is stored, fenced or not; every other is refused by the codec", async () => {
    const before = await messageCount(admin, small.stream);
    let stored = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: -40, max: 40 }), fc.boolean(), async (delta, fenced) => {
        const size = cap() + delta;
        const options = fenced && FENCING ? { expectedLastSeq: 0 } : {};
        const outcome = await small.publish(eventOfSize(size), options).then(
          (r) => r,
          (e: unknown) => e as Error,
        );
        if (size <= cap()) {
          expect(outcome, `${size} bytes${fenced ? ", fenced" : ""}`).not.toBeInstanceOf(Error);
          stored++;
        } else {
          expect(outcome).toBeInstanceOf(EventEncodeError);
          expect(outcome).toMatchObject({ reason: "too_large" });
        }
      }),
      { numRuns: 60 },
    );
    expect(await messageCount(admin, small.stream)).toBe(before + stored);
  });
});

describe("a user without publish permission on the journal subjects", () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startServer({
      configText: `authorization {
  users: [
    { user: admin, password: admin }
    { user: reader, password: reader, permissions: {
        publish: { allow: ["$JS.API.>", "_INBOX.>"] }
        subscribe: { allow: ["_INBOX.>"] }
    } }
  ]
}`,
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("gets PermissionDeniedError, promptly, and nothing is stored", async () => {
    const admin = await connect({ servers: server.url, namespace: ns, user: "admin", pass: "admin" });
    const reader = await connect({ servers: server.url, namespace: ns, user: "reader", pass: "reader" });
    try {
      await admin.provision();
      const c = coords();
      const e = decided(c);
      const started = Date.now();
      const err = await rejection(reader.publish(e));
      expect(err).toBeInstanceOf(PermissionDeniedError);
      expect(err).toMatchObject({ code: "PERMISSION_DENIED", operation: "publish", subject: journalSubject(c, "tool", "PermissionDecided") });
      // Well before the ack timeout (2 s) would even resend.
      expect(Date.now() - started).toBeLessThan(1500);
      const many = await Promise.allSettled([decided(c), decided(coords()), createEvent("SessionStarted", { sessionId: newId() })].map((x) => reader.publish(x)));
      expect(many.every((s) => s.status === "rejected" && s.reason instanceof PermissionDeniedError)).toBe(true);
      expect(await messageCount(await admin.jetstreamManager(), admin.stream)).toBe(0);
      // The admin can publish the same event.
      expect((await admin.publish(e)).journalSeq).toBe(1);
    } finally {
      await reader.close();
      await admin.close();
    }
  });
});
