/**
 * 13. The gateway's routing: jetloop's hand-written routes on `node:http` against the same
 * gateway behind a framework's router (Hono on `@hono/node-server`), in one run, on the
 * two routes the layout review named: the journal page and the SSE route.
 *
 * The framework side dispatches its matched routes to the very handler the other side
 * serves (through the node bindings: `c.env.outgoing`, `RESPONSE_ALREADY_SENT`), so both
 * write the same bytes and the only difference is what a framework adds per request: its
 * router and the translation of each `IncomingMessage` into a Web `Request`. The gateway's
 * own routing still runs behind it; its cost (`route()`, measured alone) is what adopting
 * the framework would remove, so "framework" + "our routing" is the framework's best case.
 *
 * Journal page: GETs per second, 8 keep-alive clients, each page 50 events of one of 20
 * sessions. SSE: streams opened per second, each reading a session's 50 stored events
 * (Last-Event-ID: 0) and closing. Medians of the repetitions, rotated.
 */
import { request, Agent, type IncomingMessage, type ServerResponse, createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type HttpBindings, serve } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { Hono } from "hono";
import { createGatewayHandler } from "../src/gateway/index.js";
import { route, servedTarget } from "../src/gateway/routes.js";
import { type BenchContext, compareRow, type Row } from "./lib/context.js";
import { coordinates, enduringEvent, publishInChunks } from "./lib/events.js";
import { nowMs, rotatedRounds } from "./lib/stats.js";

const SESSIONS = 20;
const EVENTS_PER_SESSION = 50;
const CLIENTS = 8;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

async function listening(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The gateway behind Hono's router: each route hands the node request to the gateway's handler. */
function honoServer(handler: Handler): Promise<{ url: string; close(): void }> {
  const app = new Hono<{ Bindings: HttpBindings }>();
  const pass = (c: { env: HttpBindings }) => {
    handler(c.env.incoming, c.env.outgoing);
    return RESPONSE_ALREADY_SENT;
  };
  app.get("/v1/sessions/:sid/journal", pass);
  app.get("/v1/sessions/:sid/events", pass);
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) =>
      resolve({ url: `http://127.0.0.1:${info.port}`, close: () => server.close() }),
    );
  });
}

function get(agent: Agent, url: string, headers: Record<string, string> = {}): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, headers }, resolve);
    req.once("error", reject);
    req.end();
  });
}

async function bodyOf(res: IncomingMessage): Promise<string> {
  let text = "";
  res.setEncoding("utf8");
  for await (const chunk of res) text += chunk as string;
  return text;
}

/** Journal pages per second: CLIENTS loops, `total` pages in all. */
async function pages(base: string, sessions: readonly string[], total: number): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
  let next = 0;
  const t0 = nowMs();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < total) {
        const sid = sessions[next++ % sessions.length]!;
        const res = await get(agent, `${base}/v1/sessions/${sid}/journal?limit=${EVENTS_PER_SESSION}`);
        const text = await bodyOf(res);
        if (res.statusCode !== 200 || text.split('"journal_seq"').length !== EVENTS_PER_SESSION + 1) throw new Error(`journal page: ${res.statusCode} ${text.slice(0, 200)}`);
      }
    }),
  );
  agent.destroy();
  return (total / (nowMs() - t0)) * 1000;
}

/** SSE streams opened, read to their stored events' end and closed, per second. */
async function streams(base: string, sessions: readonly string[], total: number): Promise<number> {
  const agent = new Agent({ keepAlive: false, maxSockets: CLIENTS });
  let next = 0;
  const t0 = nowMs();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < total) {
        const sid = sessions[next++ % sessions.length]!;
        const res = await get(agent, `${base}/v1/sessions/${sid}/events`, { "Last-Event-ID": "0" });
        if (res.statusCode !== 200) throw new Error(`events: ${res.statusCode} ${await bodyOf(res)}`);
        res.setEncoding("utf8");
        let text = "";
        for await (const chunk of res) {
          text += chunk as string;
          if (text.split("event: enduring\n").length > EVENTS_PER_SESSION) break;
        }
        res.destroy();
      }
    }),
  );
  agent.destroy();
  return (total / (nowMs() - t0)) * 1000;
}

/** The gateway's own routing alone, per request: what adopting a framework would remove. */
function routingMicroseconds(sessions: readonly string[]): number {
  const n = 200_000;
  const res = { writeHead: () => res, end: () => res, setHeader: () => undefined } as unknown as ServerResponse;
  const reqs = sessions.map((sid) => ({ url: `/v1/sessions/${sid}/journal?limit=50`, method: "GET", headers: {} }) as IncomingMessage);
  const t0 = nowMs();
  for (let i = 0; i < n; i++) {
    const req = reqs[i % reqs.length]!;
    const target = servedTarget(req, res);
    if (target === undefined || route(req, res, target) === undefined) throw new Error("routing benchmark: no route");
  }
  return ((nowMs() - t0) * 1000) / n;
}

export async function runRouter(ctx: BenchContext): Promise<Row[]> {
  const s = await ctx.setup("router");
  const sessions: string[] = [];
  const events = [];
  for (let i = 0; i < SESSIONS; i++) {
    const c = coordinates();
    sessions.push(c.sessionId);
    for (let k = 0; k < EVENTS_PER_SESSION; k++) events.push(enduringEvent(c));
  }
  await publishInChunks(s.bus, events);
  const gateway = createGatewayHandler(s.bus);
  const plain = createServer(gateway);
  const plainUrl = await listening(plain);
  const hono = await honoServer(gateway);
  const total = ctx.options.quick ? 400 : 4_000;
  const sseTotal = ctx.options.quick ? 100 : 600;
  try {
    const contenders = {
      pageNode: () => pages(plainUrl, sessions, total),
      pageHono: () => pages(hono.url, sessions, total),
      sseNode: () => streams(plainUrl, sessions, sseTotal),
      sseHono: () => streams(hono.url, sessions, sseTotal),
      routeUs: () => Promise.resolve(routingMicroseconds(sessions)),
    };
    for (const run of Object.values(contenders)) await run();
    const samples = await rotatedRounds("router", ctx.options.reps, (m) => ctx.log(m), contenders);
    const routeUs = [...samples.routeUs].sort((a, b) => a - b)[Math.floor(samples.routeUs.length / 2)]!;
    const note = `the gateway's own routing (target read, route matched, query read) alone: ${routeUs.toFixed(2)} µs per request, in the node:http figure and removed by a framework`;
    const label = { bench: "13 gateway routing", unit: "requests/s", raw: "same gateway behind Hono's router" };
    return [
      { ...compareRow({ ...label, metric: "journal page (50 events)" }, samples.pageNode, samples.pageHono), note },
      { ...compareRow({ ...label, metric: "SSE stream opened, 50 stored events read" }, samples.sseNode, samples.sseHono), note },
    ];
  } finally {
    hono.close();
    plain.close();
    await gateway.close();
    await s.close();
  }
}
