// Scenario 4: a durable consumer process killed with SIGKILL mid-batch, then started
// again: it resumes from its ack floor and nothing is lost.
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type JetloopEvent } from "../../../../src/index.js";
import { makeTempDir, removeTempDir } from "../../server.js";
import { sleep, waitFor } from "../../async.js";
import { killAll, readRecordLines, startChild as startScript } from "../child-process.js";
import { row, tally, type ScenarioRecord } from "../figures.js";
import { enduring, eventIdOf, newCoords } from "../workload.js";
import { record, scenarioNamespace, type ScenarioContext } from "./common.js";

export interface ConsumerCrashOptions {
  /** NATS server URLs (the suite's shared server is fine: the namespace is private). */
  readonly servers: string[];
  readonly serverVersion: string;
  readonly events: number;
  /** Kill the first process once it has recorded this many events. */
  readonly killAfter: number;
  /** Work per event in the child. */
  readonly delayMs: number;
  readonly ackWaitMs: number;
}

export interface ConsumerCrashResult {
  readonly record: ScenarioRecord;
  readonly published: string[];
  readonly first: { seq: number; id: string; count: number }[];
  readonly second: { seq: number; id: string; count: number }[];
  /** The consumer's ack floor (stream sequence) right after the kill. */
  readonly ackFloorAtKill: number;
  readonly all: ReturnType<typeof tally>;
  /** Deliveries to the second process at or below the ack floor (must be none). */
  readonly belowFloor: number;
}

export const CONSUMER_CRASH = { id: "4-consumer-crash", title: "Durable consumer process killed (SIGKILL) mid-batch, restarted" } as const;

function readRecords(file: string): { seq: number; id: string; count: number }[] {
  return readRecordLines(file).map(([seq, id, count]) => ({ seq: Number(seq), id: id!, count: Number(count) }));
}

const startChild = (env: Record<string, string>) => startScript("durable-consumer-child.ts", env);

export async function consumerCrashScenario(ctx: ScenarioContext, o: ConsumerCrashOptions): Promise<ConsumerCrashResult> {
  const t0 = Date.now();
  const ns = scenarioNamespace();
  const durable = "crash-svc";
  const dir = makeTempDir("jetloop-crash-");
  const env = {
    JETLOOP_SERVERS: o.servers.join(","),
    JETLOOP_NS: ns,
    JETLOOP_DURABLE: durable,
    JETLOOP_DELAY_MS: String(o.delayMs),
    JETLOOP_ACK_WAIT_MS: String(o.ackWaitMs),
  };
  const bus = await connect({ servers: o.servers, namespace: ns });
  const children: ChildProcess[] = [];
  try {
    await bus.provision();
    const coords = newCoords();
    const events: JetloopEvent[] = Array.from({ length: o.events }, () => enduring(coords));
    const published = events.map(eventIdOf);
    await bus.publishAll(events);
    const jsm = await jetstreamManager(bus.nc, { checkAPI: false });

    // First process: killed once it has recorded killAfter events.
    const out1 = join(dir, "first.log");
    const p1 = startChild({ ...env, JETLOOP_OUT: out1 });
    children.push(p1.child);
    await p1.ready;
    await waitFor("the first consumer to get going", () => readRecords(out1).length >= o.killAfter, 30_000, 5);
    p1.child.kill("SIGKILL");
    await p1.exited;
    const first = readRecords(out1);
    const atKill = await jsm.consumers.info(bus.stream, durable);
    const ackFloorAtKill = atKill.ack_floor.stream_seq;
    ctx.log?.(`  killed after ${first.length} records; ack floor ${ackFloorAtKill}, ${atKill.num_ack_pending} delivered unacked`);

    // Second process: same durable, runs until everything is acknowledged.
    const out2 = join(dir, "second.log");
    const p2 = startChild({ ...env, JETLOOP_OUT: out2 });
    children.push(p2.child);
    await p2.ready;
    await waitFor(
      "the second consumer to finish the stream",
      async () => {
        const ci = await jsm.consumers.info(bus.stream, durable);
        return ci.num_pending === 0 && ci.num_ack_pending === 0 && ci.ack_floor.stream_seq >= o.events;
      },
      60_000,
      100,
    );
    await sleep(200);
    p2.child.kill("SIGTERM");
    await Promise.race([p2.exited, sleep(5000)]);
    const second = readRecords(out2);

    const all = tally(published, [...first, ...second].map((x) => x.id));
    const belowFloor = second.filter((x) => x.seq <= ackFloorAtKill).length;
    const firstIds = new Set(first.map((x) => x.id));
    const redelivered = second.filter((x) => firstIds.has(x.id)).length;
    const r = record(
      ctx,
      CONSUMER_CRASH.id,
      CONSUMER_CRASH.title,
      o.serverVersion,
      t0,
      [
        row("first process (killed)", { ...tally(published, first.map((x) => x.id)), lost: null }, { "ack floor at the kill": ackFloorAtKill }),
        row("second process (restarted)", { ...tally(published, second.map((x) => x.id)), lost: null }, {
          "first sequence": second[0]?.seq ?? 0,
          "at or below the ack floor": belowFloor,
          "already recorded by the first": redelivered,
        }),
        row("both processes together", all),
      ],
      {
        "work per event (ms)": o.delayMs,
        "ack wait (ms)": o.ackWaitMs,
        "delivered but unacked at the kill": atKill.num_ack_pending,
      },
    );
    return { record: r, published, first, second, ackFloorAtKill, all, belowFloor };
  } finally {
    killAll(children);
    await bus.close();
    removeTempDir(dir); // vitest workers never run the exit hook that would remove it
  }
}
