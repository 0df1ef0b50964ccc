// The group scenario's order check must be able to fail: generated handlings of a session
// in journal order pass; any one started before an earlier event was done is counted.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { orderViolations } from "../harness/reliability/scenarios/group.js";

const h = (phase: "S" | "E", seq: number, at: number) => ({ phase, seq, session: "s", id: String(seq), count: 1, at, member: "m" });

describe("orderViolations", () => {
  it("passes handlings in journal order, each after the previous is done, and counts one that starts early", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 2, maxLength: 30 }), fc.nat(), (gaps, pick) => {
        let t = 0;
        const ordered = gaps.flatMap((g, i) => [h("S", i + 1, (t += g)), h("E", i + 1, (t += g))]);
        expect(orderViolations(ordered)).toBe(0);
        // Event j starts before event j-1 is done.
        const j = 1 + (pick % (gaps.length - 1));
        const early = ordered.map((x) => (x.phase === "S" && x.seq === j + 1 ? { ...x, at: ordered.find((y) => y.phase === "E" && y.seq === j)!.at - 0.5 } : x));
        expect(orderViolations(early)).toBe(1);
      }),
    );
  });
});
