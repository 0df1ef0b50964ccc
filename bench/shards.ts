/**
 * Shards on a three-node cluster: appends/s of a namespace whose journal is one
 * R3 stream (S = 1) and of one split in three (S = 3, the leaders spread over the three
 * servers by `provision`), from PRODUCERS producers (each its own connection), the events
 * spread over SESSIONS sessions. Contenders, all in one run on the same cluster:
 *   - jetloop S = 1 / S = 3: `bus.publish(event)` on PRODUCERS buses;
 *   - raw S = 1 / S = 3: stock `js.publish(subject, bytes, { msgID })` on PRODUCERS raw
 *     connections, pre-encoded, on the same subjects (one stream, or the session's shard).
 * Both namespaces live on the cluster at once; every run starts from purged streams. The
 * cluster is this benchmark's own: three nats-server processes and the Node process share
 * the machine's cores. Beside them, jetloop S = 1 and S = 3 (R1) on the run's one server
 * (`ctx.server`): what the sharded path costs the client, with no cluster in the way.
 *
 * `--server-cpu=C` (default: none, the servers unconstrained) gives each of the three
 * servers its own cgroup of C cores (bench/lib/cpu-budget.ts), and this process (the
 * producers) one of what is left (the machine's cores − 3C): each server a machine of a
 * fixed size, the producers with more than they need, so the servers, not the producers,
 * are the bottleneck, whatever else the machine runs. The one-server (R1) rows are left out then (they say what
 * the client costs, which the quota does not change). Either way every row's note gives
 * the cores each server and the producers used while measuring (medians over the reps).
 */
