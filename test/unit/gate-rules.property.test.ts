// The gate rules under every interleaving: gates opened, answered (by new and repeated
// command ids), timed out, closed, and resolutions whose writes fail before or after the
// GateResolved. A model of what the journal holds is checked against the book after each
// step: one resolution per gate, ever; a claim at a time; truthful refusal codes; a
// command id bound to its first outcome.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { GateBook, type GateState, type Resolution } from "../../src/commands/gate-rules.js";
import { type Answer, encodeAnswer, type Reply } from "../../src/commands/protocol.js";
import { newId } from "../../src/index.js";
import { ID } from "./fixtures.js";

const GATES = 4;
const COMMANDS = 6;

type Op =
  | { op: "open"; gate: number }
  | { op: "answer"; gate: number; command: number; effect: "approve" | "deny"; byExecution: boolean }
  | { op: "timeout"; gate: number }
  | { op: "closeAll" }
  | { op: "finish"; which: number; write: "ok" | "fails" | "decisionFails" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("open" as const), gate: fc.nat(GATES - 1) }),
  fc.record({
    op: fc.constant("answer" as const),
    gate: fc.nat(GATES), // GATES: a gate never opened
    command: fc.nat(COMMANDS - 1),
    effect: fc.constantFrom("approve" as const, "deny" as const),
    byExecution: fc.boolean(),
  }),
  fc.record({ op: fc.constant("timeout" as const), gate: fc.nat(GATES - 1) }),
  fc.constant({ op: "closeAll" as const }),
  fc.record({ op: fc.constant("finish" as const), which: fc.nat(8), write: fc.constantFrom("ok" as const, "ok" as const, "fails" as const, "decisionFails" as const) }),
);

interface Claim {
  readonly gate: GateState;
  readonly resolution: Resolution;
  readonly commandId?: string;
}

function run(ops: Op[]): void {
  const gates = Array.from({ length: GATES + 1 }, () => ({ gateId: newId(), kind: "permission" as const, turnId: ID.turn, stepId: ID.step, toolExecutionId: newId() }));
  const commands = Array.from({ length: COMMANDS }, () => newId());
  const book = new GateBook<GateState>();
  const opened = new Set<number>();
  /** What the journal holds: one GateResolved per gate at most, and its outcome. */
  const journal = new Map<string, { seq: number; reply: Reply }>();
  /** The gate and effect each accepted command id carried. */
  const acceptedWith = new Map<string, { gate: number; effect: string }>();
  /** The first reply each command id received (its outcome). */
  const firstReply = new Map<string, Reply>();
  const claims: Claim[] = [];
  let seq = 0;
  const claimed = (gateId: string) => claims.some((c) => c.gate.gateId === gateId);

  for (const o of ops) {
    switch (o.op) {
      case "open":
        // A gate id opens once (the server mints a fresh one per request).
        if (!opened.has(o.gate)) {
          opened.add(o.gate);
          book.open(gates[o.gate]!);
        }
        break;
      case "answer": {
        const g = gates[o.gate]!;
        const commandId = commands[o.command]!;
        const a: Answer = o.byExecution
          ? { kind: "permission", commandId, toolExecutionId: g.toolExecutionId, effect: o.effect }
          : { kind: "permission", commandId, gateId: g.gateId, effect: o.effect };
        const v = book.judge(encodeAnswer(a));
        const earlier = firstReply.get(commandId);
        const pendingClaim = claims.find((c) => c.commandId === commandId);
        const first = acceptedWith.get(commandId);
        if (first && (first.gate !== o.gate || first.effect !== o.effect)) {
          // The same id with another answer or for another gate is no repeat.
          expect(v).toMatchObject({ reply: { status: "refused", code: "COMMAND_INVALID" } });
          break;
        }
        if ("wait" in v) {
          // Only a command id accepted and still being resolved waits.
          expect(pendingClaim).toBeDefined();
          break;
        }
        expect(pendingClaim).toBeUndefined();
        if ("resolve" in v) {
          // A claim only of an open gate: opened, not resolved, not claimed; a fresh command id.
          expect(opened.has(o.gate)).toBe(true);
          expect(journal.has(g.gateId)).toBe(false);
          expect(claimed(g.gateId)).toBe(false);
          expect(earlier === undefined || earlier.status !== "ok").toBe(true);
          claims.push({ gate: v.resolve, resolution: v.resolution, commandId });
          acceptedWith.set(commandId, { gate: o.gate, effect: o.effect });
          break;
        }
        const r = v.reply;
        if (earlier && (earlier.status === "ok" || earlier.code === "COMMAND_FAILED")) {
          // A command id accepted before: its first outcome again.
          if (earlier.status === "ok") expect(r).toEqual({ ...earlier, duplicate: true });
          else if (r.status === "refused" && r.code === "COMMAND_FAILED") expect(r).toEqual(earlier);
          break;
        }
        expect(r.status).toBe("refused");
        if (r.status !== "refused") break;
        if (!opened.has(o.gate)) expect(r.code).toBe("GATE_UNKNOWN");
        else if (journal.has(g.gateId)) {
          expect(r.code).toBe("GATE_RESOLVED");
          expect(r.outcome?.journalSeq).toBe(journal.get(g.gateId)!.seq);
        } else if (claimed(g.gateId)) {
          expect(r).toMatchObject({ code: "GATE_RESOLVED" });
          expect(r.outcome).toBeUndefined();
        } else expect.fail(`an open gate refused: ${JSON.stringify(r)}`);
        break;
      }
      case "timeout": {
        const g = gates[o.gate]!;
        const open = opened.has(o.gate) && !journal.has(g.gateId) && !claimed(g.gateId);
        expect(book.expire(g)).toBe(open);
        if (open) claims.push({ gate: g, resolution: { reason: "policy_response" } });
        break;
      }
      case "closeAll": {
        const closing = book.closeAll();
        const expected = [...opened].map((i) => gates[i]!).filter((g) => !journal.has(g.gateId) && !claimed(g.gateId));
        expect(new Set(closing.map((g) => g.gateId))).toEqual(new Set(expected.map((g) => g.gateId)));
        for (const g of closing) claims.push({ gate: g, resolution: { reason: "owner_closed" } });
        break;
      }
      case "finish": {
        if (claims.length === 0) break;
        const [c] = claims.splice(o.which % claims.length, 1);
        const { gate, resolution, commandId } = c!;
        expect(journal.has(gate.gateId)).toBe(false); // one GateResolved per gate, ever
        if (o.write === "fails") {
          // Nothing written: the gate is open again, its command id forgotten.
          book.reopen(gate, commandId);
          if (commandId) acceptedWith.delete(commandId);
          break;
        }
        seq += 1;
        const failure = o.write === "decisionFails" && gate.kind === "permission" && resolution.reason !== "owner_closed" ? "decision not journaled" : undefined;
        const reply = book.settle(gate, resolution, seq, failure);
        journal.set(gate.gateId, { seq, reply });
        if (commandId) firstReply.set(commandId, reply);
        break;
      }
    }
  }
  // Every gate left is open, claimed or resolved once; settling twice is refused.
  for (const [gateId] of journal) {
    const g = gates.find((x) => x.gateId === gateId)!;
    expect(() => book.settle(g, { reason: "owner_closed" }, 999)).toThrow(/not being resolved/);
    expect(book.stateOf(gateId)).toBe("resolved");
  }
}

describe("GateBook under every interleaving", () => {
  it("resolves each gate once, claims one at a time, tells the truth, keeps command ids to their first outcome", () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 60 }), (ops) => run(ops)),
      { numRuns: 1500 },
    );
  });
});
