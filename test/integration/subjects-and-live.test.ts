// The subject scheme on a real nats-server: enduring events land on their journal
// subjects and are selectable by server-side filters; ephemeral events go to the live
// subjects, which the journal stream never captures, with the journal-sequence header.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  connect,
  createEvent,
  encodeEvent,
  filterSubject,
  HEADER_LAST_JOURNAL_SEQ,
  fromConnection,
  type Jetloop,
  newId,
  NO_LOOP,
  NotProvisionedError,
  parseEventSubject,
  unmarshalPreview,
  type JetloopEvent,
} from "../../src/index.js";
import { connectTest, natsServers, uniqueNamespace } from "../harness/context.js";
import { waitFor } from "../harness/async.js";
import { messageCount } from "../harness/stream-state.js";

const ns = uniqueNamespace();
let bus: Jetloop;
let nc: NatsConnection;
let jsm: JetStreamManager;
const extraStreams: string[] = [];

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: ns });
  await bus.provision();
  nc = await connectTest();
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  for (const s of [bus.stream, ...extraStreams]) await jsm?.streams.delete(s).catch(() => undefined);
  await bus?.close();
});

type Coords = { sessionId: string; loopId: string; turnId: string; stepId: string };
const coords = (sessionId = newId()): Coords => ({ sessionId, loopId: newId(), turnId: newId(), stepId: newId() });
const decided = (c: Coords) => createEvent("PermissionDecided", { ...c, toolExecutionId: newId(), effect: "deny" });
const started = (c: Coords) => createEvent("ToolCallStarted", { ...c, toolExecutionId: newId(), toolName: "bash", summary: "ls" });
const completed = (c: Coords) => createEvent("ToolCallCompleted", { ...c, toolExecutionId: newId(), resultPreview: "ok" });

/** Subjects and message counts the stream holds under `filter` (a server-side filter). */
async function storedSubjects(filter: string, stream = bus.stream): Promise<Record<string, number>> {
  return (await jsm.streams.info(stream, { subjects_filter: filter })).state.subjects ?? {};
}

/** Collects what a core subscription receives; resolves once the server has the subscription. */
async function collect(subject: string): Promise<{ sub: Subscription; got: Msg[] }> {
  const got: Msg[] = [];
  const sub = nc.subscribe(subject, {
    callback: (_err, m) => {
      got.push(m);
    },
  });
  await nc.flush();
  return { sub, got };
}

describe("journal subjects", () => {
  it("are {ns}.journal.{sessionId}.{loopId|_}.{family}.{Type}, parse back to the event's address, and select by session, loop, family and type", async () => {
    const s1 = newId();
    const a = coords(s1);
    const b = coords(s1);
    const other = coords();
    const events: JetloopEvent[] = [
      createEvent("SessionStarted", { sessionId: s1 }),
      createEvent("LoopStarted", { sessionId: s1, loopId: a.loopId }),
      createEvent("TurnStarted", { sessionId: s1, loopId: a.loopId, turnId: a.turnId }),
      decided(a),
      decided(a),
      createEvent("LoopStarted", { sessionId: s1, loopId: b.loopId }),
      decided(b),
      createEvent("SessionStopped", { sessionId: s1 }),
      createEvent("SessionStarted", { sessionId: other.sessionId }),
      decided(other),
    ];
    const results = await bus.publishAll(events);
    for (const [i, r] of results.entries()) {
      const e = events[i]!;
      const stored = await jsm.streams.getMessage(bus.stream, { seq: r.journalSeq });
      const parsed = parseEventSubject(ns, stored!.subject);
      expect(parsed).toEqual({ channel: "journal", sessionId: e.sessionId, loopId: "loopId" in e ? e.loopId : undefined, family: parsed.family, type: e.type, shard: { index: 0, count: 1 } });
      expect(stored!.subject).toBe(`${ns}.journal.${e.sessionId}.${"loopId" in e && e.loopId ? e.loopId : "_"}.${parsed.family}.${e.type}`);
    }

    const J = (s: string, l: string, f: string, t: string) => `${ns}.journal.${s}.${l}.${f}.${t}`;
    // Every filter is applied by the server; counts per subject.
    expect(await storedSubjects(filterSubject(ns, "journal", { sessionId: s1, loopId: a.loopId }))).toEqual({
      [J(s1, a.loopId, "loop", "LoopStarted")]: 1,
      [J(s1, a.loopId, "turn", "TurnStarted")]: 1,
      [J(s1, a.loopId, "tool", "PermissionDecided")]: 2,
    });
    expect(await storedSubjects(filterSubject(ns, "journal", { sessionId: s1, loopId: NO_LOOP }))).toEqual({
      [J(s1, "_", "session", "SessionStarted")]: 1,
      [J(s1, "_", "session", "SessionStopped")]: 1,
    });
    expect(await storedSubjects(filterSubject(ns, "journal", { sessionId: s1, family: "loop" }))).toEqual({
      [J(s1, a.loopId, "loop", "LoopStarted")]: 1,
      [J(s1, b.loopId, "loop", "LoopStarted")]: 1,
    });
    expect(await storedSubjects(filterSubject(ns, "journal", { sessionId: s1, family: "tool", type: "PermissionDecided" }))).toEqual({
      [J(s1, a.loopId, "tool", "PermissionDecided")]: 2,
      [J(s1, b.loopId, "tool", "PermissionDecided")]: 1,
    });
    const wholeSession = await storedSubjects(filterSubject(ns, "journal", { sessionId: s1 }));
    expect(Object.values(wholeSession).reduce((x, y) => x + y, 0)).toBe(8);
    expect(Object.keys(await storedSubjects(filterSubject(ns, "journal", { sessionId: other.sessionId })))).toHaveLength(2);
  });
});

