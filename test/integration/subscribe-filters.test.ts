// Subscription filters against a real server: events of 3 sessions × 3 loops, interleaved,
// with session-scoped and internal events. Each subscription gets exactly its selection,
// event by event, and the server sends it nothing else (consumer info, message counts).
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  connect,
  createEvent,
  defaultRegistry,
  newId,
  type Delivery,
  type EventFilter,
  type Jetloop,
  type JetloopEvent,
  type Subscription,
} from "../../src/index.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";
import { Reader } from "../harness/reader.js";
import { consumerCount } from "../harness/stream-state.js";

// --- reading a subscription without losing a delivery to a timed-out read ------------


// --- the traffic -----------------------------------------------------------------------

interface Published {
  readonly event: JetloopEvent;
  readonly journalSeq: number;
  readonly subject: string;
  readonly enduring: boolean;
  readonly sessionId: string;
  readonly loopId: string | undefined;
  readonly family: string;
  readonly type: string;
  readonly internal: boolean;
}

interface Coords {
  sessionId: string;
  loopId: string;
  turnId: string;
  stepId: string;
}

/** One round of a loop's activity: the seed's approval sequence and a gate. */
function round(c: Coords, r: number, last: boolean): JetloopEvent[] {
  const step = { ...c, stepId: newId() };
  const { stepId: _s, ...turn } = step;
  const toolExecutionId = newId();
  const gateId = newId();
  const out: JetloopEvent[] = [];
  if (r === 0) {
    out.push(createEvent("LoopStarted", { sessionId: c.sessionId, loopId: c.loopId }));
    out.push(createEvent("TurnStarted", { ...turn, turnIndex: 1 }));
  }
  out.push(
    createEvent("PermissionRequested", {
      ...step,
      toolExecutionId,
      request: { toolName: "bash", requirements: [{ kind: "fs.read", match: "/tmp", description: "read /tmp" }] },
    }),
    createEvent("GateOpened", { ...step, gate: {
        id: gateId,
        kind: "harness.permission",
        resolver: "loop",
        subject: { toolExecutionId },
        prompt: { controls: [{ action: "Approve", label: "Approve" }, { action: "Deny", label: "Deny" }] },
      },
    }),
    createEvent("GateResolved", { ...step, gateId, resolver: "loop", reason: "answered", action: "Approve" }),
    createEvent("PermissionDecided", { ...step, toolExecutionId, effect: "approve" }),
    createEvent("ToolCallStarted", { ...step, toolExecutionId, toolName: "bash", summary: `round ${r}` }),
    createEvent("ToolCallCompleted", { ...step, toolExecutionId, resultPreview: "ok" }),
    createEvent("StepDone", { ...step, messages: [{ role: "assistant" }, { role: "tool", toolUseId: "toolu_01", blocks: [{ type: "text", text: "ok" }] }] }),
  );
  if (r === 1) {
    // Internal events: the loop's bookkeeping, for trusted subscribers only.
    out.push(createEvent("LoopIdle", { sessionId: c.sessionId, loopId: c.loopId, visibility: "internal" }));
    out.push(createEvent("ToolCallCompleted", { ...step, toolExecutionId, resultPreview: "internal detail", visibility: "internal" }));
    out.push(createEvent("UserInputRequested", { ...step, toolExecutionId, question: "which branch?", choices: ["main", "dev"] }));
  }
  if (last) out.push(createEvent("TurnDone", { ...turn, turnIndex: 1 }));
  return out;
}

const ROUNDS = 3;
const ns = uniqueNamespace();
const S = [newId(), newId(), newId()];
const L = S.map(() => [newId(), newId(), newId()]);

let pub: Jetloop;
let subBus: Jetloop;
let liveBus: Jetloop;
let jsm: JetStreamManager;
const published: Published[] = [];

