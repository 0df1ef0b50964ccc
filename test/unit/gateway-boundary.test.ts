// The browser boundary's rules over the whole family of Host, Origin and Content-Type
// values: each generated value carries whether the rule admits it, built from its parts
// (a name in the allowed set or not, a port in range or not, a trick or not), and the
// boundary must agree on every one.
import type { IncomingMessage } from "node:http";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type BoundarySettings, checkRequest, isJsonContentType, LOOPBACK_HOSTS, mayPostUntyped, parseBoundaryLists, parseOrigin } from "../../src/gateway/boundary.js";
import { lastEventIdParam, MAX_JOURNAL_SEQ } from "../../src/gateway/params.js";
import { parseGatewayOptions, parseServerOptions } from "../../src/gateway/options.js";
import { OptionsError } from "../../src/errors.js";

const BOUND = "10.9.8.7";
const lists = parseBoundaryLists([...LOOPBACK_HOSTS, "gw.example"], ["https://app.example", "http://127.0.0.1:3000"]);
if ("bad" in lists) throw new Error("test lists");
const settings: BoundarySettings = lists;

function req(headers: Record<string, string | undefined>): IncomingMessage {
  return { headers, socket: { localAddress: `::ffff:${BOUND}` } } as unknown as IncomingMessage;
}

interface Case {
  readonly text: string;
  readonly ok: boolean;
}

const randomCase = (s: string) => fc.array(fc.boolean(), { minLength: s.length, maxLength: s.length }).map((up) => [...s].map((c, i) => (up[i] ? c.toUpperCase() : c)).join(""));

const allowedName: fc.Arbitrary<Case> = fc.oneof(
  fc.constantFrom("localhost", "127.0.0.1", "gw.example", BOUND).chain(randomCase).map((text) => ({ text, ok: true })),
  // The same IPv6 loopback written every way a literal allows.
  fc.constantFrom("[::1]", "[0:0:0:0:0:0:0:1]", "[::0001]", "[0::1]").map((text) => ({ text, ok: true })),
);

const refusedName: fc.Arbitrary<Case> = fc
  .oneof(
    fc.constantFrom("localhost.", "127.0.0.1.", "gw.example.", "::1", "[::1", "::1]", "[::2]", "[::ffff:127.0.0.1]", "", "127.1", "2130706433", "0x7f.0.0.1", "127.0.0.2", "[fe80::1%25lo]"),
    fc.domain().filter((d) => !["localhost", "gw.example"].includes(d)),
    fc.constantFrom("localhost", "gw.example").chain((n) => fc.constantFrom(`evil@${n}`, `${n}@evil.example`, `${n}.evil.example`, `evil.${n}`, `${n}%2eevil`, `${n} `, ` ${n}`, `${n}/x`, `${n}\\x`)),
  )
  .map((text) => ({ text, ok: false }));

const port: fc.Arbitrary<Case> = fc.oneof(
  fc.constant({ text: "", ok: true }),
  fc.integer({ min: 1, max: 65535 }).map((p) => ({ text: `:${p}`, ok: true })),
  fc.oneof(fc.constant(0), fc.integer({ min: 65536, max: 99999 })).map((p) => ({ text: `:${p}`, ok: false })),
  fc.constantFrom(":", ":+80", ":-1", ":123456", ":80:80", ": 80", ":8o").map((text) => ({ text, ok: false })),
);

const host: fc.Arbitrary<Case> = fc.tuple(fc.oneof(allowedName, refusedName), port).map(([h, p]) => ({ text: h.text + p.text, ok: h.ok && p.ok }));

describe("Host", () => {
  it("admits exactly an allowed name or the bound address, with or without a port in range", () => {
    fc.assert(
      fc.property(host, (h) => {
        expect(checkRequest(req({ host: h.text }), lists).ok, h.text).toBe(h.ok);
      }),
      { numRuns: 2000 },
    );
  });

  it("refuses a request without Host", () => {
    expect(checkRequest(req({}), lists)).toEqual({ ok: false, error: "host_not_allowed" });
  });
});

