/**
 * The HTTP gateway under load: SSE clients watching sessions while events are
 * appended at a fixed rate. Gateways run as their own processes (`jetloop gateway`), the
 * clients and the publisher in this one, so append and frame times share a clock.
 * Reported per trial: append-to-frame latency p50/p99 over every frame, gateway memory per
 * client (RSS with the clients connected minus RSS before, over the clients), gateway CPU
 * while events flow, frames missing. Beside it, the raw NATS.js floor: the same sessions
 * watched by core subscriptions on the stream's feed, no HTTP.
 *
 *   npx tsx bench/gateway.ts [--clients=2000] [--sessions=200] [--rate=500] [--seconds=20]
 *
 * Writes .bench-out/gateway.json.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { get, Agent } from "node:http";
import { join } from "node:path";
import { connect as natsConnect } from "@nats-io/transport-node";
import { connect, createEvent, newId, type Jetloop } from "../src/index.js";
import { uniqueNamespace } from "../test/harness/namespace.js";
import { freePort, REPO_ROOT, startServer } from "../test/harness/server.js";
import { percentile, sleep } from "./lib/stats.js";

const arg = (name: string, fallback: number) => {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  return hit ? Number(hit.slice(name.length + 3)) : fallback;
};
const CLIENTS = arg("clients", 2000);
const SESSIONS = arg("sessions", 200);
const RATE = arg("rate", 500);
const SECONDS = arg("seconds", 20);

interface Gateway {
  readonly proc: ChildProcess;
  readonly url: string;
}

function rssKiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1] ?? 0);
}

/** utime + stime of a process, in seconds. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The gateway as one node process (no tsx wrapper), so its pid is the one measured. */
async function startGatewayProcess(natsUrl: string, ns: string): Promise<Gateway> {
  const port = await freePort();
  const proc = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", "gateway", "--listen", `127.0.0.1:${port}`, "-s", natsUrl, "-n", ns], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    proc.stdout?.on("data", (c: Buffer) => (c.toString().includes("listening") ? resolve() : undefined));
    proc.once("exit", (code) => reject(new Error(`gateway exited with ${code}`)));
  });
  return { proc, url: `http://127.0.0.1:${port}` };
}

/** Per client: frames by journal sequence, receipt times. */
function openClients(gateways: readonly Gateway[], sessions: readonly string[], onFrame: (seq: number, at: number) => void): Promise<() => void> {
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const requests: ReturnType<typeof get>[] = [];
  let open = 0;
  return new Promise((resolve, reject) => {
    for (let i = 0; i < CLIENTS; i++) {
      const gw = gateways[i % gateways.length]!;
      const sid = sessions[i % sessions.length]!;
      const req = get(`${gw.url}/v1/sessions/${sid}/events`, { agent }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`client ${i}: ${res.statusCode}`));
        res.setEncoding("utf8");
        let pending = "";
        res.on("data", (chunk: string) => {
          const at = performance.now();
          pending += chunk;
          let end: number;
          while ((end = pending.indexOf("\n\n")) >= 0) {
            const frame = pending.slice(0, end);
            pending = pending.slice(end + 2);
            const m = /^id: (\d+)$/m.exec(frame);
            if (m) onFrame(Number(m[1]), at);
          }
        });
        if (++open === CLIENTS) resolve(() => requests.forEach((r) => r.destroy()));
      });
      req.on("error", reject);
      requests.push(req);
    }
  });
}

/** Appends at RATE per second round-robin over the sessions; returns append start times by sequence. */
async function publishAtRate(bus: Jetloop, sessions: readonly string[]): Promise<Map<number, number>> {
  const started = new Map<number, number>();
  const total = RATE * SECONDS;
  const t0 = performance.now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    const sessionId = sessions[i % sessions.length]!;
    const at = performance.now();
    inflight.push(bus.publish(createEvent("TurnStarted", { sessionId, loopId: sessionId, turnId: newId() })).then((r) => void started.set(r.journalSeq, at)));
  }
  await Promise.all(inflight);
  return started;
}

interface TrialResult {
  readonly name: string;
  readonly gateways: number;
  readonly clients: number;
  readonly frames: number;
  readonly expectedFrames: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly memPerClientKiB: number | undefined;
  readonly cpuPercent: number | undefined;
}

