// Scenario 8: server durability settings. A single server is killed with SIGKILL while
// appends are in flight, right after the Mth ack, then restarted on the same store; what
// was acknowledged must still be there. Run with the default fsync policy (JetStream's
// sync_interval, 2 minutes) and with `sync_interval: always` (fsync before every ack),
// and once with a memory-storage stream to show what the storage setting decides.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type JetloopEvent } from "../../../../src/index.js";
import { SINGLE_CONF, makeTempDir, removeTempDir, serverVersion, startServer, type NatsServer } from "../../server.js";
import { row, type FigureRow, type ScenarioRecord } from "../figures.js";
import { auditStream, enduring, newCoords, produce } from "../workload.js";
import { messageCount } from "../../stream-state.js";
import { adminConnection, record, scenarioNamespace, type ScenarioContext } from "./common.js";

export interface DurabilityOptions {
  readonly events: number;
  /** SIGKILL the server once this many appends are acknowledged. */
  readonly killAfter: number;
  readonly concurrency: number;
}

export interface DurabilityRun {
  readonly setting: string;
  readonly syncAlways: boolean;
  readonly syncIntervalNs: number;
  readonly acked: number;
  readonly survivedAcked: number;
  readonly lostAcked: number;
  /** Appends that failed (the kill) but were stored before it. */
  readonly unackedStored: number;
  readonly duplicates: number;
  readonly appendsPerSec: number;
}

export interface DurabilityResult {
  readonly record: ScenarioRecord;
  readonly runs: DurabilityRun[];
  readonly memory: { published: number; survived: number; streamSurvived: boolean };
}

export const DURABILITY = { id: "8-durability", title: "Server crash (SIGKILL) right after acks: sync and storage settings" } as const;