const HOST = "localhost:8080";

/** Origins built against Host localhost:8080: own (either scheme, any case), allowlisted, or anything else. */
const origin: fc.Arbitrary<Case & { cors: string | undefined }> = fc.oneof(
  fc.constantFrom("http://localhost:8080", "https://localhost:8080").chain(randomCase).map((text) => ({ text, ok: true, cors: undefined })),
  fc
    .constantFrom(["https://app.example", "https://app.example"], ["https://app.example:443", "https://app.example"], ["HTTP://127.0.0.1:3000", "http://127.0.0.1:3000"])
    .map(([text, cors]) => ({ text: text, ok: true, cors })),
  fc
    .oneof(
      fc.constantFrom("null", "", "localhost:8080", "http://localhost", "http://localhost:8081", "http://localhost:8080/", "http://localhost:8080/x", "http://localhost.:8080", "http://evil@localhost:8080"),
      fc.constantFrom("ws://localhost:8080", "file://", "http://app.example", "https://app.example:444", "http://127.0.0.1:3001", "https://localhost:8080.evil.example", "http://[::1]:8080"),
      fc.domain().map((d) => `https://${d}`),
      fc.webUrl().filter((u) => parseOrigin(u) === undefined || !["http://localhost:8080", "https://localhost:8080", "https://app.example", "http://127.0.0.1:3000"].includes(parseOrigin(u)!)),
    )
    .map((text) => ({ text, ok: false, cors: undefined })),
);

describe("Origin", () => {
  it("admits the gateway's own origin and the allowlist, nothing else", () => {
    fc.assert(
      fc.property(origin, (o) => {
        const v = checkRequest(req({ host: HOST, origin: o.text }), lists);
        expect(v, o.text).toEqual(o.ok ? { ok: true, corsOrigin: o.cors } : { ok: false, error: "origin_not_allowed" });
      }),
      { numRuns: 2000 },
    );
  });

  it("admits a request without Origin unless the browser says it is cross-site", () => {
    for (const site of [undefined, "none", "same-origin"]) expect(checkRequest(req({ host: HOST, "sec-fetch-site": site }), lists).ok).toBe(true);
    for (const site of ["cross-site", "same-site"]) expect(checkRequest(req({ host: HOST, "sec-fetch-site": site }), lists).ok).toBe(false);
  });

  it("checks Host before Origin: a rebinding page with its own origin is still refused", () => {
    expect(checkRequest(req({ host: "attacker.example:8080", origin: "http://attacker.example:8080" }), lists)).toEqual({ ok: false, error: "host_not_allowed" });
  });
});

const contentType: fc.Arbitrary<Case> = fc.oneof(
  fc
    .tuple(randomCase("application/json"), fc.constantFrom("", ";charset=utf-8", "; charset=UTF-8", " ; charset=utf-8", "\t"))
    .map(([t, p]) => ({ text: t + p, ok: true })),
  fc
    .constantFrom(
      "text/plain",
      "text/plain;charset=UTF-8",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/json-patch+json",
      "application/jsonx",
      "application/json, text/plain",
      " application/json",
      "application/ json",
      "json",
      "",
    )
    .map((text) => ({ text, ok: false })),
);

describe("Content-Type of a state-changing request", () => {
  it("is application/json, parameters allowed, nothing a form or a no-cors fetch can send", () => {
    fc.assert(fc.property(contentType, (c) => {
        expect(isJsonContentType(c.text), c.text).toBe(c.ok);
      }),);
    expect(isJsonContentType(undefined)).toBe(false);
  });
});

/**
 * A request's whole boundary as the handler applies it: Host and Origin for every method,
 * then, for a POST whose body is not declared JSON (or has none), the caller.
 */
