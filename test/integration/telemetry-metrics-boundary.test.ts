// Adversary attack on `/metrics`: the loopback bind alone does not keep a browser out. A
// page on another origin that rebinds its own name to 127.0.0.1 (DNS rebinding) reaches
// the metrics port same-origin, under its own Host; a cross-origin fetch with CORS off
// still gets the request served. The gateway's browser boundary (gateway/boundary.ts)
// applies: a Host that does not name the server, an Origin other than its own, a browser
// saying cross-site, are refused before anything is collected.
import { request } from "node:http";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError, startMetricsServer, type MetricsServer } from "../../src/index.js";
import { jetloop } from "../harness/cli.js";
import { natsUrl } from "../harness/context.js";

let server: MetricsServer;
let port: number;

beforeAll(async () => {
  server = await startMetricsServer({ listen: "127.0.0.1:0" });
  port = Number(new URL(server.url).port);
});
afterAll(async () => {
  await server?.close();
});

function get(headers: Record<string, string>): Promise<{ status: number; body: string; cors: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/metrics", headers, setHost: headers.Host === undefined }, (res) => {
      let body = "";
      res.on("data", (b: Buffer) => (body += b.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, cors: res.headers["access-control-allow-origin"] }));
    });
    req.on("error", reject);
    req.end();
  });
}

const label = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}[a-z0-9]$/);
const foreignHost = fc.oneof(
  fc.tuple(label, fc.constantFrom("example", "attacker.test", "localhost.evil.com", "127.0.0.1.nip.io")).map(([a, b]) => `${a}.${b}`),
  fc.constantFrom("127.1", "0x7f000001", "2130706433", "[::ffff:7f00:1]", "localhost.", "LOCALHOST.attacker.example"),
);

describe("GET /metrics behind the browser boundary", () => {
  it("serves a scraper that names the server (Host 127.0.0.1, localhost) and sends no Origin", async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      const r = await get({ Host: host });
      expect(r.status).toBe(200);
      expect(r.body).toContain("# ");
    }
  });

  it("refuses every Host that does not name the server (a DNS-rebinding page's own name)", async () => {
    await fc.assert(
      fc.asyncProperty(foreignHost, fc.boolean(), async (host, withPort) => {
        const r = await get({ Host: withPort ? `${host}:${port}` : host });
        expect(r.status).toBe(403);
        expect(r.body).not.toContain("jetloop");
      }),
      { numRuns: 40 },
    );
  });

  it("refuses a request from a page on any other origin, and a browser's cross-site fetch without Origin", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom("http", "https"), foreignHost, async (scheme, host) => {
        const r = await get({ Host: `127.0.0.1:${port}`, Origin: `${scheme}://${host}` });
        expect(r.status).toBe(403);
        expect(r.cors).toBeUndefined();
      }),
      { numRuns: 40 },
    );
    for (const origin of ["null", "http://127.0.0.1:1", `http://localhost:${port + 1}`]) {
      expect((await get({ Host: `127.0.0.1:${port}`, Origin: origin })).status).toBe(403);
    }
    for (const site of ["cross-site", "same-site"]) {
      expect((await get({ Host: `127.0.0.1:${port}`, "Sec-Fetch-Site": site })).status).toBe(403);
    }
  });

  it("checks its host list eagerly", async () => {
    await expect(startMetricsServer({ listen: "127.0.0.1:0", allowedHosts: ["metrics.internal:9464"] })).rejects.toBeInstanceOf(OptionsError);
  });

  it("with telemetry turned off (JETLOOP_TELEMETRY=off), --metrics fails with TelemetryUnavailableError, not a TypeError", async () => {
    const r = await jetloop(["gateway", "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--server", natsUrl(), "--namespace", "telemetry-off"], { ...process.env, JETLOOP_TELEMETRY: "off" });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/TELEMETRY_UNAVAILABLE|JETLOOP_TELEMETRY=off/);
    expect(r.stderr).not.toMatch(/TypeError/);
  });
});
