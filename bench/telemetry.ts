/**
 * Telemetry's cost: append and delivery throughput of jetloop beside the raw client, in
 * three setups, each in its own process (the OpenTelemetry globals are per process):
 *   - off: `JETLOOP_TELEMETRY=off` (as without @opentelemetry/api installed);
 *   - api: the API installed, no SDK registered (the default for a library user);
 *   - sdk: the trace SDK (batch processor, an exporter that drops everything), the
 *     AsyncLocalStorage context manager and a metrics SDK, registered globally.
 * Append: `bus.publish` vs `js.publish` with a message id, 1024 in flight. Delivery: a
 * feed subscription vs a raw core subscription on the feed subjects, both reading the same
 * appends. Medians of `--reps` runs (default 5), and jetloop/raw ratios of the medians.
 *
 *   npx tsx bench/telemetry.ts [--reps N] [--events N]
 */
import { execFileSync } from "node:child_process";
import { parseArgs } from "node:util";
import { connect as natsConnect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { connect, createEvent, newId } from "../src/index.js";
import { uniqueNamespace } from "../test/harness/namespace.js";
import { startServer } from "../test/harness/server.js";
import { median, nowMs, windowed } from "./lib/stats.js";
import { enduringBatch, toWire } from "./lib/events.js";

const MODES = ["off", "api", "sdk"] as const;
type Mode = (typeof MODES)[number];
const IN_FLIGHT = 1024;

interface Figures {
  appendJetloop: number;
  appendRaw: number;
  deliverJetloop: number;
  deliverRaw: number;
}

async function registerSdk(): Promise<void> {
  const { trace, context, metrics } = await import("@opentelemetry/api");
  const { BasicTracerProvider, BatchSpanProcessor } = await import("@opentelemetry/sdk-trace-base");
  const { AsyncLocalStorageContextManager } = await import("@opentelemetry/context-async-hooks");
  const { MeterProvider } = await import("@opentelemetry/sdk-metrics");
  const dropAll = { export: (_: unknown, done: (r: { code: number }) => void) => done({ code: 0 }), shutdown: () => Promise.resolve() };
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropAll)] }));
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  metrics.setGlobalMeterProvider(new MeterProvider());
}

/** One run in this process: append then delivery, jetloop and raw. */
async function measure(url: string, n: number): Promise<Figures> {
  const ns = uniqueNamespace("benchotel");
  const bus = await connect({ servers: url, namespace: ns, maxInFlight: IN_FLIGHT });
  await bus.provision();
  const nc = await natsConnect({ servers: url });
  const js = jetstream(nc);
  try {
    // Append.
    const events = enduringBatch(n);
    let t0 = nowMs();
    await windowed(n, IN_FLIGHT, (i) => bus.publish(events[i]!));
    const appendJetloop = (n / (nowMs() - t0)) * 1000;
    const wire = enduringBatch(n).map((e) => toWire(ns, e));
    t0 = nowMs();
    await windowed(n, IN_FLIGHT, (i) => js.publish(wire[i]!.subject, wire[i]!.data, { msgID: wire[i]!.eventId }));
    const appendRaw = (n / (nowMs() - t0)) * 1000;

    // Delivery: one loop's appends read by a feed subscription and by a raw core subscription.
    const sessionId = newId();
    const loopId = newId();
    const sub = await bus.session(sessionId).subscribeEvents({ enduring: { loops: [loopId] } });
    let raw = 0;
    let rawDone = 0;
    const rawSub = nc.subscribe(`${ns}.feed.>`, { callback: () => void (++raw === n && (rawDone = nowMs())) });
    await nc.flush();
    const loopEvents = Array.from({ length: n }, () => createEvent("TurnStarted", { sessionId, loopId, turnId: newId() }));
    t0 = nowMs();
    const publishing = windowed(n, IN_FLIGHT, (i) => bus.publish(loopEvents[i]!));
    let got = 0;
    for await (const _ of sub) if (++got === n) break;
    const deliverJetloop = (n / (nowMs() - t0)) * 1000;
    await publishing;
    while (raw < n) await new Promise((r) => setTimeout(r, 5));
    const deliverRaw = (n / (rawDone - t0)) * 1000;
    rawSub.unsubscribe();
    return { appendJetloop, appendRaw, deliverJetloop, deliverRaw };
  } finally {
    await bus.close();
    await nc.close();
  }
}

async function child(mode: Mode, url: string, n: number): Promise<void> {
  if (mode === "sdk") await registerSdk();
  await measure(url, Math.min(n, 2000)); // warm-up
  process.stdout.write(JSON.stringify(await measure(url, n)));
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { child: { type: "string" }, url: { type: "string" }, reps: { type: "string" }, events: { type: "string" } } });
  const n = Number(values.events ?? 10_000);
  if (values.child !== undefined) return child(values.child as Mode, values.url!, n);
  const reps = Number(values.reps ?? 5);
  const server = await startServer({ flavor: "newest" });
  try {
    const runs: Record<Mode, Figures[]> = { off: [], api: [], sdk: [] };
    // Interleaved, so drift in the machine's load falls on every setup alike.
    for (let r = 0; r < reps; r++) {
      for (const mode of MODES) {
        const env = { ...process.env, JETLOOP_TELEMETRY: mode === "off" ? "off" : "" };
        const out = execFileSync(process.execPath, ["--import", "tsx", "bench/telemetry.ts", "--child", mode, "--url", server.url, "--events", String(n)], { env, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
        runs[mode].push(JSON.parse(out) as Figures);
      }
    }
    const m = (mode: Mode, k: keyof Figures) => median(runs[mode].map((f) => f[k]));
    const lines = ["| setup | append jetloop (ev/s) | append raw (ev/s) | ratio | delivery jetloop (ev/s) | delivery raw (ev/s) | ratio | append vs off | delivery vs off |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"];
    for (const mode of MODES) {
      const aj = m(mode, "appendJetloop");
      const dj = m(mode, "deliverJetloop");
      lines.push(
        `| ${mode} | ${aj.toFixed(0)} | ${m(mode, "appendRaw").toFixed(0)} | ${(aj / m(mode, "appendRaw")).toFixed(2)} | ${dj.toFixed(0)} | ${m(mode, "deliverRaw").toFixed(0)} | ${(dj / m(mode, "deliverRaw")).toFixed(2)} | ${(aj / m("off", "appendJetloop")).toFixed(2)} | ${(dj / m("off", "deliverJetloop")).toFixed(2)} |`,
      );
    }
    console.log(`${reps} runs of ${n} events each, medians\n${lines.join("\n")}`);
  } finally {
    await server.close();
  }
}

await main();