interface Case {
  readonly name: string;
  readonly filter: EventFilter;
  /** Which published events travel to this subscription (subject-level, before visibility). */
  readonly wire: (p: Published) => boolean;
  readonly includeInternal?: boolean;
  /** Subscribe through `bus.session(id)` rather than with `sessions` in the filter. */
  readonly viaSession?: string;
  sub?: Subscription<JetloopEvent>;
  reader?: Reader<Delivery<JetloopEvent>>;
  /** The connection's received-message count before the traffic (ephemeral-only case). */
  inMsgsBefore?: number;
}

const inSession = (p: Published, s: string) => p.sessionId === s;
const loopOrSession = (p: Published, loops: string[]) => p.loopId === undefined || loops.includes(p.loopId);

const cases: Case[] = [
  {
    name: "one loop (session handle)",
    filter: { sessions: [S[0]!], enduring: { loops: [L[0]![0]!] }, ephemeral: { loops: [L[0]![0]!] } },
    wire: (p) => inSession(p, S[0]!) && loopOrSession(p, [L[0]![0]!]),
    viaSession: S[0]!,
  },
  {
    name: "two loops of two sessions",
    filter: { enduring: { loops: [L[0]![1]!, L[1]![2]!] }, ephemeral: { loops: [L[0]![1]!, L[1]![2]!] } },
    wire: (p) => loopOrSession(p, [L[0]![1]!, L[1]![2]!]),
  },
  {
    name: "all loops of one session",
    filter: { sessions: [S[1]!], enduring: "all", ephemeral: "all" },
    wire: (p) => inSession(p, S[1]!),
  },
  {
    name: "enduring of one loop, ephemeral of another",
    filter: { enduring: { loops: [L[2]![0]!] }, ephemeral: { loops: [L[2]![1]!] } },
    wire: (p) => (p.enduring ? loopOrSession(p, [L[2]![0]!]) : loopOrSession(p, [L[2]![1]!])),
  },
  {
    name: "types only",
    filter: { enduring: "all", ephemeral: "all", types: ["PermissionDecided", "ToolCallCompleted", "SessionStopped"] },
    wire: (p) => ["PermissionDecided", "ToolCallCompleted", "SessionStopped"].includes(p.type),
  },
  {
    name: "families only",
    filter: { enduring: "all", families: ["gate", "turn"] },
    wire: (p) => p.enduring && ["gate", "turn"].includes(p.family),
  },
  {
    name: "several sessions, one family and one type",
    filter: { sessions: [S[0]!, S[2]!], enduring: "all", families: ["session"], types: ["StepDone"] },
    wire: (p) => p.enduring && (inSession(p, S[0]!) || inSession(p, S[2]!)) && (p.family === "session" || p.type === "StepDone"),
  },
  {
    name: "internal events for a trusted caller",
    filter: { sessions: [S[0]!], enduring: { loops: [L[0]![1]!] }, ephemeral: { loops: [L[0]![1]!] }, includeInternal: true },
    wire: (p) => inSession(p, S[0]!) && loopOrSession(p, [L[0]![1]!]),
    includeInternal: true,
  },
];

/** Ephemeral only, on a connection of its own: its received-message count is the proof. */
const liveOnly: Case = {
  name: "ephemeral only",
  filter: { ephemeral: { loops: [L[2]![2]!] } },
  wire: (p) => !p.enduring && loopOrSession(p, [L[2]![2]!]),
};

/** Publishes an event and records it: every case's expectation is read from this record. */
async function record(event: JetloopEvent): Promise<void> {
  const r = await pub.publish(event);
  const def = defaultRegistry.get(event.type)!;
  published.push({
    event,
    journalSeq: r.journalSeq,
    subject: r.subject,
    enduring: def.class === "enduring",
    sessionId: event.sessionId,
    loopId: event.loopId,
    family: def.family,
    type: event.type,
    internal: event.visibility === "internal",
  });
}

