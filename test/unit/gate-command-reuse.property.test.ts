// A command id is bound to the answer it was accepted with. Its repeat (the same answer)
// gets the first outcome; the same id carrying another answer — another gate, another
// control, another reason, a new gate of the same tool execution — is no repeat: it is
// refused with COMMAND_INVALID and takes nothing, never told "ok" with the first gate's
// outcome while the gate it names stays open.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { GateBook, type GateState } from "../../src/commands/gate-rules.js";
import { type Answer, encodeAnswer } from "../../src/commands/protocol.js";
import { STEP_COORDS } from "./fixtures.js";

const uid = (n: number) => `0190f2a1-5b3c-7d4e-8f60-${(0xe00 + n).toString(16).padStart(12, "0")}`;
const COMMAND = uid(999);

function gate(n: number, execution: number): GateState {
  return { gateId: uid(n), kind: "permission", turnId: STEP_COORDS.turnId, stepId: STEP_COORDS.stepId, toolExecutionId: uid(500 + execution), controls: ["Approve", "Approve always for this workspace", "Deny"] };
}

const answerArb = fc.record({
  byExecution: fc.boolean(),
  control: fc.constantFrom("Approve", "Approve always for this workspace", "Deny"),
  reason: fc.option(fc.constantFrom("ok", "no"), { nil: undefined }),
});
type Shape = typeof answerArb extends fc.Arbitrary<infer T> ? T : never;
const answerTo = (g: GateState, s: Shape): Answer => ({
  kind: "permission",
  commandId: COMMAND,
  ...(s.byExecution ? { toolExecutionId: g.toolExecutionId } : { gateId: g.gateId }),
  action: s.control,
  ...(s.reason === undefined ? {} : { reason: s.reason }),
});
/** A repeat: the same control and reason, naming the first gate (by its id, or by its tool execution even once a newer gate guards it). */
const repeats = (first: Shape, second: Shape, g1: GateState, g2: GateState) =>
  first.control === second.control && first.reason === second.reason && (g2 === g1 || (second.byExecution && g2.toolExecutionId === g1.toolExecutionId));

describe("a command id reused for another answer", () => {
  it("is refused while the first is in flight and after it settled; a true repeat gets the first outcome", () => {
    fc.assert(
      fc.property(answerArb, answerArb, fc.boolean(), fc.constantFrom("other gate", "same execution, new gate", "same gate"), fc.boolean(), (first, second, settled, target, sameShape) => {
        const book = new GateBook<GateState>();
        const g1 = gate(1, 1);
        book.open(g1);
        const a1 = answerTo(g1, first);
        const v1 = book.judge(encodeAnswer(a1));
        if (!("resolve" in v1)) throw new Error("the first answer was not taken");
        if (settled) book.settle(g1, v1.resolution, 7);
        const g2 = target === "other gate" ? gate(2, 2) : target === "same execution, new gate" ? gate(3, 1) : g1;
        if (g2 !== g1) book.open(g2);
        const shape = sameShape ? first : second;
        const v2 = book.judge(encodeAnswer(answerTo(g2, shape)));
        if (repeats(first, shape, g1, g2)) {
          if (settled) expect(v2).toMatchObject({ reply: { status: "ok", gateId: g1.gateId, duplicate: true } });
          else expect(v2).toEqual({ wait: COMMAND });
          return;
        }
        expect(v2).toMatchObject({ reply: { status: "refused", code: "COMMAND_INVALID" } });
        // The gate it named is untouched: still open to a fresh command.
        if (g2 !== g1) expect(book.stateOf(g2.gateId)).toBe("open");
      }),
      { numRuns: 1000 },
    );
  });
});
