// Events at the size limit on every read path — replay, feed history, a durable, a group
// member, a journal page, an SSE stream resumed from the start — while 100 SSE viewers of
// another session keep receiving on the same gateway. Every read runs on the gateway's own
// bus, the NATS connection its viewers share: no read may make the server cut it (a slow
// consumer: more bytes owed to the connection than the server's max_pending) or stall.
//
// The server here runs with max_pending 24 MB instead of nats-server's 64 MB default, so
// that a read pulling the journal by count alone (512 or 256 at once) overruns it with
// 32 events of 1 MB instead of 70: the test stays a few seconds per path.
import type { DurableDelivery } from "../../src/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, type Jetloop, type JetloopEvent, newId, startGateway, type RunningGateway } from "../../src/index.js";
import { eventCapOf, eventOfSize } from "../harness/big-events.js";
import { uniqueNamespace } from "../harness/context.js";
import { startServer, type NatsServer } from "../harness/server.js";
import { request, SseReader } from "./gateway/http.js";
import { reportFigure } from "../harness/figures-log.js";

const EVENTS = 32;
const VIEWERS = 100;
let server: NatsServer;
let writer: Jetloop;
let bus: Jetloop;
let gw: RunningGateway;
const disconnects: string[] = [];
const big = newId();
const quiet = newId();
let viewers: SseReader[] = [];
const bigSeqs: number[] = [];

beforeAll(async () => {
  server = await startServer({ configText: "max_pending: 24MB\n" });
  const namespace = uniqueNamespace("mb");
  writer = await connect({ servers: [server.url], namespace });
  await writer.provision({ partitions: 2 });
  bus = await connect({ servers: [server.url], namespace });
  void (async () => {
    for await (const s of bus.nc.status()) if (s.type === "disconnect" || s.type === "error" || s.type === "slowConsumer") disconnects.push(s.type);
  })();
  const cap = eventCapOf(writer);
  for (let i = 0; i < EVENTS; i++) bigSeqs.push((await writer.publish(eventOfSize(cap, big))).journalSeq);
  await writer.publish(createEvent("SessionStarted", { sessionId: quiet }));
  gw = await startGateway(bus, { listen: "127.0.0.1:0", maxStreamsPerClient: VIEWERS + 10, maxConnectionsPerClient: VIEWERS + 50 });
  viewers = await Promise.all(Array.from({ length: VIEWERS }, () => SseReader.open(`${gw.url}/v1/sessions/${quiet}/events`)));
}, 120_000);

afterAll(async () => {
  for (const v of viewers) v.close();
  await gw?.close();
  await bus?.close();
  await writer?.close();
  await server?.stop();
});

/** Every viewer receives an event published now: the shared connection still carries them. */
async function viewersStillReceive(before: number): Promise<void> {
  const sentinel = await writer.publish(createEvent("SessionStopped", { sessionId: quiet }));
  await Promise.all(viewers.map((v) => v.until((t) => t.includes(`id: ${sentinel.journalSeq}\n`), 30_000)));
  expect(disconnects.slice(before)).toEqual([]);
}

/** Runs one read path, timed, then checks the viewers. */
async function path(name: string, read: () => Promise<number[]>, expected: number[] = bigSeqs): Promise<void> {
  const before = disconnects.length;
  const started = Date.now();
  const seqs = await read();
  reportFigure(`[megabyte-events] ${name}: ${seqs.length} events of ~1 MB in ${Date.now() - started} ms`);
  expect(seqs).toEqual(expected);
  await viewersStillReceive(before);
}