/**
 * Absence proven by order: after everything published so far, the case publishes a copy
 * (a fresh id) of the last public event of each class it selects. A subscription delivers each
 * class in publish order, so an event it should not have had comes before that copy, and
 * reading until the copies is all the waiting there is: no window of silence.
 */
async function readSelection(c: Case): Promise<{ got: Delivery<JetloopEvent>[]; expected: Published[] }> {
  const visible = (p: Published) => c.wire(p) && (!p.internal || c.includeInternal === true);
  for (const enduring of [true, false]) {
    // A public one: the internal events' count is part of what a case checks.
    const last = published.filter((p) => visible(p) && !p.internal && p.enduring === enduring).at(-1);
    if (last !== undefined) await record({ ...last.event, eventId: newId() });
  }
  const expected = published.filter(visible);
  return { got: await c.reader!.take(expected.length), expected };
}

beforeAll(async () => {
  pub = await connect({ servers: natsServers(), namespace: ns });
  await pub.provision();
  subBus = await connect({ servers: natsServers(), namespace: ns });
  liveBus = await connect({ servers: natsServers(), namespace: ns });
  jsm = await jetstreamManager(pub.nc);

  for (const c of cases) {
    if (c.viaSession !== undefined) {
      const { sessions: _sessions, ...filter } = c.filter;
      c.sub = await subBus.session(c.viaSession).subscribeEvents(filter, { start: "all" });
    } else {
      c.sub = await subBus.subscribeEvents(c.filter, { start: "all" });
    }
    c.reader = new Reader(c.sub);
  }
  liveOnly.sub = await liveBus.subscribeEvents(liveOnly.filter);
  liveOnly.reader = new Reader(liveOnly.sub);
  liveOnly.inMsgsBefore = liveBus.nc.stats().inMsgs;

  for (const s of S) await record(createEvent("SessionStarted", { sessionId: s }));
  // Interleave: every loop of every session takes a turn in each round.
  const coords = S.flatMap((s, i) => L[i]!.map((l) => ({ sessionId: s, loopId: l, turnId: newId(), stepId: newId() })));
  for (let r = 0; r < ROUNDS; r++) {
    const batches = coords.map((c) => round(c, r, r === ROUNDS - 1));
    for (let k = 0; batches.some((b) => k < b.length); k++) {
      for (const b of batches) if (k < b.length) await record(b[k]!);
    }
  }
  for (const s of S) await record(createEvent("SessionStopped", { sessionId: s }));
});

afterAll(async () => {
  for (const c of [...cases, liveOnly]) await c.sub?.close();
  await subBus?.close();
  await liveBus?.close();
  // This file's stream goes with it.
  await jsm?.streams.delete(pub.stream).catch(() => undefined);
  await pub?.close();
});

describe("the traffic", () => {
  it("has enduring and ephemeral, loop- and session-scoped, public and internal events of every session and loop", () => {
    expect(published.length).toBeGreaterThan(200);
    const enduring = published.filter((p) => p.enduring);
    // Journal sequence = stream sequence, one per enduring event, in publish order.
    expect(enduring.map((p) => p.journalSeq)).toEqual(enduring.map((_, i) => i + 1));
    expect(published.filter((p) => !p.enduring).every((p) => p.journalSeq === 0)).toBe(true);
    for (const [i, s] of S.entries()) {
      for (const l of L[i]!) expect(published.filter((p) => p.loopId === l).length).toBeGreaterThan(20);
      expect(published.filter((p) => p.sessionId === s && p.loopId === undefined)).toHaveLength(2);
    }
    expect(published.filter((p) => p.internal && p.enduring)).toHaveLength(9);
    expect(published.filter((p) => p.internal && !p.enduring)).toHaveLength(9);
  });
});