function boundary(method: string, headers: Record<string, string | undefined>): "ok" | "origin_not_allowed" | "unsupported_media_type" | "host_not_allowed" {
  const r = req(headers);
  const v = checkRequest(r, settings);
  if (!v.ok) return v.error as "origin_not_allowed" | "host_not_allowed";
  if (method === "POST" && !isJsonContentType(headers["content-type"]) && !mayPostUntyped(r)) return "unsupported_media_type";
  return "ok";
}

type OriginKind = "absent" | "own" | "allowed-foreign" | "refused-foreign";
const ORIGINS: Record<OriginKind, fc.Arbitrary<string | undefined>> = {
  absent: fc.constant(undefined),
  own: fc.constantFrom("http://localhost:8080", "https://localhost:8080").chain(randomCase),
  "allowed-foreign": fc.constantFrom("https://app.example", "http://127.0.0.1:3000"),
  "refused-foreign": fc.constantFrom("https://attacker.example", "null", "http://localhost:8081", "http://127.0.0.1:3001"),
};
type BodyKind = "json" | "other" | "none";
const BODY_TYPES: Record<BodyKind, fc.Arbitrary<string | undefined>> = {
  json: fc.tuple(randomCase("application/json"), fc.constantFrom("", "; charset=utf-8")).map(([t, p]) => t + p),
  other: fc.constantFrom("text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/octet-stream", "application/jsonx", ""),
  none: fc.constant(undefined),
};
const SITES = [undefined, "same-origin", "same-site", "cross-site", "none"] as const;

describe("a POST whose body is not declared JSON, or has none (the Go client's interrupt)", () => {
  it("goes on from the gateway's own origin or a non-browser caller, and from nothing that crosses sites: methods x body types x Origin x Sec-Fetch-Site", () => {
    const cases = fc.record({
      method: fc.constantFrom("POST", "GET", "HEAD"),
      originKind: fc.constantFrom<OriginKind>("absent", "own", "allowed-foreign", "refused-foreign"),
      bodyKind: fc.constantFrom<BodyKind>("json", "other", "none"),
      site: fc.constantFrom(...SITES),
    });
    fc.assert(
      fc.property(
        cases.chain((c) => fc.tuple(fc.constant(c), ORIGINS[c.originKind], BODY_TYPES[c.bodyKind])),
        ([c, origin, type]) => {
          // The rule, from its parts: a foreign origin off the list, or a browser that hides
          // its origin on a cross-site request, is refused on every method; a POST not
          // declared JSON goes on only from the own origin or none, within one site.
          const crossesSites = c.site === "same-site" || c.site === "cross-site";
          let want: string = "ok";
          if (c.originKind === "refused-foreign" || (c.originKind === "absent" && crossesSites)) want = "origin_not_allowed";
          else if (c.method === "POST" && c.bodyKind !== "json" && (c.originKind === "allowed-foreign" || (c.site !== undefined && c.site !== "same-origin"))) want = "unsupported_media_type";
          const got = boundary(c.method, { host: HOST, origin, "content-type": type, "sec-fetch-site": c.site });
          expect(got, JSON.stringify({ ...c, origin, type })).toBe(want);
        },
      ),
      { numRuns: 3000, seed: 3801 },
    );
  });

  it("a non-browser caller's interrupt (no Origin, no Sec-Fetch-Site, no Content-Type) goes on; the same from a page of another site does not", () => {
    expect(boundary("POST", { host: HOST })).toBe("ok");
    expect(boundary("POST", { host: HOST, origin: "http://localhost:8080", "sec-fetch-site": "same-origin" })).toBe("ok");
    expect(boundary("POST", { host: HOST, origin: "https://app.example", "sec-fetch-site": "cross-site" })).toBe("unsupported_media_type");
    expect(boundary("POST", { host: HOST, "sec-fetch-site": "cross-site" })).toBe("origin_not_allowed");
    expect(boundary("POST", { host: HOST, origin: "https://attacker.example", "sec-fetch-site": "cross-site", "content-type": "text/plain" })).toBe("origin_not_allowed");
  });
});

