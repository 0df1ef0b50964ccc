// RELIABILITY.md scenario 17 (the session list over 10,000 sessions, from the session
// catalog), measured on a nats-server process of its own: the gateway's list latency for
// pages of 20, and the consumers 5 concurrent lists open (from the server's consumer
// advisories: the peak open at once, not a sample). Writes its record into
// .bench-out/reliability/<run>/17-session-list.json; `npx tsx scripts/reliability-report.ts`
// renders it. The suite's lean version is test/integration/session-catalog.test.ts.
//
//   npx tsx scripts/session-list-figures.ts [--sessions 10000] [--run newest]
import { parseArgs } from "node:util";
import { connect, createEvent, type JetloopEvent, newId, startGateway } from "../src/index.js";
import { writeScenarioRecord } from "../test/harness/reliability/figures.js";
import { uniqueNamespace } from "../test/harness/namespace.js";
import { serverFlavor, startServer } from "../test/harness/server.js";

const { values } = parseArgs({ options: { sessions: { type: "string", default: "10000" }, run: { type: "string" } }, strict: true });
const N = Number(values.sessions);
if (!Number.isSafeInteger(N) || N < 100) throw new Error("--sessions must be a whole number of at least 100");
const run = values.run ?? serverFlavor();

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;

const started = Date.now();
const server = await startServer();
const bus = await connect({ servers: server.url, namespace: uniqueNamespace("list") });
try {
  await bus.provision();
  // N sessions: a first event each, a third active at distinct times (the order has something to sort).
  const expected: { sid: string; at: number }[] = [];
  const events: JetloopEvent[] = [];
  for (let i = 0; i < N; i++) {
    const sid = newId();
    const at = i % 3 === 0 ? Date.UTC(2026, 11, 2) + i * 1000 : -Infinity;
    expected.push({ sid, at });
    events.push(createEvent("SessionStarted", { sessionId: sid }));
    if (at !== -Infinity) events.push(createEvent("TurnStarted", { sessionId: sid, loopId: newId(), turnId: newId(), createdAt: new Date(at).toISOString() }));
  }
  let t0 = process.hrtime.bigint();
  await bus.publishAll(events);
  const publishMs = ms(t0);
  expected.sort((x, y) => (x.at === y.at ? (x.sid < y.sid ? -1 : 1) : y.at > x.at ? 1 : -1));

  const gw = await startGateway(bus, { listen: "127.0.0.1:0" });
  const list = async (skip: number, limit: number) => {
    const res = await fetch(`${gw.url}/v1/sessions?skip=${skip}&limit=${limit}`);
    if (res.status !== 200) throw new Error(`list answered ${res.status}`);
    return (JSON.parse(await res.text()) as { sessions: { session_id: string }[] }).sessions.map((s) => s.session_id);
  };
  try {
    // The first list: opens the catalog, folds every record of the N sessions into it, loads the index.
    t0 = process.hrtime.bigint();
    await list(0, 20);
    const firstMs = ms(t0);
    // Every session once, in the expected order.
    const paged: string[] = [];
    for (let skip = 0; ; skip += 1000) {
      const page = await list(skip, 1000);
      paged.push(...page);
      if (page.length < 1000) break;
    }
    const inOrder = paged.length === N && paged.every((sid, i) => sid === expected[i]!.sid);
    const seen = new Set(paged);
    // Pages of 20 at spread skips, one at a time.
    const lat: number[] = [];
    for (let i = 0; i < 200; i++) {
      const skip = Math.floor((i * 7919) % N);
      t0 = process.hrtime.bigint();
      const page = await list(skip, 20);
      lat.push(ms(t0));
      if (page.join() !== expected.slice(skip, skip + 20).map((e) => e.sid).join()) throw new Error(`page at ${skip} is not the expected slice`);
    }
    // 5 concurrent lists after 300 new sessions, counting consumers created and deleted.
    const streams = new Set([...bus.journals().map((j) => j.stream), `KV_${bus.namespace.replaceAll(".", "_")}_catalog`]);
    let open = 0;
    let peak = 0;
    let created = 0;
    const sub = bus.nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.>", {
      callback: (_, m) => {
        if (!streams.has(m.subject.split(".")[5] ?? "")) return;
        if (m.subject.includes(".CREATED.")) {
          created++;
          peak = Math.max(peak, ++open);
        }
        if (m.subject.includes(".DELETED.")) open--;
      },
    });
    await bus.nc.flush();
    await bus.publishAll(Array.from({ length: 300 }, () => createEvent("SessionStarted", { sessionId: newId() })));
    t0 = process.hrtime.bigint();
    await Promise.all(Array.from({ length: 5 }, (_, i) => list(i * 20, 20)));
    const concurrentMs = ms(t0);
    await bus.nc.flush();
    sub.unsubscribe();
    const facts = {
      sessions: N,
      "journal records": events.length,
      "publish of the sessions (ms)": Math.round(publishMs),
      "first list: catalog folded from the journal, index loaded (ms)": Math.round(firstMs),
      "list of 20, p50 (ms)": Number(quantile(lat, 0.5).toFixed(1)),
      "list of 20, p99 (ms)": Number(quantile(lat, 0.99).toFixed(1)),
      "list of 20, max (ms)": Number(Math.max(...lat).toFixed(1)),
      "5 concurrent lists after 300 new sessions (ms)": Math.round(concurrentMs),
      "consumers created by the 5 lists": created,
      "consumers open at once, peak (besides the index's watch)": peak,
      "paged in Go's order, every session once": inOrder,
    };
    console.log(facts);
    const file = writeScenarioRecord({
      id: "17-session-list",
      title: "15. The session list over 10,000 sessions (the session catalog)",
      run,
      serverVersion: bus.serverVersion,
      finishedAt: new Date().toISOString(),
      durationMs: Date.now() - started,
      rows: [{ what: "sessions listed (paged by 1000)", published: N, delivered: paged.length, lost: N - seen.size, duplicated: paged.length - seen.size }],
      facts,
    });
    console.log(`wrote ${file}`);
  } finally {
    await gw.close();
  }
} finally {
  await bus.close();
  await server.close();
}
