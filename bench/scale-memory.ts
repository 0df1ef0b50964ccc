/**
 * What subjects and message ids cost a nats-server, measured: a fresh server per case
 * (file storage, one stream), N small messages appended, the server's resident memory
 * (VmRSS) read before and after. Cases:
 *   - control:  N messages on one subject, no message id;
 *   - subjects: N messages on N distinct subjects (a session's journal subjects), no id;
 *   - ids:      N messages on one subject, each with its own Nats-Msg-Id (a 10 min window).
 * Per subject = (subjects − control) / N; per id = (ids − control) / N. Go returns memory
 * to the OS lazily, so a figure is what the process holds, read after a settle.
 *
 *   npx tsx bench/scale-memory.ts [N=100000] [repetitions=3]
 */
import { spawn } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, createInbox, headers, type NatsConnection } from "@nats-io/transport-node";
import { findServerBinary, freePort, makeTempDir, serverVersion } from "../test/harness/server.js";
import { median } from "./lib/stats.js";
import { sleep } from "./lib/stats.js";

type Case = "control" | "subjects" | "ids";

function rssKiB(pid: number): number {
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1] ?? 0);
}

/** Appends n messages, up to 1,000 unacknowledged. */
async function append(nc: NatsConnection, n: number, subject: (i: number) => string, withId: boolean): Promise<void> {
  const inbox = createInbox();
  let acked = 0;
  let wake: (() => void) | undefined;
  const sub = nc.subscribe(`${inbox}.>`, {
    callback: () => {
      acked++;
      wake?.();
    },
  });
  const data = new TextEncoder().encode("0123456789abcdef");
  for (let i = 0; i < n; i++) {
    while (i - acked >= 1000) await new Promise<void>((r) => (wake = r));
    const h = withId ? headers() : undefined;
    h?.set("Nats-Msg-Id", `01930000-0000-7000-8000-${String(i).padStart(12, "0")}`);
    nc.publish(subject(i), data, { reply: `${inbox}.${i}`, ...(h ? { headers: h } : {}) });
  }
  while (acked < n) await new Promise<void>((r) => (wake = r));
  sub.unsubscribe();
}

async function measure(kind: Case, n: number): Promise<number> {
  const dir = makeTempDir("jetloop-scale-");
  const port = await freePort();
  const server = spawn(findServerBinary("newest"), ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", dir], { stdio: "ignore" });
  try {
    await sleep(500);
    const nc = await connect({ servers: `127.0.0.1:${port}` });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "S", subjects: ["j.>"], duplicate_window: 600e9 });
    await sleep(1000);
    const before = rssKiB(server.pid!);
    await append(nc, n, kind === "subjects" ? (i) => `j.${i}` : () => "j.one", kind === "ids");
    await sleep(2000);
    const after = rssKiB(server.pid!);
    await nc.close();
    return (after - before) * 1024;
  } finally {
    server.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 100_000);
  const reps = Number(process.argv[3] ?? 3);
  const grown: Record<Case, number[]> = { control: [], subjects: [], ids: [] };
  for (let r = 0; r < reps; r++) {
    for (const kind of ["control", "subjects", "ids"] as const) grown[kind].push(await measure(kind, n));
    process.stderr.write(`rep ${r + 1}: ${Object.entries(grown).map(([k, v]) => `${k} +${(v.at(-1)! / 2 ** 20).toFixed(1)} MiB`).join(", ")}\n`);
  }
  const m = (k: Case) => median(grown[k]);
  const out = {
    natsServer: serverVersion(findServerBinary("newest")),
    messages: n,
    rssGrowthMiB: { control: m("control") / 2 ** 20, subjects: m("subjects") / 2 ** 20, ids: m("ids") / 2 ** 20 },
    bytesPerSubject: Math.round((m("subjects") - m("control")) / n),
    bytesPerMessageId: Math.round((m("ids") - m("control")) / n),
    samples: grown,
  };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}

await main();
