// Adversary attack on parseTraceState: W3C lets only OWS (space, horizontal tab) surround a
// list member. Any other whitespace (what String.prototype.trim also strips: NBSP, BOM,
// line and paragraph separators, vertical tab, form feed, the Unicode spaces) makes the
// header unreadable exactly, so it must be refused, never trimmed into a valid member.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseTraceState } from "../../src/telemetry/traceparent.js";
import { traceStateArb } from "./trace-arbitraries.js";

/** Every code point String.prototype.trim removes that W3C OWS does not allow. */
const NOT_OWS = Array.from({ length: 0x10000 }, (_, i) => String.fromCharCode(i)).filter((c) => c.trim() === "" && c !== " " && c !== "\t");

describe("tracestate whitespace", () => {
  it("the family under test is the non-OWS whitespace", () => {
    expect(NOT_OWS.length).toBeGreaterThan(15);
  });

  it("refuses a list with any non-OWS whitespace around any member", () => {
    fc.assert(
      fc.property(traceStateArb, fc.constantFrom(...NOT_OWS), fc.boolean(), fc.nat(), (state, ws, before, at) => {
        const members = state.split(",");
        const i = at % members.length;
        members[i] = before ? ws + members[i] : members[i] + ws;
        expect(parseTraceState(members.join(","))).toBeUndefined();
      }),
      { numRuns: 2000 },
    );
  });

  it("still reads spaces and tabs around members (OWS) and drops them", () => {
    fc.assert(
      fc.property(traceStateArb, fc.array(fc.constantFrom(" ", "\t"), { maxLength: 3 }), (state, ows) => {
        const pad = ows.join("");
        const padded = state.split(",").map((m) => `${pad}${m}${pad}`).join(",");
        fc.pre(padded.length <= 512);
        expect(parseTraceState(padded)).toBe(state);
      }),
    );
  });
});