describe("option lists", () => {
  it("refuses an entry that is not exactly a host or an origin", () => {
    for (const h of ["localhost:80", "localhost.", "*", "", "::1", "a b"]) expect(parseBoundaryLists([h], [])).toEqual({ bad: "allowedHosts", value: h });
    for (const o of ["*", "null", "app.example", "https://app.example/", "ftp://app.example", "https://u@app.example"]) expect(parseBoundaryLists([], [o])).toEqual({ bad: "allowedOrigins", value: o });
  });
});

describe("journal sequence parameters (Last-Event-ID and from_journal_seq, one rule)", () => {
  it("admits 0..MAX_JOURNAL_SEQ in plain digits and refuses every other value", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }), (n) => {
        const inRange = n >= 0n && n <= BigInt(MAX_JOURNAL_SEQ);
        const got = lastEventIdParam(n.toString());
        if (inRange) expect(got).toBe(Number(n));
        else expect(typeof got).toBe("symbol");
      }),
    );
    for (const raw of ["9007199254740991", "9007199254740992", "1e3", "0x10", "+1", " 1", "1 ", "1.0", "١"]) expect(typeof lastEventIdParam(raw)).toBe("symbol");
    expect(lastEventIdParam(String(MAX_JOURNAL_SEQ))).toBe(MAX_JOURNAL_SEQ);
    expect(lastEventIdParam("007")).toBe(7);
  });
});

describe("time options", () => {
  // Node runs a timer longer than 2^31 - 1 ms after 1 ms: such a value would be read as
  // "at once" (every body timed out, a ping per millisecond), so it is refused.
  const TIMER_MAX = 2 ** 31 - 1;
  const handlerMs = ["heartbeatMs", "slowClientMs", "answerTimeoutMs", "bodyTimeoutMs"] as const;
  it("refuses every duration a Node timer cannot hold, and admits the longest it can", () => {
    fc.assert(
      fc.property(fc.constantFrom(...handlerMs, "headersTimeoutMs" as const), fc.integer({ min: TIMER_MAX + 1, max: Number.MAX_SAFE_INTEGER }), (name, ms) => {
        const parse = name === "headersTimeoutMs" ? () => parseServerOptions({ [name]: ms }) : () => parseGatewayOptions({ [name]: ms });
        expect(parse).toThrow(OptionsError);
        expect(parse).toThrow(name);
      }),
    );
    for (const name of handlerMs) expect(parseGatewayOptions({ [name]: TIMER_MAX })[name]).toBe(TIMER_MAX);
    expect(parseServerOptions({ headersTimeoutMs: TIMER_MAX }).headersTimeoutMs).toBe(TIMER_MAX);
  });
});

describe("what a stranger can make the server hold (maxHeaderBytes, maxConnections)", () => {
  it("defaults to 16 KiB of headers and 1024 connections, and refuses every value outside the range", () => {
    expect(parseServerOptions({})).toMatchObject({ maxHeaderBytes: 16 * 1024, maxConnections: 1024, maxConnectionsPerClient: 128 });
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: -(2 ** 40), max: 1023 }), fc.integer({ min: 1024 * 1024 + 1, max: 2 ** 40 }), fc.double({ noInteger: true })), (n) => {
        expect(() => parseServerOptions({ maxHeaderBytes: n })).toThrow(OptionsError);
      }),
    );
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: -(2 ** 40), max: 0 }), fc.double({ noInteger: true })), (n) => {
        expect(() => parseServerOptions({ maxConnections: n })).toThrow(OptionsError);
      }),
    );
    for (const n of [1024, 16 * 1024, 1024 * 1024]) expect(parseServerOptions({ maxHeaderBytes: n }).maxHeaderBytes).toBe(n);
  });
});
