// The gateway's session status against the Go catalog's fold (looprig/harness
// pkg/sessionstore/catalog.go, applyEvent), on sessions of Go-written events
// (go-written-events.jsonl, internal events included). The expectations are stated as
// "the last event of such a kind" over the whole sequence, not as a fold, and checked on
// every prefix of the Go-written session and on generated subsets in any order.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeEvent, unmarshalEvent, type JetloopEvent } from "../../src/index.js";
import { compareKeyed, keyed } from "../../src/catalog/entry.js";
import { StatusFold } from "../../src/catalog/fold.js";

/** The list's order (the catalog index's comparison) over status-shaped rows. */
function sortSessions<T extends { sessionId: string; updatedAt: string | undefined }>(list: T[]): T[] {
  return list
    .map((s) => ({ s, k: keyed({ sessionId: s.sessionId, lastActiveAt: s.updatedAt, state: undefined, title: "", createdAt: undefined }) }))
    .sort((a, b) => compareKeyed(a.k, b.k))
    .map((x) => x.s);
}
import { readJsonl, type GoWritten } from "../conformance/go-oracle.js";

const S = "6f1c2a3b-4d5e-4f60-8a7b-000000000101";
const written = readJsonl<GoWritten>("go-written-events.jsonl").map((w) => unmarshalEvent(w.json));
const session = written.filter((e) => e.sessionId === S);

type Seq = readonly { readonly seq: number; readonly e: JetloopEvent }[];

const fold = (events: Seq) => {
  const f = new StatusFold();
  for (const { seq, e } of events) f.apply({ event: e, journalSeq: seq, shard: 0, subject: "", data: encodeEvent(e) });
  return f;
};
const numbered = (events: readonly JetloopEvent[]): Seq => events.map((e, i) => ({ seq: i + 1, e }));

/** A GateResolved counts when an earlier GateOpened of the same gate came from the same loop. */
function counts(events: Seq, i: number): boolean {
  const { e } = events[i]!;
  if (e.type !== "GateResolved") return ["SessionStarted", "TurnStarted", "GateOpened", "TurnDone", "TurnFailed", "TurnInterrupted", "StepDone", "LoopStarted", "SessionStopped"].includes(e.type);
  return events.slice(0, i).some(({ e: o }) => o.type === "GateOpened" && o.gate?.id === e.gateId && (o.loopId ?? "") === (e.loopId ?? ""));
}

function lastIndex(events: Seq, pred: (i: number) => boolean): number {
  for (let i = events.length - 1; i >= 0; i--) if (pred(i)) return i;
  return -1;
}

/** The status the Go catalog's rules give, each field as "the last event that sets it". */
function expected(events: Seq) {
  const is = (i: number, ...types: string[]) => types.includes(events[i]!.e.type) && counts(events, i);
  const seqAt = (i: number) => (i < 0 ? undefined : events[i]!.seq);
  const lastTurn = lastIndex(events, (i) => is(i, "TurnDone", "TurnFailed"));
  const lastStep = lastIndex(events, (i) => is(i, "StepDone"));
  const lastStateful = lastIndex(events, (i) => is(i, "SessionStarted", "TurnStarted", "GateOpened", "GateResolved", "TurnDone", "TurnFailed", "TurnInterrupted", "SessionStopped"));
  // The active turn: the last TurnStarted not followed by a TurnDone (TurnFailed/Interrupted keep it).
  const started = lastIndex(events, (i) => is(i, "TurnStarted"));
  const cleared = lastIndex(events, (i) => is(i, "TurnDone"));
  const activeAt = (upTo: number) => {
    const s = lastIndex(events.slice(0, upTo), (i) => is(i, "TurnStarted"));
    const d = lastIndex(events.slice(0, upTo), (i) => is(i, "TurnDone"));
    return s > d ? events[s]!.e.turnId : undefined;
  };
  const opened = lastIndex(events, (i) => is(i, "GateOpened"));
  const resolved = lastIndex(events, (i) => is(i, "GateResolved"));
  const last = lastStateful < 0 ? undefined : events[lastStateful]!.e;
  const state =
    last === undefined
      ? undefined
      : (
          {
            SessionStarted: "idle",
            TurnStarted: "running",
            GateOpened: "waiting_on_gate",
            GateResolved: activeAt(lastStateful) ? "running" : "idle",
            TurnDone: "idle",
            TurnFailed: "failed",
            TurnInterrupted: "interrupted",
            SessionStopped: "stopped",
          } as Record<string, string>
        )[last.type];
  const activity = lastIndex(events, (i) => is(i, "TurnStarted", "StepDone"));
  const sessionStarted = lastIndex(events, (i) => is(i, "SessionStarted"));
  return {
    state,
    lastJournalSeq: Math.max(0, ...events.filter((_, i) => counts(events, i)).map((x) => x.seq)),
    activeTurnId: started > cleared ? events[started]!.e.turnId : undefined,
    waitingGateId: opened > resolved && opened >= 0 ? (events[opened]!.e as Extract<JetloopEvent, { type: "GateOpened" }>).gate?.id : undefined,
    lastTurnSeq: seqAt(lastTurn),
    lastStepSeq: seqAt(lastStep),
    createdAt: sessionStarted < 0 ? undefined : events[sessionStarted]!.e.createdAt,
    lastActiveAt: activity < 0 ? undefined : events[activity]!.e.createdAt,
  };
}

