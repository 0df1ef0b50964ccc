// The gateway's reads share one NATS connection with every viewer: together they may never
// owe it more than the server's max_pending, or the server cuts it as a slow consumer and
// every viewer with it. 30 concurrent journal pages of events at the size limit and 60
// concurrent status requests of those sessions, while SSE viewers of another session keep
// receiving: the connection never drops, every request is answered correctly (they queue
// for the connection's read budget instead of overrunning it).
//
// The server runs with max_pending 24 MB (nats-server's default is 64 MB), as in
// megabyte-events.test.ts, so that a few reads at once overrun it: the gateway is told so.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, type Jetloop, newId, startGateway, type RunningGateway } from "../../../src/index.js";
import { eventCapOf, eventOfSize } from "../../harness/big-events.js";
import { uniqueNamespace } from "../../harness/context.js";
import { startServer, type NatsServer } from "../../harness/server.js";
import { request, SseReader } from "./http.js";
import { reportFigure } from "../../harness/figures-log.js";

const PER_SESSION = 4;
const VIEWERS = 10;
let server: NatsServer;
let writer: Jetloop;
let bus: Jetloop;
let gw: RunningGateway;
const disconnects: string[] = [];
const big = [newId(), newId(), newId()];
const stored = new Map<string, number[]>();
const quiet = newId();
let viewers: SseReader[] = [];

beforeAll(async () => {
  server = await startServer({ configText: "max_pending: 24MB\n" });
  const namespace = uniqueNamespace("rb");
  writer = await connect({ servers: [server.url], namespace });
  await writer.provision();
  bus = await connect({ servers: [server.url], namespace });
  void (async () => {
    for await (const s of bus.nc.status()) if (s.type === "disconnect" || s.type === "error" || s.type === "slowConsumer") disconnects.push(s.type);
  })();
  const cap = eventCapOf(writer);
  for (const sid of big) {
    const seqs = [(await writer.publish(createEvent("SessionStarted", { sessionId: sid }))).journalSeq];
    for (let i = 0; i < PER_SESSION; i++) seqs.push((await writer.publish(eventOfSize(cap, sid))).journalSeq);
    stored.set(sid, seqs);
  }
  await writer.publish(createEvent("SessionStarted", { sessionId: quiet }));
  gw = await startGateway(bus, { listen: "127.0.0.1:0", natsMaxPendingBytes: 24 * 1024 * 1024, maxStreamsPerClient: VIEWERS + 10, maxConnectionsPerClient: 200 });
  viewers = await Promise.all(Array.from({ length: VIEWERS }, () => SseReader.open(`${gw.url}/v1/sessions/${quiet}/events`)));
}, 120_000);

afterAll(async () => {
  for (const v of viewers) v.close();
  await gw?.close();
  await bus?.close();
  await writer?.close();
  await server?.stop();
});

describe("concurrent reads of megabyte events on the gateway's one connection", () => {
  it("30 journal pages and 60 status requests at once: all answered correctly, the connection never cut, viewers still receiving", async () => {
    const started = Date.now();
    const pages = Array.from({ length: 30 }, async (_, i) => {
      const sid = big[i % big.length]!;
      const r = await request(`${gw.url}/v1/sessions/${sid}/journal`);
      expect(r.status).toBe(200);
      const page = JSON.parse(r.body) as { events: { journal_seq: number }[]; done: boolean };
      expect(page.events.map((e) => e.journal_seq)).toEqual(stored.get(sid));
      expect(page.done).toBe(true);
    });
    const statuses = Array.from({ length: 60 }, async (_, i) => {
      const sid = big[i % big.length]!;
      const r = await request(`${gw.url}/v1/sessions/${sid}/status`);
      expect([r.status, (JSON.parse(r.body) as { last_journal_seq: number }).last_journal_seq]).toEqual([200, stored.get(sid)!.at(0)]);
    });
    await Promise.all([...pages, ...statuses]);
    reportFigure(`[read-budget] 30 pages of ${PER_SESSION} events of ~1 MB and 60 statuses in ${Date.now() - started} ms; connection events: ${JSON.stringify(disconnects)}`);
    const sentinel = await writer.publish(createEvent("SessionStopped", { sessionId: quiet }));
    await Promise.all(viewers.map((v) => v.until((t) => t.includes(`id: ${sentinel.journalSeq}\n`), 30_000)));
    expect(disconnects).toEqual([]);
  }, 180_000);
});
