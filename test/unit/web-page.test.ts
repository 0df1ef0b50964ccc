// The web page's pure parts, from their rules: ids and times in words, the gateway's
// failures read from any reply, the badge's state from its two links, the retry delays,
// and the session model (loops, turns, calls; previews kept after a call is finalized).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createEvent, newId } from "../../src/index.js";
import { GATEWAY_ERRORS } from "../../src/gateway/envelope.js";
import { describeFailure, failureOf, isNotProvisioned, unreachable } from "../../src/web/api.js";
import { ago, clock, duration, parseTime, shortId, words } from "../../src/web/format.js";
import { backoffMs, BADGE_TEXT, overall, type LinkState } from "../../src/web/link.js";
import { SessionModel } from "../../src/web/session-model.js";

const STATES: LinkState[] = ["live", "connecting", "reconnecting", "disconnected", "not_provisioned"];
const T0 = Date.parse("2026-12-01T10:00:00Z");

describe("ids and times", () => {
  it("a short id is the id's last 8 characters: ids that differ there stay apart, a short one is kept whole", () => {
    fc.assert(
      fc.property(fc.uuid(), fc.uuid(), (a, b) => {
        expect(shortId(a)).toBe(`…${a.slice(-8)}`);
        if (a.slice(-8) !== b.slice(-8)) expect(shortId(a)).not.toBe(shortId(b));
      }),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 9 }), (s) => {
        expect(shortId(s)).toBe(s);
      }),
    );
    // Two version-7 ids made together share their head (the time), not their tail.
    const [x, y] = [newId(), newId()];
    expect(shortId(x)).not.toBe(shortId(y));
  });

  it("'ago' picks one unit by range; an unknown or unreadable time is empty", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 400 * 86_400 }), (s) => {
        const text = ago(new Date(T0).toISOString(), T0 + s * 1000);
        if (s < 5) expect(text).toBe("just now");
        else if (s < 60) expect(text).toBe(`${s} s ago`);
        else if (s < 3600) expect(text).toBe(`${Math.floor(s / 60)} min ago`);
        else if (s < 86_400) expect(text).toBe(`${Math.floor(s / 3600)} h ago`);
        else expect(text).toBe(`${Math.floor(s / 86_400)} d ago`);
      }),
    );
    for (const bad of [undefined, "", "yesterday", "2026-13-45T99:00:00Z"]) {
      expect(ago(bad, T0)).toBe("");
      expect(clock(bad)).toBe("");
      expect(parseTime(bad)).toBeUndefined();
    }
  });

  it("a clock time is HH:MM:SS of the local time; a duration is in ms, s, or min and s; none backwards", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 * 86_400_000 }), fc.integer({ min: 0, max: 7_200_000 }), (off, ms) => {
        const from = new Date(T0 + off);
        const to = new Date(T0 + off + ms);
        const d = from;
        const pad = (n: number) => String(n).padStart(2, "0");
        expect(clock(from.toISOString())).toBe(`${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`);
        const text = duration(from.toISOString(), to.toISOString());
        if (ms < 1000) expect(text).toBe(`${ms} ms`);
        else if (Math.round(ms / 1000) < 60) expect(text).toBe(`${Math.round(ms / 1000)} s`);
        else expect(text).toMatch(/^\d+ min \d{1,2} s$/);
        if (ms > 0) expect(duration(to.toISOString(), from.toISOString())).toBe("");
      }),
    );
  });

  it("words: every underscore becomes a space", () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        expect(words(s)).toBe(s.split("_").join(" "));
      }),
    );
  });
});

