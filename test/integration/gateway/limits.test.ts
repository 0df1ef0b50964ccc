// The gateway's bounds and its refusals over plain HTTP on a real nats-server: a foreign
// Host, a POST that is not JSON, a trickling body, the per-client connection and stream
// caps, the journal-sequence range, and a namespace never provisioned.
import { request as httpRequest } from "node:http";
import { connect as netConnect, type Socket } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, type Jetloop, newId, startGateway, type RunningGateway } from "../../../src/index.js";
import { natsServers, uniqueNamespace } from "../../harness/context.js";
import { waitFor } from "../../harness/async.js";
import { request, SseReader } from "./http.js";

let bus: Jetloop;
let gw: RunningGateway;
const sid = newId();

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("gl") });
  await bus.provision();
  await bus.publish(createEvent("SessionStarted", { sessionId: sid }));
  gw = await startGateway(bus, { listen: "127.0.0.1:0", bodyTimeoutMs: 500, maxStreamsPerClient: 2 });
});
afterAll(async () => {
  await gw.close();
  await bus.close();
});

/** A request with headers fetch will not let a caller set (Host). */
function raw(url: string, headers: Record<string, string>, method = "GET"): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject).end();
  });
}

/** A POST with headers fetch will not let a caller set (Host, Sec-Fetch-Site); no body when `body` is undefined. */
function rawPost(url: string, headers: Record<string, string>, body: string | undefined): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: "POST", headers }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject).end(body);
  });
}

const errorOf = (body: string) => (JSON.parse(body) as { error: { code: string; retryable: boolean } }).error;

function openSocket(url: string): Promise<Socket> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = netConnect(Number(u.port), u.hostname, () => resolve(s));
    s.on("error", reject);
  });
}

/**
 * Resolves once the server has taken the socket as a connection of its own: a keep-alive
 * request on it is answered (the socket stays open and counted).
 */
function served(s: Socket, url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    s.once("data", (c: Buffer) => (c.toString("utf8").startsWith("HTTP/1.1 200 ") ? resolve() : reject(new Error(`not served: ${c.toString("utf8").slice(0, 80)}`))));
    s.write(`GET /v1/capabilities HTTP/1.1\r\nHost: ${new URL(url).host}\r\n\r\n`);
  });
}

/** Everything the server writes until it closes the socket. */
function untilClosed(s: Socket): Promise<string> {
  let text = "";
  s.setEncoding("utf8").on("data", (c: string) => (text += c));
  return new Promise((resolve) => s.on("close", () => resolve(text)));
}