function actual(events: Seq) {
  const f = fold(events);
  return {
    state: f.state,
    lastJournalSeq: f.lastJournalSeq,
    activeTurnId: f.activeTurnId,
    waitingGateId: f.waitingGateId,
    lastTurnSeq: f.lastTurn?.journalSeq,
    lastStepSeq: f.lastStep?.journalSeq,
    createdAt: f.createdAt,
    lastActiveAt: f.lastActiveAt,
  };
}

describe("session status as the Go catalog folds it", () => {
  it("folds the Go-written session: stopped, last_journal_seq from an internal event, TurnInterrupted not a last_turn", () => {
    const events = numbered(session);
    const f = fold(events);
    expect(f.state).toBe("stopped");
    // Line 58 is an internal SessionStopped: it still advances the cursor.
    expect(events[57]!.e).toMatchObject({ type: "SessionStopped", visibility: "internal" });
    expect(f.lastJournalSeq).toBe(58);
    // Lines 43-45 are TurnInterrupted after the last TurnFailed (42): last_turn stays 42.
    expect(f.lastTurn?.journalSeq).toBe(42);
    expect(f.lastStep?.journalSeq).toBe(31);
    // GateResolved 25 and 27 name gates never opened: not applied.
    expect(actual(events)).toEqual(expected(events));
  });

  it("agrees with the rules on every prefix of the Go-written session", () => {
    const events = numbered(session);
    for (let n = 0; n <= events.length; n++) expect(actual(events.slice(0, n)), `prefix ${n}`).toEqual(expected(events.slice(0, n)));
  });

  it("agrees with the rules on any subset of the Go-written events in any order", () => {
    fc.assert(
      fc.property(fc.shuffledSubarray(session), (picked) => {
        const events = numbered(picked);
        expect(actual(events)).toEqual(expected(events));
      }),
      { numRuns: 500 },
    );
  });

  it("applies a GateResolved only from the loop whose GateOpened opened that gate", () => {
    const opened = session.find((e) => e.type === "GateOpened" && e.loopId !== undefined)!;
    const resolved = session.find((e) => e.type === "GateResolved" && opened.type === "GateOpened" && e.gateId === opened.gate?.id)!;
    const started = session.find((e) => e.type === "TurnStarted")!;
    const foreign = { ...resolved, loopId: "6f1c2a3b-4d5e-4f60-8a7b-0000000002ff" } as JetloopEvent;
    const f = fold(numbered([started, opened, foreign]));
    expect([f.state, f.waitingGateId, f.lastJournalSeq]).toEqual(["waiting_on_gate", opened.type === "GateOpened" ? opened.gate?.id : "", 2]);
    const g = fold(numbered([started, opened, foreign, resolved]));
    expect([g.state, g.waitingGateId, g.lastJournalSeq]).toEqual(["running", undefined, 4]);
  });
});

describe("the session list's order", () => {
  // Go sorts by time.Time: the instant, whatever offset and fraction length each was
  // written with. The Go-written data itself mixes them (Z and -04:30, no fraction to nine digits).
  const ns = 1_000_000_000n;
  /** An instant (ns since the epoch) as Go's RFC3339Nano writes it at `offsetMin`. */
  function goTime(instant: bigint, offsetMin: number): string {
    const local = instant + BigInt(offsetMin) * 60n * ns;
    const secs = local / ns;
    const frac = (local % ns).toString().padStart(9, "0").replace(/0+$/, "");
    const base = new Date(Number(secs) * 1000).toISOString().slice(0, 19);
    const sign = offsetMin < 0 ? "-" : "+";
    const a = Math.abs(offsetMin);
    const zone = offsetMin === 0 ? "Z" : `${sign}${String(Math.floor(a / 60)).padStart(2, "0")}:${String(a % 60).padStart(2, "0")}`;
    return `${base}${frac === "" ? "" : `.${frac}`}${zone}`;
  }
  const base = 1_795_947_330n * ns;
  const entry = fc.record({
    id: fc.uuid(),
    // Instants close together (the same second, the same millisecond) and hours apart.
    at: fc.oneof(fc.bigInt({ min: 0n, max: 3n * ns }), fc.bigInt({ min: 0n, max: 48n * 3600n * ns }), fc.constantFrom(0n, 500_000_000n, 123_000_000n, 123_456_789n)),
    offset: fc.constantFrom(0, -270, 330, 60, -720, 840),
    present: fc.boolean(),
  });

  it("is last activity descending by instant, then session id ascending, for every offset and fraction length", () => {
    fc.assert(
      fc.property(fc.array(entry, { minLength: 2, maxLength: 8 }), (entries) => {
        const list = entries.map((x) => ({
          sessionId: x.id,
          updatedAt: x.present ? goTime(base + x.at, x.offset) : undefined,
          state: undefined,
          lastJournalSeq: 0,
          activeTurnId: undefined,
          waitingGateId: undefined,
          lastTurn: undefined,
          lastStep: undefined,
          createdAt: undefined,
          instant: x.present ? base + x.at : -1n,
        }));
        const expected = [...list].sort((a, b) => (a.instant === b.instant ? (a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0) : a.instant > b.instant ? -1 : 1));
        expect(sortSessions([...list]).map((s) => [s.sessionId, s.updatedAt])).toEqual(expected.map((s) => [s.sessionId, s.updatedAt]));
      }),
      { numRuns: 500 },
    );
  });
});
