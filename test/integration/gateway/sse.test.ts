// The gateway's SSE beyond the Go handler: resume after Last-Event-ID at every position
// (gaps included) with no gap and no duplicate, the loop filter, headers at once, the
// heartbeat, and the slow-client rule (a client that cannot keep up is disconnected while
// another keeps receiving everything, and resumes where it stopped).
import { get, type IncomingMessage } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, type Jetloop, type JetloopEvent, newId, startGateway, type RunningGateway } from "../../../src/index.js";
import { natsServers, uniqueNamespace } from "../../harness/context.js";
import { waitFor } from "../../harness/async.js";
import { frameIds, frames, SseReader } from "./http.js";

let bus: Jetloop;
let gw: RunningGateway;
beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("gs") });
  await bus.provision();
  gw = await startGateway(bus, { listen: "127.0.0.1:0", heartbeatMs: 100 });
});
afterAll(async () => {
  await gw.close();
  await bus.close();
});

const seqOf = async (e: JetloopEvent) => (await bus.publish(e)).journalSeq;

describe("resume and filters", () => {
  const S = newId();
  const other = newId();
  const A = newId();
  const B = newId();
  const publicSeqs: number[] = [];
  const positions: number[] = [0];

  beforeAll(async () => {
    publicSeqs.push(await seqOf(createEvent("SessionStarted", { sessionId: S })));
    for (let i = 0; i < 12; i++) {
      const loopId = i % 2 === 0 ? A : B;
      publicSeqs.push(await seqOf(createEvent("TurnStarted", { sessionId: S, loopId, turnId: newId() })));
      // Another session's event and internal events leave gaps in S's sequences.
      positions.push(await seqOf(createEvent("SessionStarted", { sessionId: other })));
      if (i % 3 === 0) positions.push(await seqOf(createEvent("LoopIdle", { sessionId: S, loopId, visibility: "internal" })));
    }
    positions.push(...publicSeqs);
    positions.sort((a, b) => a - b);
  });

  it("resumes after every position, gaps included, with no gap and no duplicate", async () => {
    const last = publicSeqs.at(-1)!;
    for (const p of positions.filter((x) => x < last)) {
      const sse = await SseReader.open(`${gw.url}/v1/sessions/${S}/events`, { "Last-Event-ID": String(p) });
      await sse.until((t) => frameIds(t).includes(last));
      sse.close();
      expect(frameIds(sse.text), `after ${p}`).toEqual(publicSeqs.filter((s) => s > p));
    }
  });

  it("takes Last-Event-ID as a query parameter, then follows live with no seam", async () => {
    const mid = publicSeqs[5]!;
    const sse = await SseReader.open(`${gw.url}/v1/sessions/${S}/events?last_event_id=${mid}`);
    const more: number[] = [];
    for (let i = 0; i < 20; i++) more.push(await seqOf(createEvent("TurnStarted", { sessionId: S, loopId: A, turnId: newId() })));
    await sse.until((t) => frameIds(t).includes(more.at(-1)!));
    sse.close();
    expect(frameIds(sse.text)).toEqual([...publicSeqs, ...more].filter((s) => s > mid));
    publicSeqs.push(...more);
  });

  it("narrows the stream to one loop with loop= (session-scoped events pass)", async () => {
    const sse = await SseReader.open(`${gw.url}/v1/sessions/${S}/events?loop=${B}&last_event_id=0`);
    await sse.until((t) => frameIds(t).includes(publicSeqs[12]!));
    sse.close();
    const loops = frames(sse.text).map((f) => (JSON.parse(f.slice(f.indexOf("data: ") + 6)) as { event: { loop_id?: string } }).event.loop_id);
    expect(new Set(loops)).toEqual(new Set([undefined, B]));
    expect(loops.filter((l) => l === B).length).toBe(6);
  });

  it("refuses a malformed Last-Event-ID or loop", async () => {
    for (const q of ["last_event_id=-1", "last_event_id=x", "loop=nope"]) {
      const r = await fetch(`${gw.url}/v1/sessions/${S}/events?${q}`);
      expect([r.status, await r.text()]).toEqual([400, '{"error":{"code":"invalid_parameter","message":"invalid query parameter","retryable":false}}\n']);
    }
  });

  it("sends the headers at once and pings an idle stream", async () => {
    const idle = newId();
    await bus.publish(createEvent("SessionStarted", { sessionId: idle }));
    const sse = await SseReader.open(`${gw.url}/v1/sessions/${idle}/events`);
    await sse.until((t) => t.includes(": ping\n\n"), 5000);
    sse.close();
    expect(frames(sse.text)).toEqual([]);
  });
});

describe("slow clients", () => {
  it("disconnects a client that cannot keep up while another receives everything; it resumes where it stopped", async () => {
    // slowClientMs leaves the reading client room for a stalled event loop under load (CI ran
    // three integration files at once, and 1 s cut the fast client too); the paused one is
    // still cut, after 5 s.
    const slowGw = await startGateway(bus, { listen: "127.0.0.1:0", previewDropBytes: 64 * 1024, maxBufferedBytes: 256 * 1024, slowClientMs: 5000 });
    const S = newId();
    const loopId = newId();
    await bus.publish(createEvent("SessionStarted", { sessionId: S }));
    const fast = await SseReader.open(`${slowGw.url}/v1/sessions/${S}/events`);
    // The slow client reads nothing after the headers.
    const slow = await new Promise<IncomingMessage>((resolve) => get(`${slowGw.url}/v1/sessions/${S}/events`, resolve));
    slow.pause();
    let slowClosed = false;
    slow.on("close", () => (slowClosed = true));
    slow.on("error", () => undefined);
    const text = "x".repeat(100 * 1024);
    const seqs: number[] = [];
    let lastId = "never";
    // The fast client reads all along.
    const fastDone = fast.until((t) => t.includes(lastId), 60_000);
    for (let i = 0; i < 150; i++) {
      const step = { sessionId: S, loopId, turnId: newId(), stepId: newId() };
      seqs.push(await seqOf(createEvent("StepDone", { ...step, messages: [{ role: "assistant", blocks: [{ type: "text", text }] }] })));
    }
    lastId = `id: ${seqs.at(-1)!}\n`;
    await fastDone;
    fast.close();
    expect(frameIds(fast.text)).toEqual(seqs);
    await waitFor("the slow client to be disconnected", () => slowGw.handler.counters.slowDisconnects >= 1, 30_000);
    // What the slow client had received, read now, ends before the last event.
    slow.resume();
    let received = "";
    slow.setEncoding("utf8");
    slow.on("data", (c: string) => (received += c));
    await waitFor("the slow client's socket to close", () => slowClosed, 10_000);
    const got = frameIds(frames(received).filter((f) => f.endsWith("}}\n\n")).join(""));
    expect(got.length).toBeLessThan(seqs.length);
    expect(got).toEqual(seqs.slice(0, got.length));
    // It resumes with Last-Event-ID and misses nothing.
    const again = await SseReader.open(`${slowGw.url}/v1/sessions/${S}/events`, { "Last-Event-ID": String(got.at(-1) ?? 0) });
    await again.until((t) => frameIds(t).includes(seqs.at(-1)!), 60_000);
    again.close();
    expect(frameIds(again.text)).toEqual(seqs.slice(got.length));
    await slowGw.close();
  }, 120_000);
});
