// Replay: a bounded, ordered read of the journal that ends, taking the filter of
// subscribeEvents and a range.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  connect,
  createEvent,
  newId,
  OptionsError,
  type Delivery,
  type EventFilter,
  type Jetloop,
  type JetloopEvent,
  type ReplayOptions,
} from "../../src/index.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";
import { waitFor } from "../harness/async.js";
import { consumerCount } from "../harness/stream-state.js";

interface Stored {
  readonly seq: number;
  readonly eventId: string;
  readonly sessionId: string;
  readonly loopId: string | undefined;
  readonly type: string;
  readonly internal: boolean;
}

let bus: Jetloop;
const S1 = newId();
const S2 = newId();
const S3 = newId();
const A = newId();
const B = newId();
const C = newId();
const journal: Stored[] = [];

async function put(event: JetloopEvent): Promise<Stored> {
  const r = await bus.publish(event);
  const s = {
    seq: r.journalSeq,
    eventId: event.eventId,
    sessionId: event.sessionId,
    loopId: event.loopId,
    type: event.type,
    internal: event.visibility === "internal",
  };
  journal.push(s);
  return s;
}

function loopEvents(sessionId: string, loopId: string, i: number): JetloopEvent[] {
  const step = { sessionId, loopId, turnId: newId(), stepId: newId() };
  const toolExecutionId = newId();
  const gateId = newId();
  return [
    createEvent("PermissionDecided", { ...step, toolExecutionId, effect: i % 2 === 0 ? "approve" : "deny" }),
    createEvent("GateOpened", { ...step, gate: { id: gateId, kind: "harness.permission", resolver: "loop", subject: { toolExecutionId } } }),
    createEvent("GateResolved", { ...step, gateId, resolver: "loop", reason: "answered" }),
    createEvent("StepDone", { ...step, messages: [{ role: "assistant" }, { role: "tool", toolUseId: `toolu_${i}`, blocks: [{ type: "text", text: `result ${i}` }] }] }),
  ];
}

/** Collects a replay, timing how long it took to end. */
async function collect(filter: EventFilter, options?: ReplayOptions): Promise<{ got: Delivery<JetloopEvent>[]; ms: number }> {
  const t = Date.now();
  const got: Delivery<JetloopEvent>[] = [];
  for await (const d of bus.replay(filter, options)) got.push(d);
  return { got, ms: Date.now() - t };
}

/** Session S1's journal events, narrowed by `more`. */
const s1 = (more: Omit<EventFilter, "sessions"> = {}): EventFilter => ({ enduring: "all", ...more, sessions: [S1] });

/** What `call` threw synchronously (undefined when it returned). */
function thrown(call: () => unknown): unknown {
  try {
    call();
  } catch (e) {
    return e;
  }
  return undefined;
}

const seqs = (xs: readonly { seq?: number; journalSeq?: number }[]) => xs.map((x) => x.seq ?? x.journalSeq);

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace() });
  await bus.provision();
  await put(createEvent("SessionStarted", { sessionId: S1 }));
  await put(createEvent("SessionStarted", { sessionId: S2 }));
  for (let i = 0; i < 4; i++) {
    for (const [s, l] of [
      [S1, A],
      [S2, C],
      [S1, B],
    ] as const) {
      for (const e of loopEvents(s, l, i)) await put(e);
    }
    if (i === 1) await put(createEvent("LoopIdle", { sessionId: S1, loopId: A, visibility: "internal" }));
  }
  await put(createEvent("SessionStopped", { sessionId: S1 }));
  // The journal ends with another session's event: replays of S1 must end without it.
  await put(createEvent("SessionStopped", { sessionId: S2 }));
});

afterAll(async () => {
  await (await bus?.jetstreamManager())?.streams.delete(bus.stream).catch(() => undefined);
  await bus?.close();
});

const visible = (s: Stored) => !s.internal;
const inS1 = (s: Stored) => s.sessionId === S1;

