/**
 * The gateway reads a request target as the Go handler's server does before any route:
 * Go's ParseRequestURI (no fragment: `#` is path text; a bad escape is refused) and Go
 * 1.22's ServeMux (the escaped path, cleaned, a 301 where cleaning changes it, segments
 * unescaped one by one, so `%2F` and `%2E` stay inside their segment). Every generated
 * target is decided by a transcription of Go's code (test/harness/go-request-target.ts),
 * never by the gateway's own.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { goCleanPath, readRequestTarget } from "../../src/gateway/request-target.js";
import { goReadTarget, goTargetText } from "../harness/go-request-target.js";

describe("request targets as Go's server and ServeMux read them", () => {
  it("every generated target: the same segments, the same redirect, the same refusal", () => {
    const kinds = { path: 0, redirect: 0, unreadable: 0 };
    fc.assert(
      fc.property(goTargetText, (raw) => {
        const go = goReadTarget(raw);
        kinds[go.kind]++;
        expect(readRequestTarget(raw)).toEqual(go);
      }),
      { numRuns: 20_000 },
    );
    // The family reaches every outcome, each many times.
    for (const n of Object.values(kinds)) expect(n).toBeGreaterThan(1_000);
  });

  it("the cases the rules name", () => {
    const cases: [string, ReturnType<typeof readRequestTarget>][] = [
      ["/v1/sessions", { kind: "path", segments: ["v1", "sessions"] }],
      // No fragment in a request: `#` is path text (escaped: %23), so no route has it.
      ["/v1/sessions#x", { kind: "path", segments: ["v1", "sessions#x"] }],
      ["/v1/sessions?limit=1#x", { kind: "path", segments: ["v1", "sessions"] }],
      // Escaped dots and slashes stay inside their segment.
      ["/v1/%2E/sessions", { kind: "path", segments: ["v1", ".", "sessions"] }],
      ["/v1/sessions%2Fx", { kind: "path", segments: ["v1", "sessions/x"] }],
      // Dot segments and doubled slashes: a 301 to the cleaned path, the query kept.
      ["/v1/./sessions", { kind: "redirect", location: "/v1/sessions" }],
      ["//v1/sessions?limit=1", { kind: "redirect", location: "/v1/sessions?limit=1" }],
      ["/v1/x/../sessions/", { kind: "redirect", location: "/v1/sessions/" }],
      // A trailing slash is a segment of its own (404), not cleaned away.
      ["/v1/sessions/", { kind: "path", segments: ["v1", "sessions", ""] }],
      // A bad escape: Go's server refuses the request line.
      ["/v1/sessions/%zz/status", { kind: "unreadable" }],
      ["/v1/sessions%4", { kind: "unreadable" }],
      ["v1/sessions", { kind: "unreadable" }],
      ["*", { kind: "asterisk" }],
      ["http://127.0.0.1:8080/v1/sessions?limit=1", { kind: "path", segments: ["v1", "sessions"] }],
    ];
    for (const [raw, want] of cases) expect({ raw, got: readRequestTarget(raw) }).toEqual({ raw, got: want });
  });

  it("cleanPath keeps a trailing slash and the root", () => {
    expect(["", "/", "//", "/a//b/", "/a/./b/..", "/../a", "a/b"].map(goCleanPath)).toEqual(["/", "/", "/", "/a/b/", "/a", "/a", "/a/b"]);
  });
});
