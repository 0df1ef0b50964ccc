// Poison messages: bytes placed raw into the journal (and onto live subjects) that are not
// a valid event for their subject. They are reported with their journal sequence, subject
// and typed error, never yielded, and what follows them still arrives.
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  connect,
  createEvent,
  DeliveryMismatchError,
  encodeEvent,
  EventDecodeError,
  eventSubject,
  EventValidationError,
  marshalEvent,
  newId,
  type Delivery,
  type DeliveryFailure,
  type Jetloop,
  type JetloopEvent,
  type SubscriptionReport,
} from "../../src/index.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";
import { sleep } from "../harness/async.js";
import { Reader } from "../harness/reader.js";
import { messageCount } from "../harness/stream-state.js";


type Poison = Extract<SubscriptionReport, { kind: "poison" }>;

const enc = (s: string) => new TextEncoder().encode(s);

let bus: Jetloop;
let jsm: JetStreamManager;
/** Everything jetloop logged (JSON lines). */
const logs: string[] = [];
/** A secret inside a malformed payload: JSON.parse quotes the text around a syntax error. */
const SECRET = "SECRET-grant-7c1d";
const session = newId();
const loop = newId();
const otherLoop = newId();
const step = () => ({ sessionId: session, loopId: loop, turnId: newId(), stepId: newId() });

/** The journal as the tests see it: good events and poison, interleaved. */
const goods: { seq: number; eventId: string }[] = [];
interface Planted {
  readonly name: string;
  readonly seq: number;
  readonly subject: string;
  readonly check: (e: DeliveryFailure) => void;
}
const planted: Planted[] = [];

function expectDecode(reason: EventDecodeError["reason"]) {
  return (e: DeliveryFailure) => {
    expect(e).toBeInstanceOf(EventDecodeError);
    expect(e.code).toBe("EVENT_DECODE");
    expect((e as EventDecodeError).reason).toBe(reason);
  };
}

beforeAll(async () => {
  bus = await connect({
    servers: natsServers(),
    namespace: uniqueNamespace(),
    logger: pino({ level: "warn" }, { write: (line: string) => void logs.push(line) }),
  });
  await bus.provision();
  jsm = await jetstreamManager(bus.nc);
  const js = jetstream(bus.nc);
  const decided = eventSubject(bus.namespace, "journal", { sessionId: session, loopId: loop, family: "tool", type: "PermissionDecided" });

  const good = async () => {
    const r = await bus.publish(createEvent("PermissionDecided", { ...step(), toolExecutionId: newId(), effect: "approve" }));
    goods.push({ seq: r.journalSeq, eventId: r.eventId });
  };
  const plant = async (name: string, subject: string, bytes: Uint8Array, check: Planted["check"]) => {
    const ack = await js.publish(subject, bytes);
    planted.push({ name, seq: ack.seq, subject, check });
  };

  const valid = createEvent("PermissionDecided", { ...step(), toolExecutionId: newId(), effect: "deny" });
  const validJson = new TextDecoder().decode(marshalEvent(valid));

  await good();
  await plant("invalid JSON", decided, enc('{"type":"PermissionDecided","v":1,'), expectDecode("malformed_json"));
  await good();
  // A valid event of another loop, stored under this loop's subject.
  const misrouted = createEvent("PermissionDecided", { ...step(), loopId: otherLoop, toolExecutionId: newId(), effect: "approve" });
  await plant("misrouted", decided, marshalEvent(misrouted), (e) => {
    expect(e).toBeInstanceOf(DeliveryMismatchError);
    expect(e.code).toBe("DELIVERY_INVALID");
    expect((e as DeliveryMismatchError).subject).toBe(decided);
    expect((e as DeliveryMismatchError).expected).toBe(eventSubject(bus.namespace, "journal", { sessionId: session, loopId: otherLoop, family: "tool", type: "PermissionDecided" }));
  });
  await good();
  await plant(
    "unknown type",
    eventSubject(bus.namespace, "journal", { sessionId: session, loopId: loop, family: "tool", type: "ToolExploded" }),
    enc(validJson.replace('"type":"PermissionDecided"', '"type":"ToolExploded"')),
    (e) => {
      expect(e).toBeInstanceOf(EventValidationError);
      expect(e.code).toBe("EVENT_TYPE_UNKNOWN");
      expect((e as EventValidationError).rule).toBe("is not a known event type");
    },
  );
  await good();
  await plant("duplicate key", decided, enc(validJson.replace('"effect":1', '"effect":1,"effect":0').replace('"effect":"deny"', '"effect":"deny","effect":"approve"')), expectDecode("duplicate_key"));
  await good();
  await plant("not UTF-8", decided, new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), expectDecode("not_utf8"));
  await plant("a body that breaks its type's rules", decided, enc(validJson.replace(/"effect":("deny"|\d)/, '"effect":"ask"')), (e) => {
    expect(e).toBeInstanceOf(EventValidationError);
    expect(e.code).toBe("EVENT_INVALID");
    expect((e as EventValidationError).field).toBe("effect");
  });
  await plant("malformed JSON around a secret", decided, enc(`{"type":"PermissionDecided","grant_token":${SECRET}}`), expectDecode("malformed_json"));
  // Another session's event under this session's subject.
  const foreign = createEvent("SessionStopped", { sessionId: newId() });
  await plant("foreign session", eventSubject(bus.namespace, "journal", { sessionId: session, family: "session", type: "SessionStopped" }), marshalEvent(foreign), (e) =>
    expect(e).toBeInstanceOf(DeliveryMismatchError),
  );
  await good();
  // Sanity: the duplicate-key payload really has a duplicate key, the unknown type is really unknown.
  expect(validJson).toContain('"effect"');
});