/** deploy/nats/single.conf with extra lines inside its jetstream block, as a file. */
export function singleConfWithJetstream(lines: string): string {
  const base = readFileSync(SINGLE_CONF, "utf8");
  if (!/jetstream\s*\{/.test(base)) throw new Error(`${SINGLE_CONF} has no jetstream block`);
  const dir = makeTempDir("jetloop-conf-");
  const file = join(dir, "single-sync.conf");
  writeFileSync(file, base.replace(/jetstream\s*\{/, (m) => `${m}\n  ${lines}`));
  return file;
}

async function jsVarz(server: NatsServer): Promise<{ syncAlways: boolean; syncIntervalNs: number }> {
  const v = (await (await fetch(`${server.monitorUrl}/varz`)).json()) as { jetstream?: { config?: { sync_always?: boolean; sync_interval?: number } } };
  return { syncAlways: v.jetstream?.config?.sync_always === true, syncIntervalNs: v.jetstream?.config?.sync_interval ?? 0 };
}

async function crashRun(ctx: ScenarioContext, setting: string, configFile: string | undefined, o: DurabilityOptions): Promise<DurabilityRun> {
  const server = await startServer(configFile ? { configFile } : {});
  const ns = scenarioNamespace();
  const bus = await connect({ servers: server.url, namespace: ns, publishDeadlineMs: 5_000, natsOptions: { reconnect: false } });
  try {
    const varz = await jsVarz(server);
    await bus.provision();
    const coords = newCoords();
    const events: JetloopEvent[] = Array.from({ length: o.events }, () => enduring(coords));
    let killing: Promise<void> | undefined;
    let acked = 0;
    const t = Date.now();
    let elapsed = 0;
    const producer = produce({
      bus,
      events,
      concurrency: o.concurrency,
      onSettled: (_, out) => {
        if (out.status !== "acked") return;
        acked++;
        if (acked === o.killAfter && !killing) {
          elapsed = Date.now() - t;
          killing = server.kill("SIGKILL").then(() => bus.close());
        }
      },
    });
    const outcomes = await producer.done;
    await killing;
    ctx.log?.(`  ${setting}: killed after ${acked} acks`);
    await server.restart();
    const admin = await adminConnection(server.url);
    const audit = await auditStream(admin, bus.stream);
    await admin.close();
    const stored = new Set(audit.ids);
    const ackedIds = outcomes.filter((x) => x.status === "acked").map((x) => x.eventId);
    const failedIds = outcomes.filter((x) => x.status === "failed").map((x) => x.eventId);
    return {
      setting,
      ...varz,
      acked: ackedIds.length,
      survivedAcked: ackedIds.filter((id) => stored.has(id)).length,
      lostAcked: ackedIds.filter((id) => !stored.has(id)).length,
      unackedStored: failedIds.filter((id) => stored.has(id)).length,
      duplicates: audit.ids.length - stored.size,
      appendsPerSec: Math.round((o.killAfter * 1000) / Math.max(1, elapsed)),
    };
  } finally {
    await bus.close();
    await server.close();
  }
}

/** A memory-storage stream: acknowledged, then gone after a crash and restart. */
async function memoryRun(events: number): Promise<{ published: number; survived: number; streamSurvived: boolean }> {
  const server = await startServer();
  const nc = await adminConnection(server.url, { reconnect: false });
  try {
    const ns = scenarioNamespace("m");
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    await jsm.streams.add({ name: `${ns}_mem`, subjects: [`${ns}.>`], storage: "memory" });
    const js = jetstream(nc);
    for (let i = 0; i < events; i++) await js.publish(`${ns}.e`, `e${i}`, { msgID: `e${i}` });
    await server.kill("SIGKILL");
    await nc.close().catch(() => undefined);
    await server.restart();
    const nc2 = await adminConnection(server.url);
    try {
      const jsm2 = await jetstreamManager(nc2, { checkAPI: false });
      try {
        return { published: events, survived: await messageCount(jsm2, `${ns}_mem`), streamSurvived: true };
      } catch {
        return { published: events, survived: 0, streamSurvived: false };
      }
    } finally {
      await nc2.close();
    }
  } finally {
    await nc.close().catch(() => undefined);
    await server.close();
  }
}

export async function durabilityScenario(ctx: ScenarioContext, o: DurabilityOptions): Promise<DurabilityResult> {
  const t0 = Date.now();
  const syncAlways = singleConfWithJetstream("sync_interval: always");
  // Removed here: vitest workers never run the exit hook that would remove it.
  const runs = await (async () => {
    try {
      return [await crashRun(ctx, "default (sync_interval 2m)", undefined, o), await crashRun(ctx, "sync_interval: always", syncAlways, o)];
    } finally {
      removeTempDir(dirname(syncAlways));
    }
  })();
  const memory = await memoryRun(Math.min(200, o.events));
  const version = serverVersion();
  const rows: FigureRow[] = runs.map((r) =>
    row(`file storage, ${r.setting}: found after the restart`, { published: o.events, delivered: r.survivedAcked + r.unackedStored, lost: r.lostAcked, duplicated: r.duplicates }, {
      "acked before the kill": r.acked,
      "acked and survived": r.survivedAcked,
      "unacked but stored": r.unackedStored,
      "appends/s until the kill": r.appendsPerSec,
    }),
  );
  rows.push(
    row("memory storage (all acked, then SIGKILL): found after the restart", { published: memory.published, delivered: memory.survived, lost: memory.published - memory.survived, duplicated: 0 }, {
      "stream config survived": memory.streamSurvived ? "yes" : "no",
    }, true),
  );
  const r = record(ctx, DURABILITY.id, DURABILITY.title, version, t0, rows, {
    "kill after acks": o.killAfter,
    "appends in flight (max)": o.concurrency,
    "default: sync_always / sync_interval (s)": `${runs[0]!.syncAlways} / ${runs[0]!.syncIntervalNs / 1e9}`,
    "always: sync_always / sync_interval (s)": `${runs[1]!.syncAlways} / ${runs[1]!.syncIntervalNs / 1e9}`,
    "OS crash or power loss simulated": false,
  });
  return { record: r, runs, memory };
}