import { availableParallelism } from "node:os";
import { jetstream, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { connect, type Jetloop, type JetloopEvent } from "../src/index.js";
import { provisionOnCluster, startCluster, type NatsCluster } from "../test/harness/cluster.js";
import { uniqueNamespace } from "../test/harness/namespace.js";
import { type BenchContext, compareRow, type Row } from "./lib/context.js";
import { type CpuBudget, cpuBudget, processCpuSeconds } from "./lib/cpu-budget.js";
import { enduringBatch, toWire, type WireEvent } from "./lib/events.js";
import { median, nowMs, rotatedRounds, windowed } from "./lib/stats.js";

const PRODUCERS = 4;
const SESSIONS = 64;
/** In flight per producer: PRODUCERS × this = jetloop's default maxInFlight (1024). */
const WINDOW = 256;

interface Side {
  readonly ns: string;
  readonly shards: number;
  readonly buses: Jetloop[];
  readonly streams: string[];
  readonly jsm: JetStreamManager;
  /** The server leading each stream when provisioned, by its short name (n1, n2, n3). */
  readonly leaders: string[];
}

/** A node's short name: the cluster's names are `<unique base>-n<i>`. */
const short = (server: string): string => server.slice(server.lastIndexOf("-") + 1);

/** What one measurement used: cores (CPU seconds per second) of each server and of the producers. */
interface CpuUse {
  /** By node (n1, n2, n3), and `producers`: this process. */
  readonly cores: Record<string, number>;
  /** Share of the CFS periods in which a group hit its quota (NaN without `--server-cpu`). */
  readonly throttled: Record<string, number>;
}

/** CPU seconds of the cluster's servers and of this process (the producers), and the quotas' throttling. */
function cpuMeter(cluster: NatsCluster, budget: CpuBudget | undefined) {
  const nodes = cluster.nodes.map((n) => ({ name: short(n.name), pid: n.pid }));
  const names = [...nodes.map((n) => n.name), "producers"];
  const snapshot = () => {
    const p = process.cpuUsage();
    return {
      seconds: { ...Object.fromEntries(nodes.map((n) => [n.name, n.pid === undefined ? Number.NaN : processCpuSeconds(n.pid)])), producers: (p.user + p.system) / 1e6 } as Record<string, number>,
      throttling: Object.fromEntries(names.map((k) => [k, budget?.throttling(k)])),
    };
  };
  return {
    snapshot,
    since(before: ReturnType<typeof snapshot>, ms: number): CpuUse {
      const now = snapshot();
      const ratio = (k: string) => {
        const a = before.throttling[k];
        const b = now.throttling[k];
        return a && b && b.periods > a.periods ? (b.throttled - a.throttled) / (b.periods - a.periods) : Number.NaN;
      };
      return {
        cores: Object.fromEntries(names.map((k) => [k, (now.seconds[k]! - before.seconds[k]!) / (ms / 1000)])),
        throttled: Object.fromEntries(names.map((k) => [k, ratio(k)])),
      };
    },
  };
}

/** The medians of a contender's CPU use, one line: `n1* 0.40 (throttled 97%), n2 0.21, …, producers 0.55`. */
function cpuLine(uses: readonly CpuUse[], leaders: readonly string[]): string {
  if (uses.length === 0) return "no CPU figures";
  const one = (k: string) => {
    const cores = median(uses.map((u) => u.cores[k]!));
    const thr = median(uses.map((u) => u.throttled[k]!));
    return `${k}${leaders.includes(k) ? "*" : ""} ${cores.toFixed(2)}${Number.isNaN(thr) ? "" : ` (throttled ${(thr * 100).toFixed(0)}%)`}`;
  };
  return Object.keys(uses[0]!.cores).map(one).join(", ");
}

export async function runShards(ctx: BenchContext): Promise<Row[]> {
  const n = ctx.options.quick ? 4_000 : 20_000;
  const serverCpu = ctx.options.serverCpu;
  const cluster = await startCluster({ flavor: process.env.JETLOOP_NATS_SERVER === "oldest" ? "oldest" : "newest" });
  let budget: CpuBudget | undefined;
  const raws: NatsConnection[] = [];
  const sides: Side[] = [];
  try {
    if (serverCpu !== undefined) {
      budget = cpuBudget();
      for (const node of cluster.nodes) {
        if (node.pid === undefined) throw new Error("--server-cpu needs the servers as processes (JETLOOP_NATS_BACKEND=processes), not containers");
        budget.place(short(node.name), node.pid, serverCpu);
      }
      const rest = availableParallelism() - cluster.nodes.length * serverCpu;
      budget.place("producers", process.pid, rest);
      ctx.log(`shards: each server in its own CPU group of ${serverCpu} cores, the producers in one of ${rest.toFixed(2)}`);
    }
    await cluster.waitReady();
    // The two namespaces on the cluster, and (unconstrained) the same two on the run's one
    // server (R1): whether the sharded path costs the client anything, with no cluster in the way.
    const layouts: [string[], number][] = [[cluster.urls, 1], [cluster.urls, 3]];
    if (!budget) layouts.push([[ctx.server.url], 1], [[ctx.server.url], 3]);
    for (const [servers, shards] of layouts) {
      const ns = uniqueNamespace(`benchshards${shards}`);
      const buses = await Promise.all(Array.from({ length: PRODUCERS }, (_, i) => connect({ servers: [...servers], namespace: ns, shards, name: `jetloop-shards-${shards}-${i}` })));
      let leaders: string[] = [];
      await provisionOnCluster(async () => {
        const r = await buses[0]!.provision({ replicas: servers.length === 1 ? 1 : 3 });
        leaders = (r.shards ?? [r]).map((s) => ("leader" in s ? (s.leader ?? "") : ""));
      });
      const streams = shards === 1 ? [buses[0]!.stream] : Array.from({ length: shards }, (_, k) => `${buses[0]!.stream}_${k}_of_${shards}`);
      ctx.log(`shards: S = ${shards} provisioned ${servers.length === 1 ? "R1 on one server" : `R3, leaders ${leaders.join(", ")}`}`);
      sides.push({ ns, shards, buses, streams, jsm: await buses[0]!.jetstreamManager(), leaders: leaders.map(short) });
    }
    for (let i = 0; i < PRODUCERS; i++) raws.push(await natsConnect({ servers: cluster.urls, name: `raw-shards-${i}` }));
    const js: JetStreamClient[] = raws.map((nc) => jetstream(nc));

    const meter = cpuMeter(cluster, budget);
    const cpu: Record<string, CpuUse[]> = {};
    // Appends/s of one timed body, and what it used while it ran.
    const timed = async (name: string, body: () => Promise<unknown>): Promise<number> => {
      const before = meter.snapshot();
      const t0 = nowMs();
      await body();
      const ms = nowMs() - t0;
      (cpu[name] ??= []).push(meter.since(before, ms));
      return (n / ms) * 1000;
    };
    // The events of one run, split over the producers (each producer its share of every session).
    const split = <T>(xs: T[]): T[][] => Array.from({ length: PRODUCERS }, (_, p) => xs.filter((_, i) => i % PRODUCERS === p));
    const jetloopRun = (name: string, side: Side) => async () => {
      const parts = split(enduringBatch(n, SESSIONS));
      return timed(name, () => Promise.all(parts.map((evs: JetloopEvent[], p) => windowed(evs.length, WINDOW, (i) => side.buses[p]!.publish(evs[i]!)))));
    };
    const rawRun = (name: string, side: Side) => async () => {
      const parts = split(enduringBatch(n, SESSIONS).map((e) => toWire(side.ns, e, side.shards)));
      return timed(name, () =>
        Promise.all(parts.map((wire: WireEvent[], p) => windowed(wire.length, WINDOW, (i) => js[p]!.publish(wire[i]!.subject, wire[i]!.data, { msgID: wire[i]!.eventId })))),
      );
    };
    const [one, three, single1, single3] = sides as [Side, Side, Side | undefined, Side | undefined];
    const contenders: Record<string, () => Promise<number>> = { jetloop1: jetloopRun("jetloop1", one), jetloop3: jetloopRun("jetloop3", three), raw1: rawRun("raw1", one), raw3: rawRun("raw3", three) };
    if (single1 && single3) Object.assign(contenders, { single1: jetloopRun("single1", single1), single3: jetloopRun("single3", single3) });
    const purge = () => Promise.all(sides.flatMap((side) => side.streams.map((s) => side.jsm.streams.purge(s))));
    for (const run of Object.values(contenders)) {
      await purge();
      await run();
    }
    for (const k of Object.keys(cpu)) delete cpu[k]; // the warm-up's figures are not the measurement's
    const samples = await rotatedRounds("shards", ctx.options.reps, (m) => ctx.log(m), contenders, purge);

    // A leader that moved while measuring (a quota too tight for Raft's timers, say) changes what the rows mean.
    const moved: string[] = [];
    for (const side of [one, three]) {
      for (const [k, stream] of side.streams.entries()) {
        const now = short((await side.jsm.streams.info(stream)).cluster?.leader ?? "");
        if (now !== side.leaders[k]) moved.push(`${stream}: ${side.leaders[k]} → ${now || "none"}`);
      }
    }
    const cpuNote = (a: string, b: string, sideA: Side, sideB: Side) =>
      `cores used (* leads): ${a}: ${cpuLine(cpu[a] ?? [], sideA.leaders)} | ${b}: ${cpuLine(cpu[b] ?? [], sideB.leaders)}${moved.length ? ` | leaders moved: ${moved.join(", ")}` : ""}`;
    for (const [name, side] of [["jetloop1", one], ["jetloop3", three], ["raw1", one], ["raw3", three]] as const) {
      ctx.log(`shards cpu ${name} (* leads): ${cpuLine(cpu[name] ?? [], side.leaders)}`);
    }
    if (moved.length) ctx.log(`shards: leaders moved while measuring: ${moved.join(", ")}`);

    const where = `3-node cluster, ${PRODUCERS} producers${serverCpu === undefined ? "" : `, ${serverCpu} cores per server`}`;
    const label = (metric: string, raw: string, target?: string) => ({ bench: `shards (${where})`, metric, unit: "appends/s", raw, ...(target ? { target } : {}) });
    const rows = [
      { ...compareRow(label("S = 1: one R3 stream", "js.publish, 1 stream"), samples.jetloop1!, samples.raw1!), note: cpuNote("jetloop1", "raw1", one, one) },
      { ...compareRow(label("S = 3: three R3 streams, leaders spread", "js.publish, 3 streams"), samples.jetloop3!, samples.raw3!), note: cpuNote("jetloop3", "raw3", three, three) },
      compareRow(label("jetloop S = 3 / S = 1", "jetloop S = 1, same cluster", ">= 1.5"), samples.jetloop3!, samples.jetloop1!),
      compareRow(label("raw S = 3 / S = 1", "js.publish, 1 stream"), samples.raw3!, samples.raw1!),
    ];
    if (samples.single1 && samples.single3) {
      rows.push(compareRow({ ...label("one server (R1), jetloop S = 3 / S = 1", "jetloop S = 1, same server"), bench: `shards (one server, ${PRODUCERS} producers)` }, samples.single3, samples.single1));
    }
    return rows;
  } finally {
    for (const side of sides) for (const b of side.buses) await b.close().catch(() => undefined);
    for (const nc of raws) await nc.close().catch(() => undefined);
    try {
      await cluster.close();
    } finally {
      budget?.close();
    }
  }
}
