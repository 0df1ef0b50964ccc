// A connection's requests answered one at a time (Go's net/http), at most
// maxPipelinedRequests held: one socket pipelining thousands of session lists without
// reading an answer leaves the gateway's memory bounded while other clients keep being
// answered; a client pipelining within the cap gets every answer, in order; one more than
// the cap closes its connection.
import fc from "fast-check";
import { connect as netConnect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, type Jetloop, newId, startGateway } from "../../../src/index.js";
import { startGatewayProcess, type GatewayProcess } from "../../harness/gateway-process.js";
import { natsServers, natsUrl, uniqueNamespace } from "../../harness/context.js";
import { rssMiB } from "../../harness/header-flood.js";
import { request } from "./http.js";
import { reportFigure } from "../../harness/figures-log.js";

const TOKEN = "pipelining-test-token";
const auth = { Authorization: `Bearer ${TOKEN}` };
const SESSIONS = 200;
let bus: Jetloop;
let gateway: GatewayProcess;

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("pl") });
  await bus.provision();
  await Promise.all(Array.from({ length: SESSIONS }, () => bus.publish(createEvent("SessionStarted", { sessionId: newId() }))));
  gateway = await startGatewayProcess({ server: natsUrl(), namespace: bus.namespace, token: TOKEN });
}, 60_000);

afterAll(async () => {
  await gateway?.stop();
  await bus.close();
});

function openSocket(target: string): Promise<Socket> {
  const u = new URL(target);
  return new Promise((resolve, reject) => {
    const s = netConnect({ port: Number(u.port), host: u.hostname }, () => resolve(s));
    s.on("error", reject);
  });
}

const get = (url: string, path: string, extra = "") => `GET ${path} HTTP/1.1\r\nHost: ${new URL(url).host}\r\nAuthorization: Bearer ${TOKEN}\r\n${extra}\r\n`;

/** Status lines and bodies of the answers read from `s` until it closes or `count` are in. */
function answers(s: Socket, count: number): Promise<{ statuses: number[]; bodies: string[]; closed: boolean }> {
  let buf = Buffer.alloc(0);
  const statuses: number[] = [];
  const bodies: string[] = [];
  return new Promise((resolve) => {
    const done = (closed: boolean) => resolve({ statuses, bodies, closed });
    s.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      for (;;) {
        const head = buf.indexOf("\r\n\r\n");
        if (head < 0) return;
        const text = buf.subarray(0, head).toString("latin1");
        const length = /\r\ncontent-length: (\d+)/i.exec(text);
        // Every answer here is short enough to carry its length (the page and list routes' rule).
        if (!length) throw new Error(`an answer without Content-Length: ${text}`);
        const end = head + 4 + Number(length[1]);
        if (buf.length < end) return;
        statuses.push(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)![1]));
        bodies.push(buf.subarray(head + 4, end).toString("utf8"));
        buf = buf.subarray(end);
        if (statuses.length === count) return done(false);
      }
    });
    s.on("close", () => done(true));
  });
}

describe("one connection pipelining requests", () => {
  it("pipelining thousands of lists without reading: the gateway's memory stays bounded and other clients are answered", async () => {
    const pid = gateway.pid;
    expect((await request(`${gateway.url}/v1/sessions?limit=1000`, { headers: auth })).status).toBe(200);
    const before = await rssMiB(pid);
    const s = await openSocket(gateway.url);
    // Never read: no 'data' listener, so the socket's answers back up to the gateway.
    const one = get(gateway.url, "/v1/sessions?limit=1000");
    const closed = new Promise<void>((r) => s.once("close", () => r()));
    s.on("error", () => undefined);
    s.write(one.repeat(10_000));
    let peak = before;
    let answered = 0;
    const end = Date.now() + 4000;
    while (Date.now() < end) {
      const r = await request(`${gateway.url}/v1/sessions?limit=10`, { headers: auth });
      expect(r.status).toBe(200);
      answered++;
      peak = Math.max(peak, await rssMiB(pid));
    }
    reportFigure(`[pipelining] gateway RSS ${before.toFixed(0)} MiB before, peak ${peak.toFixed(0)} MiB while one socket pipelined 10,000 lists; ${answered} other answers`);
    expect(answered).toBeGreaterThan(0);
    // Unbounded, the lists ran together and their answers were held: hundreds of MiB.
    expect(peak - before).toBeLessThan(60);
    // The gateway cut the connection (more than the cap unanswered), it did not hold it.
    await closed;
  }, 60_000);
});

describe("the pipeline cap, generated", () => {
  it("within the cap every answer comes, in order; one more than the cap closes the connection", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 8 }), fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 12 }), async (cap, limits) => {
        const gw = await startGateway(bus, { listen: "127.0.0.1:0", token: TOKEN, maxPipelinedRequests: cap });
        try {
          const s = await openSocket(gw.url);
          s.on("error", () => undefined);
          // Each request names its own limit: the answer echoes it, so the order shows.
          const got = answers(s, limits.length);
          s.write(limits.map((l) => get(gw.url, `/v1/sessions?limit=${l}`)).join(""));
          const { statuses, bodies, closed } = await got;
          if (limits.length <= cap) {
            expect(closed).toBe(false);
            expect(statuses).toEqual(limits.map(() => 200));
            expect(bodies.map((b) => (JSON.parse(b) as { limit: number }).limit)).toEqual(limits);
          } else {
            // Cut once it held `cap`: the answers that came are the first ones, in order.
            expect(closed).toBe(true);
            expect(statuses.length).toBeLessThan(limits.length);
            expect(bodies.map((b) => (JSON.parse(b) as { limit: number }).limit)).toEqual(limits.slice(0, bodies.length));
          }
          s.destroy();
        } finally {
          await gw.close();
        }
      }),
      { numRuns: 25 },
    );
  }, 120_000);
});
