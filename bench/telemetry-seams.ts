/**
 * What bench/telemetry.ts cannot show: its end-to-end ratios move by a third from run to
 * run on a shared machine, so "no measurable cost" there bounds nothing smaller than that.
 * This measures the seams themselves, in process and without a server: nanoseconds per
 * call of what one append (startPublish, its end, appendSettled) and one delivery
 * (tracedDelivery, sseFrame) add, in three setups each in its own process:
 *   - off: `JETLOOP_TELEMETRY=off`;
 *   - api: the API installed, no SDK registered;
 *   - sdk: a trace SDK (batch processor, an exporter that drops everything) and a metrics SDK.
 * Medians of `--reps` runs of `--calls` calls each.
 *
 *   npx tsx bench/telemetry-seams.ts [--reps N] [--calls N]
 */
import { execFileSync } from "node:child_process";
import { parseArgs } from "node:util";
import { appendSettled, sseFrame, startPublish, tracedDelivery } from "../src/telemetry/index.js";
import { median } from "./lib/stats.js";

const MODES = ["off", "api", "sdk"] as const;
type Mode = (typeof MODES)[number];
interface Figures {
  appendNs: number;
  deliveryNs: number;
}

async function registerSdk(): Promise<void> {
  const { trace, metrics } = await import("@opentelemetry/api");
  const { BasicTracerProvider, BatchSpanProcessor } = await import("@opentelemetry/sdk-trace-base");
  const { MeterProvider } = await import("@opentelemetry/sdk-metrics");
  const dropAll = { export: (_: unknown, done: (r: { code: number }) => void) => done({ code: 0 }), shutdown: () => Promise.resolve() };
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropAll)] }));
  metrics.setGlobalMeterProvider(new MeterProvider());
}

const SUBJECT = "bench.journal.0b2c7c1e-7a52-4e0e-9f57-3f1f0d0f2a11.5d6a.run.TurnStarted";
const EVENT_ID = "5d6a1f0e-2b3c-4d5e-8f90-a1b2c3d4e5f6";
const FRAME = `event: enduring\nid: 42\ndata: ${JSON.stringify({ v: 1, event: { type: "TurnStarted", text: "x".repeat(200) } })}\n\n`;
let sink = 0;

function perCall(calls: number, fn: (i: number) => void): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) fn(i);
  return Number(process.hrtime.bigint() - t0) / calls;
}

function measure(calls: number): Figures {
  const ack = { journalSeq: 1, duplicate: false };
  const appendNs = perCall(calls, (i) => {
    const t = startPublish(SUBJECT, "TurnStarted", "enduring", EVENT_ID);
    sink += t.entries.length;
    appendSettled(undefined, ack, 1, Date.now() - 1);
    t.end({ journalSeq: i, duplicate: false });
  });
  const deliveryNs = perCall(calls, (i) => {
    const d = tracedDelivery({ event: { type: "TurnStarted" }, journalSeq: i, subject: SUBJECT }, "feed", undefined);
    sink += sseFrame(d, FRAME).length;
  });
  return { appendNs, deliveryNs };
}

async function child(mode: Mode, calls: number): Promise<void> {
  if (mode === "sdk") await registerSdk();
  measure(Math.min(calls, 20_000)); // warm-up
  const f = measure(calls);
  if (sink < 0) console.error(sink);
  process.stdout.write(JSON.stringify(f));
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { child: { type: "string" }, reps: { type: "string" }, calls: { type: "string" } } });
  const calls = Number(values.calls ?? 200_000);
  if (values.child !== undefined) return child(values.child as Mode, calls);
  const reps = Number(values.reps ?? 5);
  const runs: Record<Mode, Figures[]> = { off: [], api: [], sdk: [] };
  for (let r = 0; r < reps; r++) {
    for (const mode of MODES) {
      const env = { ...process.env, JETLOOP_TELEMETRY: mode === "off" ? "off" : "" };
      const out = execFileSync(process.execPath, ["--import", "tsx", "bench/telemetry-seams.ts", "--child", mode, "--calls", String(calls)], { env, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
      runs[mode].push(JSON.parse(out) as Figures);
    }
  }
  const lines = ["| setup | per append (ns) | per delivery (ns) |", "|---|---:|---:|"];
  for (const mode of MODES) lines.push(`| ${mode} | ${median(runs[mode].map((f) => f.appendNs)).toFixed(0)} | ${median(runs[mode].map((f) => f.deliveryNs)).toFixed(0)} |`);
  console.log(`${reps} runs of ${calls} calls each, medians\n${lines.join("\n")}`);
}

await main();
