// One binding rule, three readers: the ledger, the tool activity projection and the
// gateway's status fold must agree on which GateOpened and GateResolved count, for every
// order of opens (including a gate id opened again, by its own loop or a forger on another
// loop's subjects) and resolutions from the right and wrong loop and session.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { StatusFold } from "../../src/catalog/fold.js";
import { createEvent, encodeEvent, GateLedger, ToolActivityProjection } from "../../src/index.js";
import { STEP_COORDS } from "./fixtures.js";

const uid = (n: number) => `0190f2a1-5b3c-7d4e-8f60-${(0xd00 + n).toString(16).padStart(12, "0")}`;
const LOOPS = [STEP_COORDS.loopId, uid(100)];
const SESSIONS = [STEP_COORDS.sessionId, uid(200)];
const tx = (gate: number) => uid(gate + 50);

const opened = (gate: number, loop: number) =>
  createEvent("GateOpened", { ...STEP_COORDS, loopId: LOOPS[loop]!, gate: { id: uid(gate), kind: "harness.permission", resolver: "loop", subject: { toolExecutionId: tx(gate) } } });
const resolved = (gate: number, loop: number, session: number) =>
  createEvent("GateResolved", { ...STEP_COORDS, sessionId: SESSIONS[session]!, loopId: LOOPS[loop]!, gateId: uid(gate), resolver: "loop", reason: "answered", action: "Approve" });

describe("the gate binding rule, as the ledger, the projection and the status fold read it", () => {
  it("a gate id opened again by another loop takes nothing over; all three agree on every gate", () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant("open" as const), gate: fc.nat(3), loop: fc.nat(1) }),
      fc.record({ kind: fc.constant("resolve" as const), gate: fc.nat(4), loop: fc.nat(1), session: fc.constantFrom(0, 0, 1) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const ledger = new GateLedger();
        const tools = new ToolActivityProjection();
        const status = new StatusFold();
        const model = new Map<number, { loop: number; resolved: boolean }>();
        let waiting: string | undefined;
        let lastCounted = 0;
        let seq = 0;
        for (const s of steps) {
          seq++;
          const e = s.kind === "open" ? opened(s.gate, s.loop) : resolved(s.gate, s.loop, s.session);
          const v = ledger.apply(e);
          const { violations = [] } = tools.apply({ event: e, journalSeq: seq });
          // The status fold reads one session's journal.
          const inSession = s.kind === "open" || s.session === 0;
          if (inSession) status.apply({ event: e, journalSeq: seq, shard: 0, subject: "", data: encodeEvent(e) });
          const g = model.get(s.gate);
          let counts: boolean;
          if (s.kind === "open") {
            counts = !g || g.loop === s.loop;
            expect(v.kind).toBe(counts ? "opened" : "violation");
            if (counts) {
              model.set(s.gate, { loop: s.loop, resolved: false });
              waiting = uid(s.gate);
            } else expect(v).toMatchObject({ violation: { rule: "other_loop", record: "GateOpened" } });
          } else {
            counts = g !== undefined && s.session === 0 && s.loop === g.loop && !g.resolved;
            if (!g) expect(v.kind).toBe("unmatched");
            else expect(v.kind).toBe(counts ? "resolved" : "violation");
            if (counts) {
              g!.resolved = true;
              waiting = undefined;
            }
          }
          expect(violations.length).toBe(v.kind === "violation" ? 1 : 0);
          if (inSession && counts) lastCounted = seq;
          expect(status.waitingGateId).toBe(waiting);
          expect(status.lastJournalSeq).toBe(lastCounted);
          for (const [n, m] of model) {
            // The call is the opener's; no other loop got one from a forged GateOpened.
            expect(tools.get(LOOPS[1 - m.loop]!, tx(n))).toBeUndefined();
            const gate = tools.get(LOOPS[m.loop]!, tx(n))?.permissionGate;
            expect(gate?.id).toBe(uid(n));
            expect(gate?.resolution !== undefined).toBe(m.resolved);
          }
          for (const loop of [0, 1]) {
            const open = [...model].filter(([, m]) => !m.resolved && m.loop === loop).map(([n]) => uid(n));
            expect(ledger.open({ loopId: LOOPS[loop]! }).map((x) => x.gateId).sort()).toEqual(open.sort());
          }
        }
      }),
      { numRuns: 400 },
    );
  }, 30_000);
});