afterAll(async () => {
  await jsm?.streams.delete(bus.stream).catch(() => undefined);
  await bus?.close();
});

function checkReports(reports: SubscriptionReport[]) {
  const poison = reports.filter((r): r is Poison => r.kind === "poison");
  expect(poison.map((p) => p.journalSeq)).toEqual(planted.map((p) => p.seq));
  for (const [i, p] of poison.entries()) {
    const want = planted[i]!;
    expect(p.subject, want.name).toBe(want.subject);
    want.check(p.error);
  }
}

function checkGoods(got: readonly Delivery<JetloopEvent>[]) {
  expect(got.map((d) => d.journalSeq)).toEqual(goods.map((g) => g.seq));
  expect(got.map((d) => d.event.eventId)).toEqual(goods.map((g) => g.eventId));
  const poisonSeqs = new Set(planted.map((p) => p.seq));
  expect(got.filter((d) => poisonSeqs.has(d.journalSeq))).toEqual([]);
}

describe("poison in the journal", () => {
  it("the journal holds the poison between the good events", async () => {
    expect(planted).toHaveLength(8);
    expect(goods).toHaveLength(6);
    expect(await messageCount(jsm, bus.stream)).toBe(14);
    // The good events after the last poison prove delivery goes on past it.
    expect(goods.at(-1)!.seq).toBeGreaterThan(planted.at(-1)!.seq);
  });

  it("an ordered subscription reports each with its journal sequence, subject and typed error, and never yields it", async () => {
    const reports: SubscriptionReport[] = [];
    const sub = await bus.subscribeEvents({ sessions: [session], enduring: { loops: [loop] } }, { start: "all", onReport: (r) => reports.push(r) });
    try {
      const r = new Reader(sub);
      const got = await r.take(goods.length);
      expect(await r.extra(200)).toBeUndefined();
      checkGoods(got);
      checkReports(reports);
      expect(sub.stats()).toEqual({ delivered: goods.length, dropped: 0, poison: planted.length, parked: 0 });
      expect(sub.err()).toBeUndefined();
    } finally {
      await sub.close();
    }
  });

  it("each poison is logged with its sequence and code, and no part of its payload", () => {
    const skipped = logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === "skipped a malformed message");
    for (const p of planted) {
      const entry = skipped.find((l) => l.journalSeq === p.seq);
      expect(entry, p.name).toBeDefined();
      expect(entry!.subject).toBe(p.subject);
      expect(typeof entry!.code).toBe("string");
    }
    expect(logs.join("\n")).not.toContain(SECRET.slice(0, 10));
  });

  it("a durable subscription reports, parks and terminates each: never redelivered, not even to a restarted consumer", async () => {
    const durable = `poison-${newId().slice(-8)}`;
    const reports: SubscriptionReport[] = [];
    const options = { durable, backoffMs: [300], onReport: (r: SubscriptionReport) => reports.push(r) };
    const sub = await bus.subscribeEvents({ sessions: [session], enduring: { loops: [loop] } }, options);
    try {
      const r = new Reader(sub);
      const got = await r.take(goods.length);
      for (const d of got) await d.ack();
      checkGoods(got);
      checkReports(reports);
      // Several ack waits later: nothing came back, nothing is outstanding.
      expect(await r.extra(1200)).toBeUndefined();
      expect(reports.filter((x) => x.kind === "poison")).toHaveLength(planted.length);
      const ci = await jsm.consumers.info(bus.stream, durable);
      expect(ci.num_ack_pending).toBe(0);
      expect(ci.num_redelivered).toBe(0);
      expect(ci.num_pending).toBe(0);
      expect(ci.ack_floor.stream_seq).toBeGreaterThanOrEqual(goods.at(-1)!.seq);
      expect(sub.stats().poison).toBe(planted.length);
      // Each is kept in the parked store with its decode error, its bytes as they were.
      expect(sub.stats().parked).toBe(planted.length);
      const parked = await bus.parked.list(durable);
      expect(parked.map((e) => [e.journalSeq, e.subject, e.reason, e.state])).toEqual(planted.map((p) => [p.seq, p.subject, "poison", "held"]));
      for (const e of parked) {
        expect(e.errorCode).toMatch(/^(EVENT_|REQUEST_|DELIVERY_)/);
        expect(e.data).toEqual((await jsm.streams.getMessage(bus.stream, { seq: e.journalSeq }))!.data);
      }
    } finally {
      await sub.close();
    }
    const again: SubscriptionReport[] = [];
    const sub2 = await bus.subscribeEvents({ sessions: [session], enduring: { loops: [loop] } }, { ...options, onReport: (r) => again.push(r) });
    try {
      expect(await new Reader(sub2).extra(500)).toBeUndefined();
      expect(again).toEqual([]);
    } finally {
      await sub2.close();
      await jsm.consumers.delete(bus.stream, durable);
      await bus.parked.drop(durable, "all");
    }
  });

  it("replay reports each and yields only the good events", async () => {
    const reports: SubscriptionReport[] = [];
    const got: Delivery<JetloopEvent>[] = [];
    for await (const d of bus.session(session).replay({ loops: [loop], onReport: (r) => reports.push(r) })) got.push(d);
    checkGoods(got);
    checkReports(reports);
  });

  it("internal events are skipped, not reported as poison", async () => {
    const s = newId();
    const internal = await bus.publish(createEvent("LoopIdle", { sessionId: s, loopId: loop, visibility: "internal" }));
    const pub = await bus.publish(createEvent("LoopIdle", { sessionId: s, loopId: loop }));
    const reports: SubscriptionReport[] = [];
    const sub = await bus.subscribeEvents({ sessions: [s], enduring: "all" }, { start: "all", onReport: (r) => reports.push(r) });
    try {
      const got = await new Reader(sub).take(1);
      expect(got.map((d) => d.journalSeq)).toEqual([pub.journalSeq]);
      expect(internal.journalSeq).toBeLessThan(pub.journalSeq);
      expect(reports).toEqual([]);
    } finally {
      await sub.close();
    }
  });
});

