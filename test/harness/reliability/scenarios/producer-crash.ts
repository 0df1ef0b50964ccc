// Scenario 11: a producer SIGKILLed mid-publish, restarted after the stream's duplicate
// window (shortened to a few seconds), resumes — unfenced through publishAll with
// resume.since, fenced by walking its chain of expectedLastSeq again. The journal is then
// read raw: each event stored exactly once, none lost.
import type { ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import { connect, type Jetloop, type JetloopEvent } from "../../../../src/index.js";
import { makeTempDir, removeTempDir } from "../../server.js";
import { sleep, waitFor } from "../../async.js";
import { killAll, readRecordLines, startChild } from "../child-process.js";
import { row, type FigureRow, type ScenarioRecord } from "../figures.js";
import { enduring, eventIdOf, newCoords } from "../workload.js";
import { adminConnection, record, scenarioNamespace, type ScenarioContext } from "./common.js";
import { messageIdCounts } from "../../stream-state.js";

export const PRODUCER_CRASH = { id: "11-producer-crash", title: "Producer killed (SIGKILL) mid-publish, restarted after the duplicate window" } as const;

export interface ProducerCrashOptions {
  readonly servers: string[];
  readonly serverVersion: string;
  /** Events per producer. */
  readonly events: number;
  /** Kill once the journal holds this many of them. */
  readonly killAfterStored: number;
  /** The stream's duplicate window (a Go duration, e.g. "3s"); the restart waits past it. */
  readonly duplicateWindow: string;
  readonly windowMs: number;
  /** Which producers: fenced ones need nats-server 2.11+. */
  readonly modes: readonly ("unfenced" | "fenced")[];
}

export interface ProducerRun {
  readonly mode: "unfenced" | "fenced";
  readonly published: number;
  readonly storedAtKill: number;
  /** Results of the resumed run that said duplicate: found stored. */
  readonly foundStored: number;
  readonly stored: number;
  readonly duplicated: number;
  readonly lost: number;
  readonly restartAfterKillMs: number;
}

export interface ProducerCrashResult {
  readonly record: ScenarioRecord;
  readonly runs: readonly ProducerRun[];
}

/** Event id → how often the namespace's journal holds it (read raw, headers only). */
async function journalCounts(servers: string[], stream: string): Promise<Map<string, number>> {
  const nc = await adminConnection(servers);
  try {
    return await messageIdCounts(jetstream(nc), stream);
  } finally {
    await nc.close();
  }
}

async function runProducer(o: ProducerCrashOptions, mode: "unfenced" | "fenced", dir: string, children: ChildProcess[]): Promise<ProducerRun> {
  const ns = scenarioNamespace("p");
  const bus = await connect({ servers: o.servers, namespace: ns, publishDeadlineMs: 2000 });
  try {
    await bus.provision({ duplicateWindow: o.duplicateWindow });
    const jsm = await bus.jetstreamManager();
    // Unfenced: several sessions in one publishAll; fenced: one session, one writer.
    const sessions = mode === "fenced" ? [newCoords()] : [newCoords(), newCoords(), newCoords()];
    const events: JetloopEvent[] = Array.from({ length: o.events }, (_, i) => enduring(sessions[i % sessions.length]!));
    const file = join(dir, `${mode}-events.json`);
    writeFileSync(file, JSON.stringify(events));
    const env = { JETLOOP_SERVERS: o.servers.join(","), JETLOOP_NS: ns, JETLOOP_EVENTS: file, JETLOOP_MODE: mode };
    // Before the first attempt: where the resumed run starts reading.
    const since = new Date(Date.now() - 1000);

    const first = startChild("producer-child.ts", { ...env, JETLOOP_OUT: join(dir, `${mode}-first.log`) });
    children.push(first.child);
    await first.ready;
    const count = async () => (await jsm.streams.info(bus.stream)).state.messages;
    await waitFor("the producer to store some", async () => (await count()) >= o.killAfterStored, 30_000, 2);
    first.child.kill("SIGKILL");
    await first.exited;
    const killedAt = Date.now();
    const storedAtKill = await count();

    await sleep(o.windowMs + 1000);
    const restartAfterKillMs = Date.now() - killedAt;
    const out = join(dir, `${mode}-second.log`);
    const second = startChild("producer-child.ts", { ...env, JETLOOP_OUT: out, JETLOOP_SINCE: since.toISOString() });
    children.push(second.child);
    await second.ready;
    await second.exited;
    const results = readRecordLines(out);
    if (results.length !== o.events) throw new Error(`the resumed ${mode} producer settled ${results.length} of ${o.events}`);
    const counts = await journalCounts(o.servers, bus.stream);
    const ids = events.map(eventIdOf);
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    return {
      mode,
      published: ids.length,
      storedAtKill,
      foundStored: results.filter((r) => r[2] === "true").length,
      stored: counts.size,
      duplicated: total - counts.size,
      lost: ids.filter((id) => !counts.has(id)).length,
      restartAfterKillMs,
    };
  } finally {
    await deleteStreams(bus).catch(() => undefined);
    await bus.close();
  }
}

async function deleteStreams(bus: Jetloop): Promise<void> {
  const m = await bus.jetstreamManager();
  await m.streams.delete(bus.stream).catch(() => undefined);
  await m.streams.delete(bus.parked.stream).catch(() => undefined);
}

export async function producerCrashScenario(ctx: ScenarioContext, o: ProducerCrashOptions): Promise<ProducerCrashResult> {
  const t0 = Date.now();
  const dir = makeTempDir("jetloop-producer-");
  const children: ChildProcess[] = [];
  try {
    // The modes side by side: each has a namespace, a stream and files of its own, and most
    // of a run is the wait past the duplicate window. Both settle before the cleanup below.
    const settled = await Promise.allSettled(o.modes.map((mode) => runProducer(o, mode, dir, children)));
    const failed = settled.find((x) => x.status === "rejected");
    if (failed) throw failed.reason;
    const runs = settled.map((x) => (x as PromiseFulfilledResult<ProducerRun>).value);
    for (const r of runs) ctx.log?.(`  ${r.mode}: ${JSON.stringify(r)}`);
    const rows: FigureRow[] = runs.map((r) =>
      row(`journal (stream audit), ${r.mode} producer`, { published: r.published, delivered: r.stored + r.duplicated, lost: r.lost, duplicated: r.duplicated }, {
        "stored when killed": r.storedAtKill,
        "found stored on resume": r.foundStored,
      }),
    );
    const facts: Record<string, number | string | boolean> = {
      "duplicate window": o.duplicateWindow,
      "events per producer": o.events,
      "kill once the journal held": o.killAfterStored,
    };
    for (const r of runs) facts[`${r.mode}: restarted after the kill (ms)`] = r.restartAfterKillMs;
    return { record: record(ctx, PRODUCER_CRASH.id, PRODUCER_CRASH.title, o.serverVersion, t0, rows, facts), runs };
  } finally {
    killAll(children);
    removeTempDir(dir);
  }
}