describe("each subscription receives exactly its selection", () => {
  it.each(cases.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const { got, expected: visible } = await readSelection(c);
    const onWire = published.filter(c.wire);
    // Both visibility cases are exercised: this selection's wire carries internal events.
    if (c.name.startsWith("one loop") || c.includeInternal) expect(onWire.filter((p) => p.internal)).toHaveLength(2);
    const enduring = visible.filter((p) => p.enduring);
    const ephemeral = visible.filter((p) => !p.enduring);
    expect(enduring.length + ephemeral.length, "the case selects something").toBeGreaterThan(0);
    if (c.includeInternal) expect(visible.some((p) => p.internal)).toBe(true);

    expect(got.length).toBe(enduring.length + ephemeral.length);

    // Enduring: in journal order, each the very event stored at that sequence.
    const gotEnduring = got.filter((d) => d.journalSeq > 0);
    expect(gotEnduring.map((d) => d.event.eventId)).toEqual(enduring.map((p) => p.event.eventId));
    expect(gotEnduring.map((d) => d.journalSeq)).toEqual(enduring.map((p) => p.journalSeq));
    expect(gotEnduring.map((d) => d.subject)).toEqual(enduring.map((p) => p.subject));
    for (const [i, d] of gotEnduring.entries()) {
      expect(d.event).toEqual(enduring[i]!.event);
      if (i > 0) expect(d.journalSeq).toBeGreaterThan(gotEnduring[i - 1]!.journalSeq);
    }
    // Ephemeral: in publish order, journal sequence 0.
    const gotEphemeral = got.filter((d) => d.journalSeq === 0);
    expect(gotEphemeral.map((d) => d.event.eventId)).toEqual(ephemeral.map((p) => p.event.eventId));
    expect(gotEphemeral.map((d) => d.event)).toEqual(ephemeral.map((p) => p.event));
    if (!c.includeInternal) {
      expect(got.every((d) => d.event.visibility === "public")).toBe(true);
      const internal = new Set(onWire.filter((p) => p.internal).map((p) => p.event.eventId));
      expect(got.filter((d) => internal.has(d.event.eventId))).toEqual([]);
    }

    // Every live subscription follows the feed: the stream has no consumer for any of them.
    if (c.filter.enduring !== undefined) expect(await consumerCount(jsm, pub.stream)).toBe(0);
    expect(c.sub!.stats()).toEqual({ delivered: got.length, dropped: 0, poison: 0, parked: 0 });
    expect(c.sub!.err()).toBeUndefined();
  });

  it("ephemeral only: the connection receives the selected loop's previews and not one message more", async () => {
    const { got, expected: visible } = await readSelection(liveOnly);
    const onWire = published.filter(liveOnly.wire);
    expect(onWire.length).toBeGreaterThan(visible.length);
    expect(got.map((d) => d.event.eventId)).toEqual(visible.map((p) => p.event.eventId));
    expect(got.every((d) => d.journalSeq === 0 && d.event.loopId === L[2]![2])).toBe(true);
    // Publishing touched every loop; this connection saw only its loop's messages.
    expect(liveBus.nc.stats().inMsgs - liveOnly.inMsgsBefore!).toBe(onWire.length);
    expect(published.length).toBeGreaterThan(onWire.length * 5);
  });

  it("journal sequences are stream sequences: the stream holds each delivered event at its sequence", async () => {
    const c = cases[1]!;
    const enduring = published.filter((p) => p.enduring && c.wire(p) && !p.internal);
    for (const p of enduring) {
      const sm = await jsm.streams.getMessage(pub.stream, { seq: p.journalSeq });
      expect(sm?.seq).toBe(p.journalSeq);
      expect(sm?.subject).toBe(p.subject);
      expect(sm?.json<{ event_id: string }>().event_id).toBe(p.event.eventId);
    }
    const info = await jsm.streams.info(pub.stream);
    expect(info.state.last_seq).toBe(published.filter((p) => p.enduring).length);
    expect(info.state.messages).toBe(published.filter((p) => p.enduring).length);
  });
});
