// RELIABILITY.md scenario 15 at full size: 300 events at the size limit (1 MB each on a
// default server) replayed, and paged through the gateway at limit=1000, on the gateway's
// own connection while 100 SSE viewers of another session share it. The suite's lean
// version is test/integration/megabyte-events.test.ts (32 events, a server with a smaller
// max_pending). The server here has nats-server's defaults (max_pending 64 MB).
//
//   npx tsx scripts/megabyte-events.ts [--events 300] [--viewers 100]
//
// Prints the figures and writes them to .bench-out/reliability/soak-<flavor>/; exits 1 when
// a read lost an event, the shared connection was cut, or a viewer stopped receiving.
import { connect, createEvent, newId, startGateway } from "../src/index.js";
import { eventCapOf, eventOfSize } from "../test/harness/big-events.js";
import { writeScenarioRecord } from "../test/harness/reliability/figures.js";
import { serverFlavor, startServer } from "../test/harness/server.js";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i === -1 ? fallback : Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} must be a positive integer`);
  return v;
}

const EVENTS = arg("events", 300);
const VIEWERS = arg("viewers", 100);
const started = Date.now();
const server = await startServer();
const namespace = `mb${newId().slice(-8)}`;
const writer = await connect({ servers: [server.url], namespace });
await writer.provision();
const bus = await connect({ servers: [server.url], namespace });
const cuts: string[] = [];
void (async () => {
  for await (const s of bus.nc.status()) if (s.type === "disconnect" || s.type === "slowConsumer") cuts.push(s.type);
})();
const big = newId();
const quiet = newId();
const cap = eventCapOf(writer);
const seqs: number[] = [];
for (let i = 0; i < EVENTS; i += 16) {
  const chunk = await Promise.all(Array.from({ length: Math.min(16, EVENTS - i) }, () => writer.publish(eventOfSize(cap, big))));
  seqs.push(...chunk.map((a) => a.journalSeq));
}
seqs.sort((a, b) => a - b);
await writer.publish(createEvent("SessionStarted", { sessionId: quiet }));
const gw = await startGateway(bus, { listen: "127.0.0.1:0", maxStreamsPerClient: VIEWERS + 10, maxConnectionsPerClient: VIEWERS + 50 });

// The viewers: each counts the ids it receives on the quiet session.
const controllers: AbortController[] = [];
const viewerIds = await Promise.all(
  Array.from({ length: VIEWERS }, async () => {
    const controller = new AbortController();
    controllers.push(controller);
    const res = await fetch(`${gw.url}/v1/sessions/${quiet}/events`, { signal: controller.signal });
    const ids = new Set<number>();
    void (async () => {
      const decoder = new TextDecoder();
      let text = "";
      for (const reader = res.body!.getReader(); ; ) {
        const { done, value: chunk } = await reader.read();
        if (done) break;
        text += decoder.decode(chunk, { stream: true });
        for (const m of text.matchAll(/^id: (\d+)$/gm)) ids.add(Number(m[1]));
        text = text.slice(text.lastIndexOf("\n") + 1);
      }
    })().catch(() => undefined);
    return ids;
  }),
);
async function viewersReceive(): Promise<number> {
  const sentinel = (await writer.publish(createEvent("SessionStopped", { sessionId: quiet }))).journalSeq;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && viewerIds.some((ids) => !ids.has(sentinel))) await new Promise((r) => setTimeout(r, 50));
  return viewerIds.filter((ids) => ids.has(sentinel)).length;
}

const t0 = Date.now();
const replayed: number[] = [];
for await (const d of bus.session(big).replay({ enduring: "all" })) replayed.push(d.journalSeq);
const replayMs = Date.now() - t0;
const afterReplay = await viewersReceive();

const t1 = Date.now();
const paged: number[] = [];
let pages = 0;
let largestPage = 0;
for (let from = 0; ; ) {
  const body = await (await fetch(`${gw.url}/v1/sessions/${big}/journal?limit=1000&from_journal_seq=${from}`)).text();
  const page = JSON.parse(body) as { events: { journal_seq: number }[]; next_journal_seq: number; done: boolean };
  pages++;
  largestPage = Math.max(largestPage, Buffer.byteLength(body));
  paged.push(...page.events.map((e) => e.journal_seq));
  if (page.done) break;
  from = page.next_journal_seq;
}
const pagesMs = Date.now() - t1;
const afterPages = await viewersReceive();

for (const c of controllers) c.abort();
await gw.close();
await bus.close();
await writer.close();
await server.stop();

const lostReplay = seqs.filter((s) => !replayed.includes(s)).length;
const lostPages = seqs.filter((s) => !paged.includes(s)).length;
const facts = {
  "event size (bytes)": cap,
  "replay: events": replayed.length,
  "replay: time (ms)": replayMs,
  "journal pages at limit=1000: pages": pages,
  "journal pages: largest page (bytes)": largestPage,
  "journal pages: time (ms)": pagesMs,
  "SSE viewers on the shared connection": VIEWERS,
  "viewers receiving after the replay": afterReplay,
  "viewers receiving after the pages": afterPages,
  "shared connection cut": cuts.length,
};
console.log(facts);
writeScenarioRecord({
  id: "15-megabyte-events",
  title: "15. Events at the size limit on a shared connection",
  run: `soak-${serverFlavor()}`,
  serverVersion: server.version,
  finishedAt: new Date().toISOString(),
  durationMs: Date.now() - started,
  rows: [
    { what: "replay", published: EVENTS, delivered: replayed.length, lost: lostReplay, duplicated: replayed.length - new Set(replayed).size },
    { what: "journal pages (gateway, limit=1000)", published: EVENTS, delivered: paged.length, lost: lostPages, duplicated: paged.length - new Set(paged).size },
  ],
  facts,
});
const broken = lostReplay > 0 || lostPages > 0 || cuts.length > 0 || afterReplay < VIEWERS || afterPages < VIEWERS;
process.exit(broken ? 1 : 0);
