// The gate route's body read as Go's encoding/json reads it into gate.ResponseRequest
// (reference §6): key case ignored (Unicode simple folding), the last duplicate wins, null
// leaves a string as it was and empties a map, an object into a map adds its keys, a wrong
// type anywhere is invalid_body. A body read differently would answer another action.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeGateRequest } from "../../src/gateway/gate-answer.js";

const ACTIONS = ["Approve", "Deny", "Approve always for this workspace"];

/** Every spelling of `name` Go's key matching accepts: any ASCII case, and ſ (U+017F) for s, K (U+212A) for k. */
const spelling = (name: string) =>
  fc.tuple(...[...name].map((c) => fc.constantFrom(...new Set([c, c.toUpperCase(), ...(c === "s" ? ["ſ"] : []), ...(c === "k" ? ["K"] : [])])))).map((cs) => cs.join(""));

describe("decodeGateRequest reads a body as Go's encoding/json does", () => {
  it("the last of the keys that fold to `action` wins, whatever their order and case", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(spelling("action"), fc.constantFrom(...ACTIONS)), { minLength: 1, maxLength: 5 }), fc.boolean(), (entries, noise) => {
        const members = entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`);
        if (noise) members.splice(1, 0, `"actions":"Deny","gate_id":"x"`);
        expect(decodeGateRequest(`{${members.join(",")}}`)?.action).toBe(entries.at(-1)![1]);
      }),
      { numRuns: 500 },
    );
  });

  it.each([
    [`{"action":"Deny","ACTION":"Approve"}`, { action: "Approve", values: {} }],
    [`{"ACTION":"Approve","action":"Deny"}`, { action: "Deny", values: {} }],
    [`{"action":"Deny","ACTION":"Approve","action":"Deny"}`, { action: "Deny", values: {} }],
    [`{"action":"Approve","Action":null}`, { action: "Approve", values: {} }],
    [`{"aCtIoN":"Deny"}`, { action: "Deny", values: {} }],
    [`{"values":{"answer":"a"},"VALUES":{"x":1}}`, { action: "", values: { answer: "a", x: 1 } }],
    [`{"values":{"answer":"a"},"Values":{"answer":"b"}}`, { action: "", values: { answer: "b" } }],
    [`{"values":{"answer":"a"},"values":null}`, { action: "", values: {} }],
    [`{"valueſ":{"answer":"a"}}`, { action: "", values: { answer: "a" } }],
    [`{"actions":"Approve"}`, { action: "", values: {} }],
    [`null`, { action: "", values: {} }],
    [``, { action: "", values: {} }],
  ])("%s", (body, expected) => {
    expect(decodeGateRequest(body)).toEqual(expected);
  });

  it.each([`{"action":"Deny","Action":1}`, `{"values":{"answer":"a"},"VALUES":[1]}`, `{"action":"Approve"`, `[]`, `"Approve"`])("%s is invalid_body", (body) => {
    expect(decodeGateRequest(body)).toBeUndefined();
  });
});