describe("a POST not declared JSON, over every POST route: generated methods x body types x Origin x Sec-Fetch-Site", () => {
  it("goes on from the own origin or a non-browser caller, is refused from any page crossing sites", async () => {
    const allowing = await startGateway(bus, { listen: "127.0.0.1:0", allowedOrigins: ["https://app.example"] });
    try {
      const host = new URL(allowing.url).host;
      const routes = [`/v1/sessions/${sid}/gates/${newId()}`, `/v1/sessions/${sid}/input`, `/v1/sessions/${sid}/interrupt`, `/v1/sessions/${newId()}/interrupt`];
      const cases = fc.sample(
        fc.record({
          route: fc.constantFrom(...routes),
          origin: fc.constantFrom(undefined, allowing.url, "https://app.example", "https://attacker.example"),
          type: fc.constantFrom(undefined, "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "application/json"),
          body: fc.boolean(),
          site: fc.constantFrom(undefined, "same-origin", "same-site", "cross-site"),
        }),
        { numRuns: 48, seed: 3802 },
      );
      for (const c of cases) {
        const headers: Record<string, string> = { Host: host };
        if (c.origin !== undefined) headers.Origin = c.origin;
        if (c.type !== undefined) headers["Content-Type"] = c.type;
        if (c.site !== undefined) headers["Sec-Fetch-Site"] = c.site;
        const r = await rawPost(`${allowing.url}${c.route}`, headers, c.body ? '{"action":"Deny","blocks":[{"type":"text","Text":"x"}]}' : undefined);
        const crosses = c.site === "same-site" || c.site === "cross-site";
        let want: string | undefined;
        if (c.origin === "https://attacker.example" || (c.origin === undefined && crosses)) want = "origin_not_allowed";
        else if (c.type !== "application/json" && (c.origin === "https://app.example" || (c.site !== undefined && c.site !== "same-origin"))) want = "unsupported_media_type";
        const code = errorOf(r.body).code;
        if (want !== undefined) expect([code, r.status], JSON.stringify(c)).toEqual([want, want === "origin_not_allowed" ? 403 : 415]);
        // Past the boundary: what the route says of an unknown gate, a session with no actor, or one never seen.
        else expect(["gate_not_found", "session_not_found", "invalid_body"], `${JSON.stringify(c)}: ${r.body}`).toContain(code);
      }
    } finally {
      await allowing.close();
    }
  });
});

describe("the browser boundary over plain HTTP", () => {
  it("refuses a foreign Host before anything else, and answers the bound address", async () => {
    const port = new URL(gw.url).port;
    for (const host of ["attacker.example", `attacker.example:${port}`, `localhost.:${port}`, `evil@localhost:${port}`]) {
      const r = await raw(`${gw.url}/v1/sessions`, { Host: host });
      expect({ host, status: r.status, code: errorOf(r.body).code }).toEqual({ host, status: 403, code: "host_not_allowed" });
    }
    expect((await raw(`${gw.url}/v1/no-such-path`, { Host: "attacker.example" })).status).toBe(403);
    for (const host of [`127.0.0.1:${port}`, `LOCALHOST:${port}`, "localhost", `[::1]:${port}`]) expect((await raw(`${gw.url}/v1/sessions`, { Host: host })).status, host).toBe(200);
  });

  it("refuses a POST from a foreign Origin, and one not declared JSON from a page that crosses sites", async () => {
    const url = `${gw.url}/v1/sessions/${sid}/gates/${newId()}`;
    const foreign = await request(url, { method: "POST", headers: { Origin: "http://localhost:1", "Content-Type": "application/json" }, body: '{"action":"Approve"}' });
    expect([foreign.status, errorOf(foreign.body).code]).toEqual([403, "origin_not_allowed"]);
    for (const type of ["text/plain", "application/x-www-form-urlencoded", undefined]) {
      const headers: Record<string, string> = { Host: new URL(gw.url).host, Origin: gw.url, "Sec-Fetch-Site": "cross-site", ...(type === undefined ? {} : { "Content-Type": type }) };
      const r = await rawPost(url, headers, type === undefined ? undefined : '{"action":"Approve"}');
      expect([type, r.status, errorOf(r.body).code]).toEqual([type, 415, "unsupported_media_type"]);
      // The same request from a non-browser caller (no Origin, no Sec-Fetch-Site) passes the boundary: the gate is unknown.
      const plain = await request(url, { method: "POST", headers: type === undefined ? {} : { "Content-Type": type }, body: type === undefined ? undefined : '{"action":"Approve"}' });
      expect([type, plain.status, errorOf(plain.body).code]).toEqual([type, 404, "gate_not_found"]);
    }
    const own = await request(url, { method: "POST", headers: { Origin: gw.url, "Content-Type": "application/json; charset=utf-8" }, body: '{"action":"Approve"}' });
    expect(errorOf(own.body).code).toBe("gate_not_found"); // past the boundary
    const preflight = await request(url, { method: "OPTIONS", headers: { Origin: "http://localhost:1", "Access-Control-Request-Method": "POST" } });
    expect(preflight.status).toBe(403);
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("cookie authentication behind the boundary", () => {
  it("gets the same checks: a forged request carrying the cookie is refused before authentication", async () => {
    const seen: string[] = [];
    const cookieGw = await startGateway(bus, {
      listen: "127.0.0.1:0",
      authenticate: (req) => {
        seen.push(req.method ?? "");
        return req.headers.cookie === "jl=ok";
      },
    });
    try {
      const url = `${cookieGw.url}/v1/sessions/${sid}/gates/${newId()}`;
      const forged = await request(url, { method: "POST", headers: { Cookie: "jl=ok", Origin: "http://localhost:1", "Content-Type": "text/plain" }, body: '{"action":"Approve"}' });
      expect([forged.status, errorOf(forged.body).code]).toEqual([403, "origin_not_allowed"]);
      const rebound = await raw(`${cookieGw.url}/v1/sessions`, { Cookie: "jl=ok", Host: "attacker.example" });
      expect(rebound.status).toBe(403);
      expect(seen).toEqual([]); // the authenticate function never ran for them
      expect((await request(`${cookieGw.url}/v1/sessions`, { headers: { Cookie: "jl=ok" } })).status).toBe(200);
      expect((await request(`${cookieGw.url}/v1/sessions`)).status).toBe(401);
    } finally {
      await cookieGw.close();
    }
  });
});

describe("bounded resources", () => {
  it("cuts a body that trickles in: 408 and the connection closed", async () => {
    const s = await openSocket(gw.url);
    const reply = untilClosed(s);
    const host = new URL(gw.url).host;
    s.write(`POST /v1/sessions/${sid}/gates/${newId()} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`);
    const drip = setInterval(() => s.writable && s.write(" "), 100);
    const started = Date.now();
    const text = await reply.finally(() => clearInterval(drip));
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text).toContain('"code":"body_timeout"');
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("cuts a body the route answered without reading, in every way a request can be answered early", async () => {
    // A connection must not outlive its body's timeout because the route answered before
    // reading the body: the body still trickles in, and Node drains it for keep-alive.
    const host = new URL(gw.url).host;
    const cases: Record<string, string> = {
      "GET with a body": "GET /v1/capabilities HTTP/1.1",
      "a route that answers 404": "POST /v1/nowhere HTTP/1.1",
      "a route that answers 405": "POST /v1/sessions/zzz/status HTTP/1.1",
      "creation, answered without reading (501)": "POST /v1/sessions HTTP/1.1",
      "a malformed session id": "POST /v1/sessions/zzz/gates/yyy HTTP/1.1",
      "a body that is not JSON (415)": `POST /v1/sessions/${sid}/gates/${newId()} HTTP/1.1`,
      "a session never seen (404)": `POST /v1/sessions/${newId()}/gates/${newId()} HTTP/1.1`,
      "a declared length over the cap": `POST /v1/sessions/${sid}/gates/${newId()} HTTP/1.1`,
    };
    const framings = ["Content-Length: 100000", "Transfer-Encoding: chunked"];
    const runs = Object.entries(cases).flatMap(([name, line]) =>
      framings.map(async (framing) => {
        const s = await openSocket(gw.url);
        const reply = untilClosed(s);
        const type = name.includes("415") ? "text/plain" : "application/json";
        const length = name.includes("over the cap") ? "Content-Length: 2000000" : framing;
        // Not JSON from a page crossing sites: 415 (from a non-browser caller it would pass the boundary).
        const crossSite = name.includes("415") ? "Sec-Fetch-Site: cross-site\r\nOrigin: http://" + host + "\r\n" : "";
        s.write(`${line}\r\nHost: ${host}\r\nContent-Type: ${type}\r\n${crossSite}${length}\r\n\r\n`);
        const chunk = length.startsWith("Transfer") ? "1\r\n \r\n" : " ";
        const drip = setInterval(() => s.writable && s.write(chunk), 100);
        const started = Date.now();
        const cut = await Promise.race([reply.then(() => Date.now() - started), new Promise<"open">((r) => setTimeout(() => r("open"), 4000))]);
        clearInterval(drip);
        s.destroy();
        return { name, framing: length, cut: cut === "open" ? "still open after 4 s" : "cut" };
      }),
    );
    for (const r of await Promise.all(runs)) expect(r).toEqual({ ...r, cut: "cut" });
  });

  it("cuts headers that trickle in within headersTimeoutMs", async () => {
    const slow = await startGateway(bus, { listen: "127.0.0.1:0", headersTimeoutMs: 500 });
    try {
      const s = await openSocket(slow.url);
      const reply = untilClosed(s);
      s.write(`GET /v1/capabilities HTTP/1.1\r\nHost: ${new URL(slow.url).host}\r\n`);
      const drip = setInterval(() => s.writable && s.write("X-A: b\r\n"), 100);
      const started = Date.now();
      const cut = await Promise.race([reply.then(() => Date.now() - started), new Promise<"open">((r) => setTimeout(() => r("open"), 4000))]);
      clearInterval(drip);
      s.destroy();
      expect(cut).not.toBe("open");
      expect(cut as number).toBeLessThan(2000);
    } finally {
      await slow.close();
    }
  });

  it("holds the connection cap per client address: one more is 503 and closed, a freed slot is reusable", async () => {
    // A gateway of its own: no keep-alive sockets of other tests count.
    const capped = await startGateway(bus, { listen: "127.0.0.1:0", maxConnectionsPerClient: 4 });
    const held = await Promise.all(Array.from({ length: 4 }, () => openSocket(capped.url)));
    // Each is the server's: a keep-alive request on it answered.
    for (const s of held) await served(s, capped.url);
    const extra = await openSocket(capped.url);
    expect(await untilClosed(extra)).toMatch(/^HTTP\/1\.1 503 /);
    held.pop()!.destroy();
    // The server frees the slot when it sees the close: until then a request is 503.
    await waitFor("the freed slot taken again", async () => (await raw(`${capped.url}/v1/capabilities`, { Connection: "close" })).status === 200 || false, 10_000, 20);
    for (const s of held) s.destroy();
    await capped.close();
  });

  it("holds the SSE stream cap per client address: one more is 429 too_many_streams, retryable", async () => {
    const a = await SseReader.open(`${gw.url}/v1/sessions/${sid}/events`);
    const b = await SseReader.open(`${gw.url}/v1/sessions/${sid}/events`);
    const c = await request(`${gw.url}/v1/sessions/${sid}/events`);
    expect([c.status, errorOf(c.body)]).toEqual([429, { code: "too_many_streams", message: "too many event streams from this client", retryable: true }]);
    a.close();
    // The server frees the stream's slot when it sees the close: until then one more is 429.
    const d = await waitFor("a freed stream slot taken again", () => SseReader.open(`${gw.url}/v1/sessions/${sid}/events`), 10_000, 20);
    d.close();
    b.close();
  });

  it("validates Last-Event-ID as a sequence whose next is exact: 400 past it; from_journal_seq past it is Go's empty page", async () => {
    for (const v of ["9007199254740991", "9007199254740992", "18446744073709551615", "-1", "1e3"]) {
      const header = await request(`${gw.url}/v1/sessions/${sid}/events`, { headers: { "Last-Event-ID": v } });
      const query = await request(`${gw.url}/v1/sessions/${sid}/events?last_event_id=${v}`);
      for (const r of [header, query]) expect([v, r.status, errorOf(r.body).code]).toEqual([v, 400, "invalid_parameter"]);
      // Go reads any uint64 there (ParseUint): past every sequence a stream holds, an empty page.
      const journal = await request(`${gw.url}/v1/sessions/${sid}/journal?from_journal_seq=${v}`);
      if (v.startsWith("-") || v.includes("e")) expect([v, journal.status, errorOf(journal.body).code]).toEqual([v, 400, "invalid_parameter"]);
      else expect([v, journal.status, JSON.parse(journal.body)]).toEqual([v, 200, { events: [], next_journal_seq: 0, done: true }]);
    }
    const edge = await request(`${gw.url}/v1/sessions/${sid}/journal?from_journal_seq=9007199254740990`);
    expect(JSON.parse(edge.body)).toEqual({ events: [], next_journal_seq: 0, done: true });
  });
});

describe("a Last-Event-ID the journal never reached", () => {
  it("is 400, not a stream that skips every event up to it (a journal recreated since the client's last id)", async () => {
    const jsm = await bus.jetstreamManager();
    const last = (await jsm.streams.info(bus.stream)).state.last_seq;
    for (const v of [last + 1, last + 1000, 9007199254740990]) {
      // A 200 would be a stream that never ends: give up on it after a while.
      const signal = AbortSignal.timeout(3000);
      const header = await request(`${gw.url}/v1/sessions/${sid}/events`, { headers: { "Last-Event-ID": String(v) }, signal });
      const query = await request(`${gw.url}/v1/sessions/${sid}/events?last_event_id=${v}`, { signal });
      for (const r of [header, query]) expect([v, r.status, errorOf(r.body).code]).toEqual([v, 400, "invalid_parameter"]);
    }
    // The last sequence itself resumes: the next event arrives.
    const s = await SseReader.open(`${gw.url}/v1/sessions/${sid}/events`, { "Last-Event-ID": String(last) });
    await bus.publish(createEvent("SessionStopped", { sessionId: sid }));
    await s.until((t) => t.includes('"type":"SessionStopped"'));
    s.close();
  });
});

describe("a namespace never provisioned", () => {
  it("answers 503 not_provisioned, whose message says to run jetloop provision", async () => {
    const bare = await connect({ servers: natsServers(), namespace: uniqueNamespace("gn") });
    const g = await startGateway(bare, { listen: "127.0.0.1:0" });
    try {
      for (const path of ["/v1/sessions", `/v1/sessions/${sid}/status`, `/v1/sessions/${sid}/journal`, `/v1/sessions/${sid}/events`]) {
        const r = await request(`${g.url}${path}`);
        expect([path, r.status, JSON.parse(r.body)]).toEqual([path, 503, { error: { code: "not_provisioned", message: "namespace not provisioned: run jetloop provision", retryable: false } }]);
      }
    } finally {
      await g.close();
      await bare.close();
    }
  });
});
