// NATS stopped and restarted under a running gateway (a private nats-server): the JSON API
// answers 503 nats_unavailable (retryable) while it is down, the log has one line each
// way and no stack, and an SSE stream open across the outage goes on with every journal
// sequence once, in order.
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, type Jetloop, newId, startGateway, type RunningGateway } from "../../../src/index.js";
import { uniqueNamespace } from "../../harness/context.js";
import { waitFor } from "../../harness/async.js";
import { startServer, type NatsServer } from "../../harness/server.js";
import { frameIds, request, SseReader } from "./http.js";

let server: NatsServer;
let bus: Jetloop;
let gw: RunningGateway;
const lines: string[] = [];

beforeAll(async () => {
  server = await startServer();
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString("utf8").split("\n").filter((l) => l !== ""));
      done();
    },
  });
  bus = await connect({ servers: server.url, namespace: uniqueNamespace("go"), logger: pino({ level: "warn" }, sink), natsOptions: { reconnectTimeWait: 200, maxReconnectAttempts: -1 } });
  await bus.provision();
  gw = await startGateway(bus, { listen: "127.0.0.1:0" });
});
afterAll(async () => {
  await gw?.close();
  await bus?.close();
  await server?.close();
});

describe("NATS down under the gateway", () => {
  it("answers 503 nats_unavailable while down, logs one line each way, and the open stream resumes exact", async () => {
    const sid = newId();
    const seqs: number[] = [];
    const publish = async () => seqs.push((await bus.publish(createEvent("SessionStarted", { sessionId: sid }))).journalSeq);
    for (let i = 0; i < 3; i++) await publish();
    const sse = await SseReader.open(`${gw.url}/v1/sessions/${sid}/events?last_event_id=0`);
    await sse.until((t) => frameIds(t).length === 3);

    await server.stop();
    const paths = ["/v1/sessions", `/v1/sessions/${sid}/status`, `/v1/sessions/${sid}/journal`, `/v1/sessions/${sid}/events`];
    await waitFor("the gateway to see the outage", async () => (await request(`${gw.url}/v1/sessions`)).status === 503, 10_000);
    for (const path of paths) {
      const r = await request(`${gw.url}${path}`);
      expect([path, r.status, r.body]).toEqual([path, 503, '{"error":{"code":"nats_unavailable","message":"journal server unavailable","retryable":true}}\n']);
    }
    expect((await request(`${gw.url}/v1/capabilities`)).status).toBe(200); // static routes need no NATS

    await server.restart();
    await waitFor("the gateway to see the server back", async () => (await request(`${gw.url}/v1/sessions`)).status === 200, 20_000);
    for (let i = 0; i < 3; i++) await publish();
    await sse.until((t) => frameIds(t).at(-1) === seqs.at(-1));
    sse.close();
    expect(frameIds(sse.text)).toEqual(seqs);

    const gatewayLines = lines.filter((l) => l.includes("gateway:"));
    expect(gatewayLines.filter((l) => l.includes("journal server disconnected"))).toHaveLength(1);
    expect(gatewayLines.filter((l) => l.includes("journal server reconnected"))).toHaveLength(1);
    expect(lines.filter((l) => l.includes('"stack"'))).toEqual([]);
  }, 60_000);
});