describe("failures in words", () => {
  it("an error envelope is read as it is: status, code, message, retryable", () => {
    fc.assert(
      fc.property(fc.integer({ min: 400, max: 599 }), fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), fc.boolean(), (status, code, message, retryable) => {
        const f = failureOf(status, JSON.stringify({ error: { code, message, retryable } }));
        expect(f).toEqual({ status, code, message, retryable });
        expect(describeFailure(f)).toBe(`${message} (HTTP ${status}, ${code})${retryable ? "; safe to retry" : ""}`);
      }),
    );
  });

  it("any other reply (plain text, HTML, a partial envelope, nothing) is described from its status, never empty", () => {
    const other = fc.oneof(
      fc.string(),
      fc.constant("404 page not found\n"),
      fc.constant("<html><body>Bad Gateway</body></html>"),
      fc.constant('{"error":{"code":"x"}}'),
      fc.constant('{"error":{"code":1,"message":"m"}}'),
      fc.constant('{"error":null}'),
      fc.constant("null"),
    );
    fc.assert(
      fc.property(fc.integer({ min: 400, max: 599 }), other, (status, body) => {
        let envelope: boolean;
        try {
          const e = (JSON.parse(body) as { error?: { code?: unknown; message?: unknown } } | null)?.error;
          envelope = typeof e?.code === "string" && typeof e.message === "string" && e.message !== "";
        } catch {
          envelope = false;
        }
        fc.pre(!envelope);
        const f = failureOf(status, body);
        expect(f.status).toBe(status);
        expect(f.code).toBe(`http_${status}`);
        expect(f.message.trim()).not.toBe("");
        expect(f.message.length).toBeLessThanOrEqual(200);
        expect(f.retryable).toBe(status === 503);
      }),
    );
  });

  it("not provisioned: the code not_provisioned or a message that says to run `jetloop provision`, nothing else", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.constantFrom("jetloop provision", "JETLOOP PROVISION", "Jetloop Provision"), (before, after, phrase) => {
        expect(isNotProvisioned({ status: 500, code: "internal", message: `${before}${phrase}${after}`, retryable: false })).toBe(true);
      }),
    );
    expect(isNotProvisioned({ status: 404, code: "not_provisioned", message: "stream not found", retryable: false })).toBe(true);
    // The gateway's own table: its not_provisioned entry is the one that says so.
    for (const [status, code, message] of Object.values(GATEWAY_ERRORS)) {
      expect(isNotProvisioned({ status, code, message, retryable: false })).toBe(code === "not_provisioned");
    }
    expect(isNotProvisioned(unreachable(new TypeError("Failed to fetch")))).toBe(false);
  });

  it("a request that got no answer is retryable and says the gateway could not be reached", () => {
    fc.assert(
      fc.property(fc.string(), (m) => {
        const f = unreachable(new Error(m));
        expect(f).toMatchObject({ status: 0, code: "unreachable", retryable: true });
        expect(describeFailure(f)).toMatch(/^the gateway could not be reached/);
      }),
    );
  });
});

describe("the badge", () => {
  it("shows the worse of the two links; live only when every open link is live", () => {
    const order = (s: LinkState) => STATES.indexOf(s);
    fc.assert(
      fc.property(fc.constantFrom(...STATES), fc.option(fc.constantFrom(...STATES), { nil: undefined }), (list, stream) => {
        const s = overall(list, stream);
        expect(s).toBe(stream === undefined || order(list) >= order(stream) ? list : stream);
        expect(s === "live").toBe(list === "live" && (stream === undefined || stream === "live"));
        expect(BADGE_TEXT[s]).toBe(s.replace("_", " "));
      }),
    );
  });

  it("retry delays double from 1 s and stop at 15 s", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }), (n) => {
        expect(backoffMs(n)).toBe(Math.min(15_000, 1000 * 2 ** (n - 1)));
        expect(backoffMs(n + 1)).toBeGreaterThanOrEqual(backoffMs(n));
      }),
    );
  });
});

// --- the session model --------------------------------------------------------------

interface ToolPlan {
  readonly id: string;
  readonly preview: string;
  readonly finalized: boolean;
}
interface TurnPlan {
  readonly turnId: string;
  readonly stepId: string;
  readonly tools: ToolPlan[];
  readonly end: "TurnDone" | "TurnFailed" | "TurnInterrupted" | undefined;
}
interface LoopPlan {
  readonly loopId: string;
  readonly turns: TurnPlan[];
}

const toolPlan = fc.record({ id: fc.uuid({ version: 7 }), preview: fc.string({ minLength: 1, maxLength: 40 }), finalized: fc.boolean() });
const turnPlan = fc.record({
  turnId: fc.uuid({ version: 7 }),
  stepId: fc.uuid({ version: 7 }),
  tools: fc.uniqueArray(toolPlan, { maxLength: 3, selector: (t) => t.id }),
  end: fc.constantFrom("TurnDone", "TurnFailed", "TurnInterrupted", undefined),
});
const loopPlan = fc.record({ loopId: fc.uuid({ version: 7 }), turns: fc.uniqueArray(turnPlan, { minLength: 1, maxLength: 3, selector: (t) => t.turnId }) });
const sessionPlan = fc.uniqueArray(loopPlan, { minLength: 1, maxLength: 3, selector: (l) => l.loopId });

/** One loop's deliveries in order: a turn's start, each call approved, run live and (maybe) finalized, the turn's end. */
function loopDeliveries(sessionId: string, l: LoopPlan) {
  const out: { event: { type: string }; live: boolean }[] = [];
  for (const t of l.turns) {
    const c = { sessionId, loopId: l.loopId, turnId: t.turnId, stepId: t.stepId };
    out.push({ event: createEvent("TurnStarted", { sessionId, loopId: l.loopId, turnId: t.turnId }), live: false });
    for (const tool of t.tools) {
      out.push({ event: createEvent("PermissionRequested", { ...c, toolExecutionId: tool.id, request: { toolName: "bash" } }), live: false });
      out.push({ event: createEvent("PermissionDecided", { ...c, toolExecutionId: tool.id, effect: "approve" }), live: false });
      out.push({ event: createEvent("ToolCallStarted", { ...c, toolExecutionId: tool.id, toolName: "bash", summary: `run ${tool.id.slice(-4)}` }), live: true });
      out.push({ event: createEvent("ToolCallCompleted", { ...c, toolExecutionId: tool.id, resultPreview: tool.preview }), live: true });
    }
    if (t.tools.some((x) => x.finalized)) {
      out.push({ event: createEvent("StepDone", { ...c, messages: [{ role: "assistant", blocks: [{ type: "text", text: "done" }] }] }), live: false });
    }
    if (t.end === "TurnFailed") out.push({ event: createEvent("TurnFailed", { sessionId, loopId: l.loopId, turnId: t.turnId, err: { kind: "tool", message: "tool crashed" } }), live: false });
    else if (t.end) out.push({ event: createEvent(t.end, { sessionId, loopId: l.loopId, turnId: t.turnId }), live: false });
  }
  return out;
}

