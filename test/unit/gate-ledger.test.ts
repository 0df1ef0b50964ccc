// The binding rule on its own: which GateResolved closes which gate, for every order of
// opens and resolutions from the right and the wrong loop and session.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createEvent, GateLedger } from "../../src/index.js";
import { STEP_COORDS } from "./fixtures.js";

const uid = (n: number) => `0190f2a1-5b3c-7d4e-8f60-${(0xc00 + n).toString(16).padStart(12, "0")}`;
const LOOPS = [STEP_COORDS.loopId, uid(100)];
const SESSIONS = [STEP_COORDS.sessionId, uid(200)];

const opened = (gate: number, loop: number) =>
  createEvent("GateOpened", { ...STEP_COORDS, loopId: LOOPS[loop]!, gate: { id: uid(gate), kind: "harness.permission", resolver: "loop", subject: { toolExecutionId: uid(gate + 50) } } });
const resolved = (gate: number, loop: number, session: number) =>
  createEvent("GateResolved", { ...STEP_COORDS, sessionId: SESSIONS[session]!, loopId: LOOPS[loop]!, gateId: uid(gate), resolver: "loop", reason: "abandoned" });

describe("GateLedger", () => {
  it("closes a gate only by a resolution from its own session and loop, once; reports every other; lists the rest open", () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant("open" as const), gate: fc.nat(3), loop: fc.nat(1) }),
      fc.record({ kind: fc.constant("resolve" as const), gate: fc.nat(4), loop: fc.nat(1), session: fc.nat(1) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 30 }), (steps) => {
        const ledger = new GateLedger();
        const model = new Map<number, { loop: number; resolved: boolean }>();
        for (const s of steps) {
          if (s.kind === "open") {
            if (model.has(s.gate)) continue; // a gate id opens once
            model.set(s.gate, { loop: s.loop, resolved: false });
            expect(ledger.apply(opened(s.gate, s.loop)).kind).toBe("opened");
            continue;
          }
          const g = model.get(s.gate);
          const v = ledger.apply(resolved(s.gate, s.loop, s.session));
          if (!g) expect(v.kind).toBe("unmatched");
          else if (s.session !== 0) expect(v).toMatchObject({ kind: "violation", violation: { rule: "other_session" } });
          else if (s.loop !== g.loop) expect(v).toMatchObject({ kind: "violation", violation: { rule: "other_loop", loopId: LOOPS[s.loop] } });
          else if (g.resolved) expect(v).toMatchObject({ kind: "violation", violation: { rule: "already_resolved" } });
          else {
            expect(v.kind).toBe("resolved");
            g.resolved = true;
          }
        }
        for (const loop of [0, 1]) {
          const open = [...model].filter(([, g]) => !g.resolved && g.loop === loop).map(([n]) => uid(n));
          expect(ledger.open({ loopId: LOOPS[loop]! }).map((g) => g.gateId).sort()).toEqual(open.sort());
        }
      }),
      { numRuns: 500 },
    );
  });
});