describe("replay", () => {
  it("the journal under test", () => {
    expect(seqs(journal)).toEqual(journal.map((_, i) => i + 1));
    expect(journal.at(-1)!.sessionId).toBe(S2);
  });

  it("one session, whole journal: every visible event of it, in order, with its journal sequence", async () => {
    const { got } = await collect(s1());
    const want = journal.filter((s) => inS1(s) && visible(s));
    expect(seqs(got)).toEqual(seqs(want));
    expect(got.map((d) => d.event.eventId)).toEqual(want.map((s) => s.eventId));
    expect(got.every((d) => d.event.sessionId === S1)).toBe(true);
  });

  it("a bounded range: fromSeq and toSeq inclusive", async () => {
    const from = 10;
    const to = 30;
    const { got } = await collect(s1(), { fromSeq: from, toSeq: to });
    expect(seqs(got)).toEqual(seqs(journal.filter((s) => inS1(s) && visible(s) && s.seq >= from && s.seq <= to)));
    expect(got[0]!.journalSeq).toBeGreaterThanOrEqual(from);
    expect(got.at(-1)!.journalSeq).toBeLessThanOrEqual(to);
  });

  it("the range bounds are sequences, matching or not", async () => {
    const target = journal.find((s) => inS1(s) && s.loopId === B && s.type === "StepDone")!;
    const exact = await collect(s1({ enduring: { loops: [B] }, types: ["StepDone"] }), { fromSeq: target.seq, toSeq: target.seq });
    expect(seqs(exact.got)).toEqual([target.seq]);
    const before = await collect(s1({ enduring: { loops: [B] }, types: ["StepDone"] }), { fromSeq: target.seq - 1, toSeq: target.seq - 1 });
    expect(before.got).toEqual([]);
  });

  it("loops: only the selected loops, plus session-scoped events", async () => {
    const { got } = await collect(s1({ enduring: { loops: [A] } }));
    const want = journal.filter((s) => inS1(s) && visible(s) && (s.loopId === A || s.loopId === undefined));
    expect(seqs(got)).toEqual(seqs(want));
    expect(got.some((d) => d.event.loopId === undefined)).toBe(true);
    expect(got.some((d) => d.event.loopId === B)).toBe(false);
  });

  it("types and families narrow the range", async () => {
    const types = await collect(s1({ types: ["PermissionDecided", "SessionStopped"] }), { fromSeq: 5 });
    expect(seqs(types.got)).toEqual(seqs(journal.filter((s) => inS1(s) && s.seq >= 5 && ["PermissionDecided", "SessionStopped"].includes(s.type))));
    const families = await collect(s1({ enduring: { loops: [B] }, families: ["gate"] }));
    expect(seqs(families.got)).toEqual(seqs(journal.filter((s) => inS1(s) && s.loopId === B && s.type.startsWith("Gate"))));
    expect(families.got).toHaveLength(8);
  });

  it("several sessions, and all sessions", async () => {
    const several = await collect({ enduring: "all", sessions: [S1, S2] }, { toSeq: 20 });
    expect(seqs(several.got)).toEqual(seqs(journal.filter((s) => visible(s) && s.seq <= 20)));
    const all = await collect({ enduring: "all", sessions: "all" });
    expect(seqs(all.got)).toEqual(seqs(journal.filter(visible)));
    const handle = await collect({ enduring: "all", sessions: [S2] });
    const viaHandle: number[] = [];
    for await (const d of bus.session(S2).replay({ enduring: "all" })) viaHandle.push(d.journalSeq);
    expect(viaHandle).toEqual(seqs(handle.got));
  });

  it("internal events only for a trusted caller", async () => {
    const internal = journal.filter((s) => s.internal);
    expect(internal).toHaveLength(1);
    const plain = await collect(s1({ enduring: { loops: [A] } }));
    expect(seqs(plain.got)).not.toContain(internal[0]!.seq);
    const trusted = await collect(s1({ enduring: { loops: [A] }, includeInternal: true }));
    expect(seqs(trusted.got)).toEqual(seqs(journal.filter((s) => inS1(s) && (s.loopId === A || s.loopId === undefined))));
    expect(trusted.got.find((d) => d.journalSeq === internal[0]!.seq)!.event.visibility).toBe("internal");
  });

  // "At once" is against what a replay that waited would take: its pull's expiry (2 s for a
  // pooled read consumer, 5 s otherwise, journal-range.ts). Under 2 s holds on a loaded
  // machine and still tells the two apart.
  it("an empty range ends at once", async () => {
    const cases: [EventFilter, ReplayOptions?][] = [
      [s1({ enduring: { loops: [newId()] }, types: ["StepDone"] })],
      [{ enduring: "all", sessions: [S3] }],
      [s1(), { fromSeq: journal.length, toSeq: journal.length }], // the last event is S2's
      [s1(), { fromSeq: journal.length + 1 }],
    ];
    for (const [filter, options] of cases) {
      const { got, ms } = await collect(filter, options);
      expect(got, JSON.stringify([filter, options])).toEqual([]);
      expect(ms).toBeLessThan(2000);
    }
  });

  it("a range beyond the end ends with the last event", async () => {
    const { got, ms } = await collect(s1(), { fromSeq: 30, toSeq: journal.length + 1000 });
    expect(seqs(got)).toEqual(seqs(journal.filter((s) => inS1(s) && visible(s) && s.seq >= 30)));
    expect(ms).toBeLessThan(2000);
  });

  it("events published during the replay, beyond the snapshot, are not included", async () => {
    const snapshot = journal.length;
    const it = bus.replay(s1(), { batch: 2 });
    const got: number[] = [];
    const published: number[] = [];
    for await (const d of it) {
      got.push(d.journalSeq);
      if (got.length <= 3) {
        // More of the same session and loop, while the replay is under way.
        for (const e of loopEvents(S1, A, 9)) published.push((await put(e)).seq);
      }
    }
    expect(published).toHaveLength(12);
    expect(Math.min(...published)).toBeGreaterThan(snapshot);
    expect(got).toEqual(seqs(journal.filter((s) => inS1(s) && visible(s) && s.seq <= snapshot)));
    // They are in the journal, for the next replay.
    const { got: next } = await collect(s1(), { fromSeq: snapshot + 1 });
    expect(seqs(next)).toEqual(published);
  });

  it("breaking out early ends the replay cleanly", async () => {
    const got: number[] = [];
    for await (const d of bus.replay(s1(), { batch: 4 })) {
      got.push(d.journalSeq);
      if (got.length === 3) break;
    }
    expect(got).toEqual(seqs(journal.filter((s) => inS1(s) && visible(s))).slice(0, 3));
  });

  it("leaves no consumer on the stream, however it ended", async () => {
    await collect(s1());
    await collect({ enduring: "all", sessions: [S3] }); // empty
    for await (const _d of bus.replay(s1(), { batch: 2 })) break;
    const jsm = await bus.jetstreamManager();
    // Deleted as each replay ends, not after the server's inactivity timeout (minutes).
    await waitFor("the replay consumers to be deleted", async () => (await consumerCount(jsm, bus.stream)) === 0, 5_000);
  });

  it("takes the filter of subscribeEvents: the same filter replays what a subscription from the start delivers", async () => {
    const filter: EventFilter = { enduring: { loops: [A] }, sessions: [S1], types: ["PermissionDecided", "StepDone"] };
    const { got } = await collect(filter);
    expect(got.length).toBeGreaterThan(0);
    const sub = await bus.subscribeEvents(filter, { start: "all" });
    const followed: number[] = [];
    for await (const d of sub) if (followed.push(d.journalSeq) === got.length) break;
    expect(followed).toEqual(seqs(got));
  });

  it("checks filter and options at the call, before any read (OptionsError naming the option)", () => {
    const refused: [EventFilter, ReplayOptions | undefined, string][] = [
      [s1(), { fromSeq: 0 }, "fromSeq"],
      [s1(), { toSeq: -1 }, "toSeq"],
      [s1(), { fromSeq: 1.5 }, "fromSeq"],
      [s1(), { fromSeq: 20, toSeq: 10 }, "toSeq"],
      [s1(), { batch: 0 }, "batch"],
      [s1(), { sessionId: S1 } as ReplayOptions, "sessionId"],
      [s1(), { onReport: "log" } as unknown as ReplayOptions, "onReport"],
      [{ enduring: "all", sessionId: S1 } as EventFilter, undefined, "filter"],
      [{ sessions: [S1] }, undefined, "enduring"],
      [{ enduring: "all", sessions: ["not-a-uuid"] }, undefined, "sessions"],
      [{ enduring: { loops: [A.toUpperCase()] } }, undefined, "enduring.loops"],
      [s1({ types: [] }), undefined, "types"],
      [s1({ types: ["NoSuchType"] }), undefined, "types"],
    ];
    for (const [filter, options, option] of refused) {
      const e = thrown(() => bus.replay(filter, options));
      expect(e, JSON.stringify([filter, options])).toBeInstanceOf(OptionsError);
      expect((e as OptionsError).option).toBe(option);
    }
  });

  it("refuses a filter with an ephemeral part: previews are never stored", () => {
    for (const [filter, option] of [
      [{ enduring: "all", ephemeral: "all" }, "ephemeral"],
      [{ ephemeral: { loops: [A] } }, "ephemeral"],
      [s1({ types: ["StepDone", "ToolCallStarted"] }), "types"],
    ] as [EventFilter, string][]) {
      const e = thrown(() => bus.replay(filter));
      expect(e, JSON.stringify(filter)).toBeInstanceOf(OptionsError);
      expect(e).toMatchObject({ code: "OPTIONS_INVALID", option });
      expect((e as Error).message).toContain("previews are never stored in the journal");
      expect(() => bus.session(S1).replay(filter)).toThrow(/previews are never stored in the journal/);
    }
  });
});
