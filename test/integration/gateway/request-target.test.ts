// The gateway reads each request target as the Go handler's server does, over a real
// socket (fetch would clean the URL before sending it): generated targets of every family
// the rules cover, each decided by the transcription of Go's code in
// test/harness/go-request-target.ts. A target Go's server cannot read is 400 before
// authentication; a path cleaning changes is ServeMux's 301; `#` and escaped dots and
// slashes are path text, so no route has them.
import { connect as netConnect } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, startGateway, type Jetloop, type RunningGateway } from "../../../src/index.js";
import { natsServers, uniqueNamespace } from "../../harness/context.js";
import { goReadTarget, goTargetText } from "../../harness/go-request-target.js";

interface Raw {
  readonly status: number;
  readonly headers: Map<string, string>;
  readonly body: string;
}

/** One request with the target exactly as given, on a connection of its own. */
function rawGet(url: string, target: string, headers: Record<string, string> = {}): Promise<Raw> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let data = "";
    const s = netConnect(Number(port), hostname, () => {
      const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
      s.write(Buffer.from(`GET ${target} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n${extra}Connection: close\r\n\r\n`, "latin1"));
    });
    s.setEncoding("latin1");
    s.on("data", (d: string) => (data += d));
    s.on("error", reject);
    s.on("close", () => {
      const [head = "", ...rest] = data.split("\r\n\r\n");
      const [statusLine = "", ...lines] = head.split("\r\n");
      const map = new Map(lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()] as const));
      resolve({ status: Number(statusLine.split(" ")[1]), headers: map, body: rest.join("\r\n\r\n") });
    });
  });
}

// The GET routes' shapes: a path of another shape is the mux's 404.
const GET_SHAPES = [[""], ["app.js"], ["v1", "capabilities"], ["jetloop", "capabilities"], ["v1", "sessions"], ["v1", "sessions", "*", "status"], ["v1", "sessions", "*", "journal"], ["v1", "sessions", "*", "events"]];
const POST_SHAPES = [["v1", "sessions", "*", "gates", "*"], ["v1", "sessions", "*", "input"], ["v1", "sessions", "*", "interrupt"]];
const fits = (shape: string[], segments: string[]) => shape.length === segments.length && shape.every((s, i) => (s === "*" ? segments[i] !== "" : s === segments[i]));

let bus: Jetloop;
let gw: RunningGateway;
beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("rt") });
  await bus.provision();
  gw = await startGateway(bus, { listen: "127.0.0.1:0", token: "s3cret" });
});
afterAll(async () => {
  await gw.close();
  await bus.close();
});

describe("request targets, as Go's server reads them", () => {
  it("generated targets: 400 where Go cannot read one, Go's 301 where cleaning changes it, the mux's 404 for a path no route has", async () => {
    // Node's own parser refuses a raw byte past ASCII in the request line (stricter than Go, never served).
    const targets = fc.sample(goTargetText, 300).filter((t) => /^[\x21-\x7e]*$/.test(t));
    const seen = { path: 0, redirect: 0, unreadable: 0, unrouted: 0 };
    for (const target of targets) {
      const go = goReadTarget(target);
      const r = await rawGet(gw.url, target, { Authorization: "Bearer s3cret" });
      seen[go.kind]++;
      if (go.kind === "unreadable") {
        expect({ target, status: r.status, body: r.body, connection: r.headers.get("connection") }).toEqual({ target, status: 400, body: "400 Bad Request", connection: "close" });
      } else if (go.kind === "redirect") {
        expect({ target, status: r.status, location: r.headers.get("location") }).toEqual({ target, status: 301, location: go.location });
        expect(r.body).toBe(`<a href="${go.location.replace(/&/g, "&amp;").replace(/'/g, "&#39;")}">Moved Permanently</a>.\n\n`);
      } else if (![...GET_SHAPES, ...POST_SHAPES].some((s) => fits(s, go.segments))) {
        seen.unrouted++;
        expect({ target, status: r.status, body: r.body }).toEqual({ target, status: 404, body: "404 page not found\n" });
      } else {
        expect({ target, status: r.status }).not.toEqual({ target, status: 301 });
        expect(r.body).not.toBe("400 Bad Request");
      }
    }
    expect(seen.path).toBeGreaterThan(20);
    expect(seen.redirect).toBeGreaterThan(20);
    expect(seen.unreadable).toBeGreaterThan(20);
    expect(seen.unrouted).toBeGreaterThan(20);
  }, 60_000);

  it("the named cases: a fragment, an escaped dot, a dot segment, a bad escape (before authentication)", async () => {
    const auth = { Authorization: "Bearer s3cret" };
    expect((await rawGet(gw.url, "/v1/capabilities", auth)).status).toBe(200);
    for (const target of ["/v1/capabilities#x", "/v1/%2E/capabilities", "/v1/capabilities%2F"]) {
      const r = await rawGet(gw.url, target, auth);
      expect({ target, status: r.status, body: r.body }).toEqual({ target, status: 404, body: "404 page not found\n" });
    }
    const moved = await rawGet(gw.url, "/v1/./capabilities?x=1", auth);
    expect([moved.status, moved.headers.get("location")]).toEqual([301, "/v1/capabilities?x=1"]);
    // The mux answers after the middleware: without the token, 401 first.
    expect((await rawGet(gw.url, "/v1/./capabilities")).status).toBe(401);
    // The server refuses an unreadable target before any handler: 400 with no token too.
    const bad = await rawGet(gw.url, "/v1/sessions/%zz/status");
    expect([bad.status, bad.body]).toEqual([400, "400 Bad Request"]);
  });
});
