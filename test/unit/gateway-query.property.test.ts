/**
 * The gateway reads its query parameters as the Go handler's `r.URL.Query()` does: a pair
 * Go's ParseQuery drops (a `;` in it, a `%` not followed by two hex digits, in key or
 * value) is absent, `+` is a space, the first value of a key wins, the empty key is a key.
 * Every generated query string is decided by a transcription of Go's parseQuery
 * (test/harness/go-query.ts), never by the gateway's own code.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { goParseQuery, goQuery, goQueryUnescape, rawQueryOf } from "../../src/gateway/query.js";
import { goQueryText, parseQuery, queryUnescape, valuesGet } from "../harness/go-query.js";

const bytes = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));
const NAMES = ["limit", "skip", "from_journal_seq", "loop", "last_event_id", "", "a", " ", "l;", "5"];

describe("query strings as Go's url.ParseQuery reads them", () => {
  it("every pair, key and value (in order) is Go's", () => {
    fc.assert(
      fc.property(goQueryText, (raw) => {
        expect([...goParseQuery(raw)]).toEqual([...parseQuery(raw)]);
      }),
      { numRuns: 5000 },
    );
  });

  it("Get: the first value of a key; absent (null) exactly where Go has no value", () => {
    fc.assert(
      fc.property(goQueryText, fc.constantFrom(...NAMES), (raw, name) => {
        const go = parseQuery(raw);
        const got = goQuery(`/v1/sessions?${raw}`).get(name);
        expect(got).toBe(go.has(name) ? valuesGet(go, name) : null);
      }),
      { numRuns: 5000 },
    );
  });

  it("unescape: `%` with two hex digits, `+` a space, anything else an error", () => {
    const component = fc.string({ unit: fc.constantFrom("%", "+", "0", "9", "a", "f", "A", "F", "g", "G", "z", ";", "=", "é"), maxLength: 8 });
    fc.assert(
      fc.property(component, (s) => {
        const go = queryUnescape(bytes(s));
        const want = go === "error" ? undefined : String.fromCharCode(...go);
        expect(goQueryUnescape(s)).toBe(want);
      }),
      { numRuns: 5000 },
    );
  });

  it("the raw query is all after the first `?`, a `#` included (a request target has no fragment)", () => {
    expect(rawQueryOf("/v1/sessions")).toBe("");
    expect(rawQueryOf("/v1/sessions?")).toBe("");
    expect(rawQueryOf("/v1/sessions?limit=5?x#y")).toBe("limit=5?x#y");
    // The pairs the adversary found: each is dropped, so the parameter is absent.
    for (const raw of ["limit=5;x=1", "limit=5%zz", "limit=%G1", "limit=1;", "x=1;limit=5", "limit%=5", "limit=%4"]) {
      expect(goQuery(`/v1/sessions?${raw}`).get("limit"), raw).toBeNull();
    }
    expect(goQuery("/v1/sessions?limit=%G1&limit=7&limit=9").get("limit")).toBe("7");
    expect(goQuery("/v1/sessions?li%6Dit=+5").get("limit")).toBe(" 5");
    expect(goQuery("/v1/sessions?=1&limit").get("")).toBe("1");
    expect(goQuery("/v1/sessions?=1&limit").get("limit")).toBe("");
  });
});