async function gatewayTrial(natsUrl: string, gatewayCount: number): Promise<TrialResult> {
  const ns = uniqueNamespace(`gwbench${gatewayCount}x`);
  const bus = await connect({ servers: natsUrl, namespace: ns, name: "gateway-bench" });
  await bus.provision();
  const sessions = Array.from({ length: SESSIONS }, () => newId());
  for (const s of sessions) await bus.publish(createEvent("SessionStarted", { sessionId: s }));
  const gateways = await Promise.all(Array.from({ length: gatewayCount }, () => startGatewayProcess(natsUrl, ns)));
  await sleep(1000);
  const rssBefore = gateways.map((g) => rssKiB(g.proc.pid!));
  const latencies: number[] = [];
  const receipts: [number, number][] = [];
  const close = await openClients(gateways, sessions, (seq, at) => receipts.push([seq, at]));
  await sleep(2000);
  const rssAfter = gateways.map((g) => rssKiB(g.proc.pid!));
  const cpu0 = gateways.map((g) => cpuSeconds(g.proc.pid!));
  const w0 = performance.now();
  const started = await publishAtRate(bus, sessions);
  await sleep(2000);
  const wallS = (performance.now() - w0) / 1000;
  const cpu = gateways.map((g, i) => (100 * (cpuSeconds(g.proc.pid!) - cpu0[i]!)) / wallS);
  close();
  for (const [seq, at] of receipts) {
    const t = started.get(seq);
    if (t !== undefined) latencies.push(at - t);
  }
  for (const g of gateways) g.proc.kill("SIGTERM");
  await bus.close();
  return {
    name: `${gatewayCount} gateway process${gatewayCount > 1 ? "es" : ""}`,
    gateways: gatewayCount,
    clients: CLIENTS,
    frames: latencies.length,
    expectedFrames: started.size * (CLIENTS / SESSIONS),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    memPerClientKiB: rssAfter.reduce((a, b) => a + b, 0) / CLIENTS - rssBefore.reduce((a, b) => a + b, 0) / CLIENTS,
    cpuPercent: cpu.reduce((a, b) => a + b, 0),
  };
}

/** The floor: core subscriptions on the sessions' feed subjects, one per client, no HTTP. */
async function rawTrial(natsUrl: string): Promise<TrialResult> {
  const ns = uniqueNamespace("gwraw");
  const bus = await connect({ servers: natsUrl, namespace: ns, name: "gateway-bench-raw" });
  await bus.provision();
  const nc = await natsConnect({ servers: natsUrl, name: "raw-feed" });
  const sessions = Array.from({ length: SESSIONS }, () => newId());
  const receipts: [number, number][] = [];
  const subs = Array.from({ length: CLIENTS }, (_, i) =>
    nc.subscribe(`${ns}.feed.${sessions[i % SESSIONS]!}.>`, { callback: (_e, m) => void receipts.push([Number(m.headers?.get("Nats-Sequence")), performance.now()]) }),
  );
  await nc.flush();
  const started = await publishAtRate(bus, sessions);
  await sleep(2000);
  subs.forEach((s) => s.unsubscribe());
  const latencies = receipts.flatMap(([seq, at]) => (started.has(seq) ? [at - started.get(seq)!] : []));
  await nc.close();
  await bus.close();
  return { name: "raw NATS.js feed subscriptions", gateways: 0, clients: CLIENTS, frames: latencies.length, expectedFrames: started.size * (CLIENTS / SESSIONS), p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), memPerClientKiB: undefined, cpuPercent: undefined };
}

const server = await startServer({});
try {
  const results = [await rawTrial(server.url), await gatewayTrial(server.url, 1), await gatewayTrial(server.url, 2)];
  const floor = results[0]!;
  for (const r of results) {
    console.log(
      `${r.name.padEnd(32)} frames ${r.frames}/${r.expectedFrames}  p50 ${r.p50Ms.toFixed(2)} ms (×${(r.p50Ms / floor.p50Ms).toFixed(1)})  p99 ${r.p99Ms.toFixed(2)} ms (×${(r.p99Ms / floor.p99Ms).toFixed(1)})` +
        (r.memPerClientKiB === undefined ? "" : `  mem/client ${r.memPerClientKiB.toFixed(1)} KiB  cpu ${r.cpuPercent!.toFixed(0)}%`),
    );
  }
  mkdirSync(join(REPO_ROOT, ".bench-out"), { recursive: true });
  writeFileSync(join(REPO_ROOT, ".bench-out/gateway.json"), JSON.stringify({ clients: CLIENTS, sessions: SESSIONS, rate: RATE, seconds: SECONDS, server: server.version, results }, null, 2));
} finally {
  await server.stop();
}
