/**
 * The append cost of the strict durability profile against the default, on this machine:
 * two three-node clusters side by side, deploy/nats/cluster.conf (fsync every 2 minutes)
 * and deploy/nats/cluster-strict.conf (`sync_interval: always`), each with a journal
 * provisioned at replicas 3 (strict on the strict one). Measured, alternating the two
 * clusters each repetition: throughput with many appends in flight, and the latency of one
 * append at a time (p50, p99).
 *
 *   npx tsx bench/durability.ts [--reps=3] [--n=5000]
 */
import { join } from "node:path";
import { connect, createEvent, type Jetloop, newId } from "../src/index.js";
import { startCluster, provisionOnCluster, type NatsCluster } from "../test/harness/cluster.js";
import { REPO_ROOT } from "../test/harness/server.js";
import { uniqueNamespace } from "../test/harness/namespace.js";
import { windowed, nowMs } from "./lib/stats.js";

const arg = (name: string, d: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? d);
const REPS = arg("reps", 3);
const N = arg("n", 5000);
const IN_FLIGHT = 256;
const SEQUENTIAL = 300;

const event = (sessionId: string) => createEvent("SessionStarted", { sessionId });

async function throughput(bus: Jetloop): Promise<number> {
  const sessionId = newId();
  const events = Array.from({ length: N }, () => event(sessionId));
  const t0 = nowMs();
  await windowed(N, IN_FLIGHT, (i) => bus.publish(events[i]!));
  return (N / (nowMs() - t0)) * 1000;
}

async function latency(bus: Jetloop): Promise<{ p50: number; p99: number }> {
  const sessionId = newId();
  const ms: number[] = [];
  for (let i = 0; i < SEQUENTIAL; i++) {
    const t0 = nowMs();
    await bus.publish(event(sessionId));
    ms.push(nowMs() - t0);
  }
  ms.sort((a, b) => a - b);
  return { p50: ms[Math.floor(ms.length * 0.5)]!, p99: ms[Math.floor(ms.length * 0.99)]! };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const clusters: NatsCluster[] = [];
const buses: Jetloop[] = [];
try {
  const profiles = [
    { name: "default", configFile: join(REPO_ROOT, "deploy/nats/cluster.conf"), durability: "default" as const },
    { name: "strict", configFile: join(REPO_ROOT, "deploy/nats/cluster-strict.conf"), durability: "strict" as const },
  ];
  const setups = [];
  for (const p of profiles) {
    const cluster = await startCluster({ configFile: p.configFile });
    clusters.push(cluster);
    await cluster.waitReady();
    const bus = await connect({ servers: cluster.urls, namespace: uniqueNamespace("bd"), maxInFlight: IN_FLIGHT });
    buses.push(bus);
    const monitor = cluster.nodes.map((n) => n.monitorUrl);
    await provisionOnCluster(() => bus.provision({ durability: p.durability, monitor }));
    const report = await bus.provision({ mode: "verify", durability: p.durability, monitor });
    setups.push({ ...p, bus, warnings: report.durability.warnings.length, version: cluster.version });
  }
  const results = new Map<string, { tput: number[]; p50: number[]; p99: number[] }>(profiles.map((p) => [p.name, { tput: [], p50: [], p99: [] }]));
  for (const s of setups) await throughput(s.bus); // warm-up
  for (let r = 0; r < REPS; r++) {
    for (const s of r % 2 === 0 ? setups : [...setups].reverse()) {
      const res = results.get(s.name)!;
      res.tput.push(await throughput(s.bus));
      const l = await latency(s.bus);
      res.p50.push(l.p50);
      res.p99.push(l.p99);
    }
  }
  console.log(`nats-server ${setups[0]!.version}, 3 nodes each on one machine, R3 journal, ${N} appends × ${REPS} reps, ${IN_FLIGHT} in flight; ${SEQUENTIAL} sequential appends for latency`);
  console.log("| profile | sync warnings (verify) | appends/s (median) | one append p50 (ms) | p99 (ms) |");
  console.log("|---|---:|---:|---:|---:|");
  for (const s of setups) {
    const res = results.get(s.name)!;
    console.log(`| ${s.name} | ${s.warnings} | ${Math.round(median(res.tput))} | ${median(res.p50).toFixed(2)} | ${median(res.p99).toFixed(2)} |`);
  }
  const d = results.get("default")!;
  const st = results.get("strict")!;
  console.log(`strict/default throughput: ${(median(st.tput) / median(d.tput)).toFixed(2)}; all throughput samples: default ${d.tput.map(Math.round).join(", ")}; strict ${st.tput.map(Math.round).join(", ")}`);
} finally {
  for (const b of buses) await b.close();
  for (const c of clusters) await c.close();
}