describe("poison on live subjects", () => {
  it("is reported with journal sequence 0 and skipped; valid previews still arrive", async () => {
    const s = newId();
    const l = newId();
    const coords = { sessionId: s, loopId: l, turnId: newId(), stepId: newId() };
    const subject = eventSubject(bus.namespace, "live", { sessionId: s, loopId: l, family: "tool", type: "ToolCallStarted" });
    const reports: SubscriptionReport[] = [];
    const sub = await bus.subscribeEvents({ sessions: [s], ephemeral: { loops: [l] } }, { onReport: (r) => reports.push(r) });
    try {
      const before = createEvent("ToolCallStarted", { ...coords, toolExecutionId: newId(), toolName: "before" });
      const after = createEvent("ToolCallStarted", { ...coords, toolExecutionId: newId(), toolName: "after" });
      const wrongLoop = createEvent("ToolCallStarted", { ...coords, loopId: newId(), toolExecutionId: newId(), toolName: "misrouted" });
      await bus.publish(before);
      bus.nc.publish(subject, enc("not json at all"));
      bus.nc.publish(subject, encodeEvent(wrongLoop));
      bus.nc.publish(subject, enc('{"type":"ToolCallStarted","type":"ToolCallStarted"}'));
      await bus.publish(after);
      const got = await new Reader(sub).take(2);
      expect(got.map((d) => [d.event.eventId, d.journalSeq])).toEqual([
        [before.eventId, 0],
        [after.eventId, 0],
      ]);
      await sleep(50);
      const poison = reports.filter((r): r is Poison => r.kind === "poison");
      expect(poison.map((p) => [p.journalSeq, p.subject])).toEqual([
        [0, subject],
        [0, subject],
        [0, subject],
      ]);
      expect(poison[0]!.error).toBeInstanceOf(EventDecodeError);
      expect((poison[0]!.error as EventDecodeError).reason).toBe("malformed_json");
      expect(poison[1]!.error).toBeInstanceOf(DeliveryMismatchError);
      expect((poison[2]!.error as EventDecodeError).reason).toBe("duplicate_key");
      expect(sub.stats()).toEqual({ delivered: 2, dropped: 0, poison: 3, parked: 0 });
      expect(sub.err()).toBeUndefined();
    } finally {
      await sub.close();
    }
  });
});