/** The loops' deliveries interleaved as `picks` says (each loop's own order kept), journal sequences in arrival order. */
function interleave(queues: ReturnType<typeof loopDeliveries>[], picks: number[]) {
  const qs = queues.map((q) => [...q]);
  const out: { event: { type: string }; journalSeq: number }[] = [];
  let seq = 0;
  let p = 0;
  while (qs.some((q) => q.length > 0)) {
    const open = qs.filter((q) => q.length > 0);
    const d = open[(picks[p++ % Math.max(1, picks.length)] ?? 0) % open.length]!.shift()!;
    out.push({ event: d.event, journalSeq: d.live ? 0 : ++seq });
  }
  return out;
}

describe("the session model", () => {
  it("groups every call under its loop and turn in the order first seen, turns with their outcome, and keeps each preview after the call settles", () => {
    fc.assert(
      fc.property(sessionPlan, fc.array(fc.nat(), { maxLength: 50 }), (loops, picks) => {
        const sessionId = newId();
        const deliveries = interleave(
          loops.map((l) => loopDeliveries(sessionId, l)),
          picks,
        );
        const m = new SessionModel();
        for (const d of deliveries) m.apply(d);
        const view = m.loops();
        const firstSeen = [...new Set(deliveries.map((d) => (d.event as { loopId?: string }).loopId))];
        expect(view.map((l) => l.loopId)).toEqual(firstSeen);
        for (const plan of loops) {
          const l = view.find((v) => v.loopId === plan.loopId)!;
          expect(l.turns.map((t) => t.turnId)).toEqual(plan.turns.map((t) => t.turnId));
          for (const [i, tp] of plan.turns.entries()) {
            const t = l.turns[i]!;
            expect(t.outcome).toBe(tp.end === undefined ? undefined : { TurnDone: "done", TurnFailed: "failed", TurnInterrupted: "interrupted" }[tp.end]);
            expect(t.error).toBe(tp.end === "TurnFailed" ? "tool crashed" : undefined);
            expect(t.startedAt).toBeDefined();
            expect(t.endedAt !== undefined).toBe(tp.end !== undefined);
            expect(t.tools.map((a) => a.toolExecutionId)).toEqual(tp.tools.map((x) => x.id));
            const stepDone = tp.tools.some((x) => x.finalized);
            for (const a of t.tools) {
              const planned = tp.tools.find((x) => x.id === a.toolExecutionId)!;
              if (stepDone) expect(a.status).toBe("finalized");
              // What the tool printed stays on the page, whatever the journal did since.
              expect(m.preview(a)?.resultPreview).toBe(planned.preview);
            }
          }
        }
        expect(m.lastJournalSeq).toBe(Math.max(0, ...deliveries.map((d) => d.journalSeq)));
      }),
      { numRuns: 150 },
    );
  });

  it("an enduring delivery at or below the last journal sequence changes nothing (a replayed frame after a reconnect)", () => {
    fc.assert(
      fc.property(sessionPlan, (loops) => {
        const sessionId = newId();
        const deliveries = interleave(
          loops.map((l) => loopDeliveries(sessionId, l)),
          [0],
        );
        const m = new SessionModel();
        for (const d of deliveries) m.apply(d);
        const before = JSON.stringify(m.loops());
        for (const d of deliveries.filter((x) => x.journalSeq > 0)) expect(m.apply(d)).toBe(false);
        expect(JSON.stringify(m.loops())).toBe(before);
      }),
      { numRuns: 50 },
    );
  });

  it("resetLive forgets live status but keeps the previews the page saw", () => {
    const sessionId = newId();
    const plan: LoopPlan = { loopId: newId(), turns: [{ turnId: newId(), stepId: newId(), tools: [{ id: newId(), preview: "42 passed", finalized: false }], end: undefined }] };
    const m = new SessionModel();
    for (const d of interleave([loopDeliveries(sessionId, plan)], [0])) m.apply(d);
    const [a] = m.tools.list();
    expect(a!.status).toBe("completed");
    m.resetLive();
    const [b] = m.tools.list();
    expect(b!.status).toBe("approved");
    expect(m.preview(b!)).toEqual({ summary: `run ${b!.toolExecutionId.slice(-4)}`, resultPreview: "42 passed", isError: false });
  });
});
