/**
 * `npm run bench`: every benchmark, jetloop and the raw NATS.js client side by side
 * against one local nats-server, repeated; prints a table of medians and ratios and
 * writes the results to .bench-out/ (see BENCHMARKS.md).
 *
 *   npm run bench                      all benchmarks, 5 repetitions
 *   npm run bench -- --only=append,replay
 *   npm run bench -- --reps=7 --big=1000000
 *   npm run bench -- --quick           short runs, to check the harness
 *   npm run bench -- --only=shards --server-cpu=0.4
 *                                      each cluster server capped at 0.4 cores (cgroup v1,
 *                                      root); default: unconstrained
 *
 * Environment: BENCH_REPS, BENCH_BIG (events in the large selective-replay stream),
 * JETLOOP_NATS_SERVER (newest | oldest, default newest), NATS_SERVER_BIN.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, freemem, loadavg, totalmem, platform, release } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { REPO_ROOT, startServer } from "../test/harness/server.js";
import { runAppend } from "./append.js";
import { runAttach } from "./attach.js";
import { runBatch } from "./batch.js";
import { runShards } from "./shards.js";
import { runCodec } from "./codec.js";
import { runE2e } from "./e2e.js";
import { runEphemeral } from "./ephemeral.js";
import { runFanout, runScale } from "./fanout.js";
import { runGroup } from "./group.js";
import { type BenchContext, type BenchOptions, makeSetup, type Row } from "./lib/context.js";
import { checkCpuBudget } from "./lib/cpu-budget.js";
import { checkTemplates } from "./lib/events.js";
import { formatTable } from "./lib/report.js";
import { runLatency } from "./latency.js";
import { runReplay } from "./replay.js";
import { runRouter } from "./router.js";
import { runSelective } from "./selective.js";
import { writeBenchmarksMd } from "./write-md.js";

// Memory per subscription needs a full GC on demand.
setFlagsFromString("--expose-gc");
(globalThis as { gc?: unknown }).gc ??= runInNewContext("gc");

const BENCHES: Record<string, (ctx: BenchContext) => Promise<Row[]>> = {
  codec: runCodec,
  append: runAppend,
  latency: runLatency,
  ephemeral: runEphemeral,
  e2e: runE2e,
  replay: runReplay,
  selective: runSelective,
  fanout: runFanout,
  "fanout-scale": runScale,
  group: runGroup,
  batch: runBatch,
  shards: runShards,
  router: runRouter,
  attach: runAttach,
};

function arg(name: string): string | undefined {
  const prefix = `--${name}=`;
  const hit = process.argv.find((a) => a === `--${name}` || a.startsWith(prefix));
  if (hit === undefined) return undefined;
  return hit === `--${name}` ? "true" : hit.slice(prefix.length);
}

function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, not ${value}`);
  return n;
}

/** `--server-cpu=C`, refused here and now where it cannot be honoured (bad number, no writable cgroups). */
function serverCpu(value: string | undefined): { serverCpu?: number } {
  if (value === undefined) return {};
  const cores = value.trim() === "" || value === "true" ? Number.NaN : Number(value);
  if (Number.isNaN(cores)) throw new Error(`--server-cpu must be a number of cores, e.g. --server-cpu=0.4, not ${JSON.stringify(value)}`);
  checkCpuBudget(cores);
  return { serverCpu: cores };
}

function machine(serverVersion: string): Record<string, string | number> {
  const cpu = cpus();
  let commit = "unknown";
  try {
    commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: REPO_ROOT, encoding: "utf8" }).trim();
  } catch {
    // not a git checkout
  }
  return {
    cpu: cpu[0]?.model ?? "unknown",
    cores: cpu.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    freeMemoryGiB: Math.round(freemem() / 2 ** 30),
    os: `${platform()} ${release()}`,
    node: process.version,
    natsServer: serverVersion,
    commit,
  };
}

async function main(): Promise<void> {
  const quick = arg("quick") !== undefined;
  const options: BenchOptions = {
    reps: positiveInt("reps", arg("reps") ?? process.env.BENCH_REPS, quick ? 2 : 5),
    bigStream: positiveInt("big", arg("big") ?? process.env.BENCH_BIG, quick ? 50_000 : 1_000_000),
    quick,
    ...serverCpu(arg("server-cpu")),
  };
  const only = arg("only")?.split(",").map((s) => s.trim()).filter(Boolean) ?? Object.keys(BENCHES);
  for (const name of only) if (!(name in BENCHES)) throw new Error(`unknown benchmark ${name}; known: ${Object.keys(BENCHES).join(", ")}`);
  // A run of the shards benchmark under quotas, not of everything with one changed.
  if (options.serverCpu !== undefined && (arg("only") === undefined || !only.includes("shards"))) throw new Error("--server-cpu applies to the shards benchmark only: add --only=shards");

  checkTemplates();
  const server = await startServer({ flavor: process.env.JETLOOP_NATS_SERVER === "oldest" ? "oldest" : "newest" });
  const started = Date.now();
  const log = (m: string) => process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${m}\n`);
  const ctx: BenchContext = { server, options, log, setup: (name, o) => makeSetup(server, name, o) };
  const env = machine(server.version);
  log(`nats-server ${server.version} at ${server.url}; ${env.cores} × ${env.cpu}; node ${process.version}; ${options.reps} repetitions`);
  const rows: Row[] = [];
  const durations: Record<string, number> = {};
  // Other work on the machine shows here: the figures of a run under load are noisier.
  const load: Record<string, number[]> = { start: loadavg() };
  try {
    for (const name of only) {
      const t0 = Date.now();
      log(`— ${name}`);
      rows.push(...(await BENCHES[name]!(ctx)));
      durations[name] = (Date.now() - t0) / 1000;
      load[name] = loadavg();
      log(`— ${name} done in ${durations[name].toFixed(1)} s`);
    }
  } finally {
    await server.close();
  }
  process.stdout.write(`\n${formatTable(rows)}\n`);
  const total = (Date.now() - started) / 1000;
  process.stdout.write(`\n${rows.filter((r) => r.met === false).length} target(s) missed; total ${total.toFixed(0)} s\n`);
  const out = join(REPO_ROOT, ".bench-out");
  mkdirSync(out, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const json = JSON.stringify({ date: new Date().toISOString(), machine: env, options, durations, loadAverage: load, totalSeconds: total, rows }, null, 2);
  process.stdout.write(`load average (1 min) at start ${load.start![0]!.toFixed(2)}, at end ${loadavg()[0]!.toFixed(2)}\n`);
  writeFileSync(join(out, `bench-${stamp}.json`), json);
  writeFileSync(join(out, "latest.json"), json);
  process.stdout.write(`results: .bench-out/bench-${stamp}.json (and .bench-out/latest.json)\n`);
  // The current table on top of BENCHMARKS.md is a full run's: a quick run checks the
  // harness, and a run of some benchmarks would drop the others' rows (npm run bench:md
  // writes any results file there on purpose).
  if (!quick && arg("only") === undefined) {
    writeBenchmarksMd(join(out, `bench-${stamp}.json`));
    process.stdout.write("BENCHMARKS.md: current figures rewritten\n");
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
