// Scenario 12 (RELIABILITY.md): the answer path under pressure — raced answers, repeats of
// one command id in flight, timeouts racing answers, an answer too large to journal,
// close() with requests pending, a forged cross-loop resolution, a loop actor killed with
// its gate open and closed by its successor.
import { describe, expect, it } from "vitest";
import { answerPathScenario } from "../../harness/reliability/scenarios/answer-path.js";
import { defaultContext } from "../../harness/reliability/scenarios/common.js";
import { saveRecord } from "../../harness/reliability/save.js";

const GATES = 40;
const RETRIES = 20;

describe("reliability: the answer path under pressure", () => {
  it("gives each gate exactly one outcome, tells everyone the truth, settles on close and closes orphans", async () => {
    const r = await answerPathScenario(defaultContext(), { gates: GATES, retries: RETRIES });
    saveRecord(r.record);

    // N raced gates: exactly one accepted answer each, every loser GATE_RESOLVED, one record of each, loop = journal.
    expect(r.raced).toEqual({ gates: GATES, accepted: GATES, resolvedRefusals: 2 * GATES, other: {}, gateResolved: GATES, permissionDecided: GATES, mismatched: 0 });
    // Timeouts racing answers: one outcome per gate (the timeout's or one answer); every other answer GATE_RESOLVED.
    expect(r.timeouts).toMatchObject({ gates: GATES, other: {}, gateResolved: GATES, permissionDecided: GATES, mismatched: 0 });
    expect(r.timeouts.accepted + r.timeouts.resolvedRefusals).toBe(3 * GATES);
    expect(r.timeouts.accepted).toBeLessThanOrEqual(GATES);
    // N concurrent repeats of one command id: every one gets the first outcome; one resolution.
    expect(r.retries).toEqual({ sent: RETRIES, ok: RETRIES, sameOutcome: RETRIES, firsts: 1, gateResolved: 1 });
    // Too large to journal: refused before anything is written; the gate stayed open and its timer fired.
    expect(r.oversized).toMatchObject({ code: "COMMAND_FAILED", journaledBefore: 0, gateResolved: 1, permissionDecided: 1 });
    expect(r.oversized.timedOutAfterMs).toBeGreaterThanOrEqual(r.oversized.deadlineMs - 50);
    // close() and bus.close(): every pending request settled with GateClosedError, each gate owner_closed in the journal.
    expect(r.close).toEqual({ pending: GATES, settled: GATES, typed: GATES, journaled: GATES, ownerClosed: GATES });
    expect(r.busClose).toEqual({ pending: 3, typed: 3, ownerClosed: 3 });
    // A GateResolved from another loop: not applied, reported; the loop actor still answers.
    expect(r.crossLoop).toEqual({ applied: false, violations: 1, statusAfter: "awaiting_approval", actorStillAnswers: true });
    // A killed actor's gate: answers told there is no listener; the successor closes it (abandoned); re-asked and approved.
    expect(r.orphan).toEqual({ killedAnswer: "COMMAND_NO_LISTENER", closed: 1, reason: "abandoned", statusAfterClose: "pending", statusAfterReask: "approved" });
  }, 120_000);
});