describe("ephemeral events", () => {
  it("never enter the journal stream: its subjects cannot capture the live root", async () => {
    const c = coords();
    const before = await messageCount(jsm, bus.stream);
    const mixed = [started(c), decided(c), completed(c), started(c), decided(c), completed(c)];
    const results = await bus.publishAll(mixed);
    expect(results.map((r) => r.journalSeq === 0)).toEqual(mixed.map((e) => e.type.startsWith("ToolCall")));
    expect(await messageCount(jsm, bus.stream)).toBe(before + 2);
    expect(Object.keys(await storedSubjects(`${ns}.live.>`))).toEqual([]);
    expect(Object.keys(await storedSubjects(`${ns}.>`)).every((s) => s.startsWith(`${ns}.journal.`))).toBe(true);

    const live = results[0]!.subject;
    expect(live).toBe(`${ns}.live.${c.sessionId}.${c.loopId}.tool.ToolCallStarted`);
    expect((await jsm.streams.info(bus.stream)).config.subjects).toEqual([`${ns}.journal.>`]);
    // The server agrees: no stream stores the live subject; the journal stream stores the journal one.
    await expect(jsm.streams.find(live)).rejects.toThrow(/no stream matches subject/);
    expect(await jsm.streams.find(results[1]!.subject)).toBe(bus.stream);
  });

  it("reach a core subscriber on {ns}.live.> with their bytes and the loop's last journal sequence in Jetloop-Last-Journal-Seq", async () => {
    const a = coords();
    const b = coords(a.sessionId);
    const all = await collect(`${ns}.live.>`);
    const onlyA = await collect(filterSubject(ns, "live", { sessionId: a.sessionId, loopId: a.loopId }));
    try {
      const sent: [JetloopEvent, string][] = [];
      const send = async (e: JetloopEvent, expectedSeq: number) => {
        await bus.publish(e);
        sent.push([e, String(expectedSeq)]);
      };
      await send(started(a), 0); // nothing journaled in loop a yet
      const first = decided(a);
      const a1 = await bus.publish(first);
      await send(completed(a), a1.journalSeq);
      await send(started(b), 0); // loop b has its own last sequence
      const b1 = await bus.publish(decided(b));
      const a2 = await bus.publish(decided(a));
      await send(started(a), a2.journalSeq);
      await send(completed(b), b1.journalSeq);
      // An old event published again (a duplicate) does not move the loop back.
      expect(await bus.publish(first)).toMatchObject({ journalSeq: a1.journalSeq, duplicate: true });
      await send(completed(a), a2.journalSeq);

      await waitFor("the previews", () => all.got.length === sent.length, 5000, 10);
      expect(all.got.map((m) => m.subject)).toEqual(sent.map(([e]) => `${ns}.live.${e.sessionId}.${(e as { loopId: string }).loopId}.tool.${e.type}`));
      for (const [i, m] of all.got.entries()) {
        const [event, seq] = sent[i]!;
        expect(m.headers?.get(HEADER_LAST_JOURNAL_SEQ), `${i} ${event.type}`).toBe(seq);
        expect(new Uint8Array(m.data)).toEqual(encodeEvent(event));
        expect(unmarshalPreview(m.data)).toEqual(event);
      }
      // The loop filter is a subject filter: the loop-a subscriber sees loop a's previews only.
      await waitFor("loop a's previews", () => onlyA.got.length === sent.filter(([e]) => (e as { loopId: string }).loopId === a.loopId).length, 5000, 10);
      expect(onlyA.got.map((m) => unmarshalPreview(m.data).eventId)).toEqual(sent.filter(([e]) => (e as { loopId: string }).loopId === a.loopId).map(([e]) => e.eventId));
    } finally {
      all.sub.unsubscribe();
      onlyA.sub.unsubscribe();
    }
  });

  it("are captured by a journal stream widened by hand to the live subjects — provision reports that drift and undoes it", async () => {
    const own = fromConnection(nc, { namespace: uniqueNamespace() });
    extraStreams.push(own.stream);
    extraStreams.push(own.parked.stream);
    await own.provision();
    const cfg = (await jsm.streams.info(own.stream)).config;
    // Not {ns}.>: that would also capture the feed the stream republishes to, which the server refuses (a cycle).
    await jsm.streams.update(own.stream, { ...cfg, subjects: [`${own.namespace}.journal.>`, `${own.namespace}.live.>`] });
    const c = coords();

    // JetStream stores every core publish on a subject it captures: the guarantee rests on
    // the journal stream's subjects being {ns}.journal.> only.
    await own.publish(started(c));
    await waitFor("the widened stream to capture the preview", async () => (await messageCount(jsm, own.stream)) === 1, 5000, 20);
    expect(await own.provision({ mode: "verify" })).toMatchObject({
      stream: own.stream,
      action: "drifted",
      drift: [{ field: "subjects", live: [`${own.namespace}.journal.>`, `${own.namespace}.live.>`], desired: [`${own.namespace}.journal.>`], updatable: true }],
      parked: { action: "unchanged" },
    });
    expect((await own.provision()).action).toBe("updated");

    await own.publish(started(c));
    await own.publish(completed(c));
    const r = await own.publish(decided(c));
    expect(r.journalSeq).toBe(2);
    expect(await messageCount(jsm, own.stream)).toBe(2);
  });

  it("are captured by a separate namespace-wide stream, which the journal's appends refuse to use", async () => {
    const own = fromConnection(nc, { namespace: uniqueNamespace() });
    const wiretap = `${own.namespace}_wiretap`;
    extraStreams.push(wiretap);
    await jsm.streams.add({ name: wiretap, subjects: [`${own.namespace}.>`] });
    const c = coords();
    const preview = started(c);
    await own.publish(preview);
    await waitFor("the wiretap to capture the preview", async () => (await messageCount(jsm, wiretap)) === 1, 5000, 20);
    const captured = await jsm.streams.getMessage(wiretap, { seq: 1 });
    expect(captured!.subject).toBe(`${own.namespace}.live.${c.sessionId}.${c.loopId}.tool.ToolCallStarted`);
    expect(captured!.data).toEqual(encodeEvent(preview));
    expect(captured!.header.get(HEADER_LAST_JOURNAL_SEQ)).toBe("0");

    // An enduring event is not journaled into a stream that is not the events stream.
    const err = await own.publish(decided(c)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotProvisionedError);
    expect(err).toMatchObject({ code: "NOT_PROVISIONED", stream: own.stream });
    expect(await messageCount(jsm, wiretap)).toBe(1);
  });
});
