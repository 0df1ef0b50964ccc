// Poison messages: every row of the bad-message table (test/harness/bad-messages.ts) placed
// raw into the journal and onto live subjects. Each is reported with its journal sequence,
// subject and the typed error its row names, never yielded, and what follows it still
// arrives; a row the decoder strips (an extra envelope key) arrives without the key.
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  connect,
  createEvent,
  DeliveryMismatchError,
  EventDecodeError,
  EventValidationError,
  newId,
  type Delivery,
  type DeliveryFailure,
  type Jetloop,
  type JetloopEvent,
  type SubscriptionReport,
} from "../../src/index.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";
import { waitFor } from "../harness/async.js";
import { Reader } from "../harness/reader.js";
import { messageCount } from "../harness/stream-state.js";
import { badMessages, type Expectation, MUTATIONS, SECRET_ARGUMENT, SECRET_GRANT } from "../harness/bad-messages.js";

type Poison = Extract<SubscriptionReport, { kind: "poison" }>;

let bus: Jetloop;
let jsm: JetStreamManager;
/** Everything jetloop logged (JSON lines). */
const logs: string[] = [];
/** The reader's decode cap: the table's oversize rows exceed it, the stream accepts them. */
// Room for an event nested past the reader's depth limit (10,000) under the cap.
const CAP = 65_536;
const SEED = 20_251_130;
const session = newId();
const loop = newId();
const step = () => ({ sessionId: session, loopId: loop, turnId: newId(), stepId: newId() });

/** The journal as the tests see it: good events (and stripped ones) and poison, interleaved. */
const goods: { seq: number; eventId: string }[] = [];
interface Planted {
  readonly name: string;
  readonly seq: number;
  readonly subject: string;
  readonly expect: Expectation;
}
const planted: Planted[] = [];

/** The error a poison report carries is the one its row of the table names. */
function checkError(name: string, subject: string, want: Expectation, e: DeliveryFailure) {
  expect(e.code, name).toBe(want.code);
  if (want.reason) {
    expect(e, name).toBeInstanceOf(EventDecodeError);
    expect((e as EventDecodeError).reason, name).toBe(want.reason);
  }
  if (want.field) {
    expect(e, name).toBeInstanceOf(EventValidationError);
    expect((e as EventValidationError).field, name).toBe(want.field);
  }
  if (want.code === "DELIVERY_INVALID") {
    expect(e, name).toBeInstanceOf(DeliveryMismatchError);
    expect((e as DeliveryMismatchError).subject, name).toBe(subject);
    expect((e as DeliveryMismatchError).expected, name).not.toBe(subject);
  }
  expect(e.message, name).not.toContain(SECRET_GRANT);
  expect(e.message, name).not.toContain(SECRET_ARGUMENT);
}