describe(`${EVENTS} events at the size limit on every read path, while ${VIEWERS} SSE viewers keep receiving`, () => {
  it("replay", async () => {
    await path("replay", async () => {
      const seqs: number[] = [];
      for await (const d of bus.session(big).replay({ enduring: "all" })) seqs.push(d.journalSeq);
      return seqs;
    });
  }, 60_000);

  it("feed history", async () => {
    await path("feed history", async () => {
      const sub = await bus.subscribeEvents({ sessions: [big], enduring: "all" }, { start: "all" });
      const seqs: number[] = [];
      try {
        for await (const d of sub) {
          seqs.push(d.journalSeq);
          if (seqs.length === EVENTS) break;
        }
      } finally {
        await sub.close();
      }
      return seqs;
    });
  }, 60_000);

  it("durable", async () => {
    await path("durable", async () => {
      const sub = await bus.subscribeEvents({ sessions: [big], enduring: "all" }, { durable: `mb-${newId().slice(-8)}`, start: "all" });
      const seqs: number[] = [];
      try {
        for await (const d of sub) {
          seqs.push(d.journalSeq);
          await d.ack();
          if (seqs.length === EVENTS) break;
        }
      } finally {
        await sub.close();
      }
      return seqs;
    });
  }, 60_000);

  it("group member", async () => {
    // A group starts at the journal's end: its events are published once it is there.
    const session = newId();
    const sub = await bus.subscribeEvents({ enduring: "all" }, { durable: `mg-${newId().slice(-8)}`, group: { member: "a" }, start: "new" });
    const seqs: number[] = [];
    const got = (async () => {
      for await (const d of sub as AsyncIterable<DurableDelivery<JetloopEvent>>) {
        seqs.push(d.journalSeq);
        await d.ack();
        if (seqs.length === 8) break;
      }
    })();
    const cap = eventCapOf(writer);
    const published: number[] = [];
    for (let i = 0; i < 8; i++) published.push((await writer.publish(eventOfSize(cap, session))).journalSeq);
    try {
      await path("group member", async () => (await got, seqs), published);
    } finally {
      await sub.close();
    }
  }, 60_000);

  it("journal pages: a page at limit 1000 is bounded in bytes, and paging to done reads every event once", async () => {
    await path("journal pages", async () => {
      const seqs: number[] = [];
      let from = 0;
      for (;;) {
        const r = await request(`${gw.url}/v1/sessions/${big}/journal?limit=1000&from_journal_seq=${from}`);
        expect(r.status).toBe(200);
        expect(r.body.length).toBeLessThanOrEqual(16 * 1024 * 1024 + 64 * 1024);
        const page = JSON.parse(r.body) as { events: { journal_seq: number }[]; next_journal_seq: number; done: boolean };
        seqs.push(...page.events.map((e) => e.journal_seq));
        if (page.done) break;
        expect(page.events.length).toBeGreaterThan(0);
        from = page.next_journal_seq;
      }
      return seqs;
    });
  }, 60_000);

  it("an SSE stream resumed from the start", async () => {
    await path("SSE from Last-Event-ID 0", async () => {
      // Read as a client would, line by line; only the id lines are kept (the data lines are megabytes).
      const controller = new AbortController();
      const res = await fetch(`${gw.url}/v1/sessions/${big}/events`, { headers: { "Last-Event-ID": "0" }, signal: controller.signal });
      expect(res.status).toBe(200);
      const last = bigSeqs[bigSeqs.length - 1]!;
      const seqs: number[] = [];
      const decoder = new TextDecoder();
      let line = "";
      const deadline = AbortSignal.timeout(30_000);
      try {
        for (const reader = res.body!.getReader(); ; ) {
          const { done, value: chunk } = await reader.read();
          if (done) break;
          if (deadline.aborted) throw new Error(`SSE: ${seqs.length} events in 30 s`);
          const parts = (line + decoder.decode(chunk, { stream: true })).split("\n");
          line = parts.pop()!;
          if (line.length > 64 && !line.startsWith("id: ")) line = "-"; // inside a data line: its rest is not needed
          for (const l of parts) if (l.startsWith("id: ")) seqs.push(Number(l.slice(4)));
          if (seqs.includes(last)) break;
        }
      } finally {
        controller.abort();
      }
      return seqs.filter((n) => bigSeqs.includes(n));
    });
  }, 60_000);
});