beforeAll(async () => {
  // Provisioned with the default cap, so the stream stores what the reader's cap refuses.
  const namespace = uniqueNamespace();
  const provisioner = await connect({ servers: natsServers(), namespace });
  await provisioner.provision();
  await provisioner.close();
  bus = await connect({
    servers: natsServers(),
    namespace,
    maxEventBytes: CAP,
    logger: pino({ level: "warn" }, { write: (line: string) => void logs.push(line) }),
  });
  jsm = await jetstreamManager(bus.nc);
  const js = jetstream(bus.nc);

  const good = async () => {
    const r = await bus.publish(createEvent("PermissionDecided", { ...step(), toolExecutionId: newId(), effect: "approve" }));
    goods.push({ seq: r.journalSeq, eventId: r.eventId });
  };
  // Every row of the table, raw into the journal between good events; a stripped row is a good event.
  await good();
  for (const b of badMessages(bus.namespace, step(), 1, SEED, CAP).filter((x) => x.channel === "journal")) {
    const ack = await js.publish(b.subject, b.data);
    if (b.expect === "stripped") goods.push({ seq: ack.seq, eventId: b.eventId });
    else planted.push({ name: b.kind, seq: ack.seq, subject: b.subject, expect: b.expect });
    if (planted.length % 4 === 0) await good();
  }
  await good();
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
    checkError(want.name, want.subject, want.expect, p.error);
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
    expect(planted.map((p) => p.name)).toEqual(MUTATIONS.filter((m) => m.expect !== "stripped").map((m) => m.name));
    expect(await messageCount(jsm, bus.stream)).toBe(planted.length + goods.length);
    // The good events after the last poison prove delivery goes on past it.
    expect(goods.at(-1)!.seq).toBeGreaterThan(planted.at(-1)!.seq);
  });

  it("an ordered subscription reports each with its journal sequence, subject and typed error, and never yields it", async () => {
    const reports: SubscriptionReport[] = [];
    const sub = await bus.subscribeEvents({ sessions: [session], enduring: { loops: [loop] } }, { start: "all", onReport: (r) => reports.push(r) });
    try {
      const r = new Reader(sub);
      const got = await r.take(goods.length);
      checkGoods(got);
      // Nothing further to yield: an ordered read goes in journal order, and the last taken is
      // the journal's last message (a good one after every poison), so every poison was
      // read and reported before it (below), and nothing is left after it.
      expect(got.at(-1)!.journalSeq).toBe((await jsm.streams.info(bus.stream)).state.last_seq);
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
    expect(logs.join("\n")).not.toContain(SECRET_GRANT.slice(0, 10));
    expect(logs.join("\n")).not.toContain(SECRET_ARGUMENT.slice(0, 10));
  });

  it("a durable subscription reports, parks and terminates each: never redelivered, not even to a restarted consumer", async () => {
    const durable = `poison-${newId().slice(-8)}`;
    const reports: SubscriptionReport[] = [];
    // The goods are acked after all are taken: an ack wait shorter than a loaded machine's take would redeliver them.
    const options = { durable, backoffMs: [1500], onReport: (r: SubscriptionReport) => reports.push(r) };
    const sub = await bus.subscribeEvents({ sessions: [session], enduring: { loops: [loop] } }, options);
    try {
      const r = new Reader(sub);
      const got = await r.take(goods.length);
      for (const d of got) await d.ack();
      checkGoods(got);
      checkReports(reports);
      // Nothing is outstanding once the consumer has nothing pending and nothing
      // unacknowledged, so nothing can come back: the server's state, not a quiet 3.5 s.
      // Every delivery counted (a redelivery too): one per event, none again.
      const ci = await waitFor(
        "the durable's consumer settled",
        async () => {
          const info = await jsm.consumers.info(bus.stream, durable);
          return info.num_ack_pending === 0 && info.num_pending === 0 && info;
        },
        15_000,
        50,
      );
      expect(ci.delivered.consumer_seq).toBe(goods.length + planted.length);
      expect(reports.filter((x) => x.kind === "poison")).toHaveLength(planted.length);
      expect(ci.num_redelivered).toBe(0);
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
      // The restarted consumer has nothing to deliver: nothing pending, nothing unacknowledged,
      // no delivery since the first consumer's last.
      const info = await jsm.consumers.info(bus.stream, durable);
      expect([info.num_pending, info.num_ack_pending, info.delivered.consumer_seq]).toEqual([0, 0, goods.length + planted.length]);
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
    const logged = logs.length;
    for await (const d of bus.session(session).replay({ enduring: { loops: [loop] } }, { onReport: (r) => reports.push(r) })) got.push(d);
    checkGoods(got);
    checkReports(reports);
    // The live subscription's journal path: the same report and the same log line.
    const lines = logs.slice(logged).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.filter((l) => l.msg === "skipped a malformed message" && l.component === "replay").map((l) => l.journalSeq)).toEqual(planted.map((p) => p.seq));
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
  it("every row of the table is reported with journal sequence 0 and skipped; valid previews (and stripped ones) still arrive", async () => {
    const s = newId();
    const l = newId();
    const coords = { sessionId: s, loopId: l, turnId: newId(), stepId: newId() };
    const reports: SubscriptionReport[] = [];
    const sub = await bus.subscribeEvents({ sessions: [s], ephemeral: { loops: [l] } }, { onReport: (r) => reports.push(r) });
    try {
      const before = createEvent("ToolCallStarted", { ...coords, toolExecutionId: newId(), toolName: "before" });
      const after = createEvent("ToolCallStarted", { ...coords, toolExecutionId: newId(), toolName: "after" });
      const bad = badMessages(bus.namespace, coords, 1, SEED, CAP).filter((x) => x.channel === "live");
      const poisonous = bad.filter((b) => b.expect !== "stripped");
      const stripped = bad.filter((b) => b.expect === "stripped").map((b) => b.eventId);
      await bus.publish(before);
      for (const b of bad) bus.nc.publish(b.subject, b.data);
      await bus.publish(after);
      const got = await new Reader(sub).take(2 + stripped.length);
      expect(got.map((d) => [d.event.eventId, d.journalSeq])).toEqual([before.eventId, ...stripped, after.eventId].map((id) => [id, 0]));
      // Each poison was read before `after` (one connection, in order); its report is awaited, not a pause.
      await waitFor("every poison reported", () => reports.filter((r) => r.kind === "poison").length >= poisonous.length, 5000, 10);
      const poison = reports.filter((r): r is Poison => r.kind === "poison");
      expect(poison.map((p) => [p.journalSeq, p.subject])).toEqual(poisonous.map((b) => [0, b.subject]));
      for (const [i, p] of poison.entries()) {
        const b = poisonous[i]!;
        if (b.expect !== "stripped") checkError(b.kind, b.subject, b.expect, p.error);
      }
      expect(sub.stats()).toEqual({ delivered: 2 + stripped.length, dropped: 0, poison: poisonous.length, parked: 0 });
      expect(sub.err()).toBeUndefined();
    } finally {
      await sub.close();
    }
  });
});
