// Scenario 9: durable handlers that fail some events. They are parked after their last
// attempt, one process is killed (SIGKILL) between parking an event and terminating it,
// two processes share the durable, and once the bug is fixed `parked replay` sends each
// parked event back exactly once (the server may hand one over again: at least once).
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type JetloopEvent } from "../../../../src/index.js";
import { makeTempDir, removeTempDir } from "../../server.js";
import { sleep, waitFor } from "../../async.js";
import { killAll, readRecordLines, startChild } from "../child-process.js";
import { row, tally, type ScenarioRecord } from "../figures.js";
import { enduring, eventIdOf, newCoords } from "../workload.js";
import { record, scenarioNamespace, type ScenarioContext } from "./common.js";

export interface ParkingOptions {
  readonly servers: string[];
  readonly serverVersion: string;
  readonly events: number;
  /** Events whose journal sequence is a multiple of this fail until the "fix". */
  readonly failEvery: number;
  readonly maxDeliver: number;
  readonly backoffMs: number;
}

interface Records {
  handed: { seq: number; id: string; count: number; replayed: boolean }[];
  acked: { seq: number; id: string; replayed: boolean }[];
  parked: { seq: number; reason: string; code: string }[];
}

export interface ParkingResult {
  readonly record: ScenarioRecord;
  /** The journal sequence parked by the process that was killed before terminating it. */
  readonly killedAt: number;
  /** Parked entries after the first pass, by journal sequence. */
  readonly parkedAfterFirstPass: number[];
  readonly failingSeqs: number[];
  readonly first: Records;
  readonly killed: Records;
  readonly replay: Records;
  /** Acknowledged ids of every process against every published id. */
  readonly all: ReturnType<typeof tally>;
  /** Replayed acknowledgements against the failing ids (a redelivered one counts again). */
  readonly replayed: ReturnType<typeof tally>;
  /** First hand-overs of replayed events (delivery count 1) against the failing ids: what `parked replay` sent. */
  readonly replayedFirst: ReturnType<typeof tally>;
  /** Replayed events handed over again by the server (delivery count above 1): at-least-once. */
  readonly replayRedelivered: number;
  /** The parked store and the durables' consumers at the end. */
  readonly parkedAtEnd: number;
  readonly pendingAtEnd: number;
}

export const PARKING = { id: "9-parking", title: "Durable handlers failing: park, SIGKILL between parking and terminating, replay" } as const;

function readRecords(files: readonly string[]): Records {
  const r: Records = { handed: [], acked: [], parked: [] };
  for (const f of files) {
    for (const [kind, seq, a, b, c] of readRecordLines(f)) {
      if (kind === "H") r.handed.push({ seq: Number(seq), id: a!, count: Number(b), replayed: c === "true" });
      else if (kind === "A") r.acked.push({ seq: Number(seq), id: a!, replayed: b === "true" });
      else if (kind === "P") r.parked.push({ seq: Number(seq), reason: a!, code: b! });
    }
  }
  return r;
}

export async function parkingScenario(ctx: ScenarioContext, o: ParkingOptions): Promise<ParkingResult> {
  const t0 = Date.now();
  const ns = scenarioNamespace("k");
  const durable = "billing";
  const dir = makeTempDir("jetloop-parking-");
  const env = { JETLOOP_SERVERS: o.servers.join(","), JETLOOP_NS: ns, JETLOOP_DURABLE: durable, JETLOOP_MAX_DELIVER: String(o.maxDeliver), JETLOOP_BACKOFF_MS: String(o.backoffMs) };
  const bus = await connect({ servers: o.servers, namespace: ns });
  const children: ChildProcess[] = [];
  const run = async (name: string, extra: Record<string, string>) => {
    const c = startChild("parking-child.ts", { ...env, ...extra, JETLOOP_OUT: join(dir, `${name}.log`) });
    children.push(c.child);
    await c.ready;
    return c;
  };
  const stop = async (cs: { child: ChildProcess; exited: Promise<void> }[]) => {
    for (const c of cs) c.child.kill("SIGTERM");
    await Promise.race([Promise.all(cs.map((c) => c.exited)), sleep(5000)]);
  };
  try {
    await bus.provision();
    const jsm = await jetstreamManager(bus.nc, { checkAPI: false });
    const events: JetloopEvent[] = Array.from({ length: o.events }, () => enduring(newCoords()));
    const published = events.map(eventIdOf);
    const seqs = (await bus.publishAll(events)).map((r) => r.journalSeq);
    const failingSeqs = seqs.filter((s) => s % o.failEvery === 0);
    const failingIds = failingSeqs.map((s) => published[seqs.indexOf(s)]!);
    const fail = { JETLOOP_FAIL_EVERY: String(o.failEvery) };

    // 1. One process, killed once its first parked entry is stored, as its term is about to leave.
    const a = await run("a-killed", { ...fail, JETLOOP_KILL_ON_PARK: "1" });
    await Promise.race([a.exited, sleep(60_000).then(() => Promise.reject(new Error("the first process did not park anything")))]);
    const atKill = await bus.parked.list(durable);
    const killedAt = atKill[0]?.journalSeq ?? 0;
    ctx.log?.(`  killed after parking #${killedAt}; ${atKill.length} parked`);

    // 2. Two processes share the durable until everything is acknowledged or parked.
    // Each pair started at once: a start is a tsx process coming up, seconds on a loaded machine.
    const b = await Promise.all([run("b1", fail), run("b2", fail)]);
    await waitFor(
      "the first pass to settle every event",
      async () => {
        const ci = await jsm.consumers.info(bus.stream, durable);
        return ci.num_pending === 0 && ci.num_ack_pending === 0 && (await bus.parked.list(durable)).length === failingSeqs.length;
      },
      90_000,
      100,
    );
    const parkedAfterFirstPass = (await bus.parked.list(durable)).map((e) => e.journalSeq);
    await stop(b);

    // 3. The bug is fixed: two new processes, and the parked events are replayed to them.
    const c = await Promise.all([run("c1", {}), run("c2", {})]);
    const sent = await bus.parked.replay(durable, "all");
    await waitFor(
      "every replayed event to be acknowledged",
      async () => {
        const ci = await jsm.consumers.info(bus.parked.stream, durable);
        return (await bus.parked.list(durable)).length === 0 && ci.num_pending === 0 && ci.num_ack_pending === 0;
      },
      60_000,
      100,
    );
    await sleep(300);
    await stop(c);

    const killed = readRecords([join(dir, "a-killed.log")]);
    const first = readRecords(["a-killed", "b1", "b2"].map((n) => join(dir, `${n}.log`)));
    const replay = readRecords(["c1", "c2"].map((n) => join(dir, `${n}.log`)));
    const all = tally(published, [...first.acked, ...replay.acked].map((x) => x.id));
    const replayed = tally(failingIds, replay.acked.filter((x) => x.replayed).map((x) => x.id));
    // Delivery is at least once: an entry whose acknowledgement (store removal, then ack)
    // does not reach the server within the replay consumer's ack wait (200 ms here, a
    // stalled process on a loaded machine) is handed over again, with its delivery count up.
    const replayedFirst = tally(failingIds, replay.handed.filter((h) => h.replayed && h.count === 1).map((h) => h.id));
    const replayRedelivered = replay.handed.filter((h) => h.replayed && h.count > 1).length;
    const parkedIds = parkedAfterFirstPass.map((s) => published[seqs.indexOf(s)]!);
    const okIds = published.filter((id) => !failingIds.includes(id));
    const handlerAttemptsOnKilled = first.handed.filter((h) => h.seq === killedAt).length;
    const reparked = first.parked.filter((p) => p.seq === killedAt && p.code === "NOT_SETTLED").length;
    const parkedAtEnd = (await bus.parked.list()).length;
    const ci = await jsm.consumers.info(bus.stream, durable);
    const pendingAtEnd = ci.num_pending + ci.num_ack_pending;

    const r = record(
      ctx,
      PARKING.id,
      PARKING.title,
      o.serverVersion,
      t0,
      [
        row("first pass, handled events (3 processes, one killed)", tally(okIds, first.acked.map((x) => x.id))),
        row("parked store after the first pass", tally(failingIds, parkedIds), { "parked by the killed process before the kill": atKill.length }),
        row("replayed to the fixed handlers (2 processes)", replayed, { "sent by parked replay": sent.length, "first hand-overs": replayedFirst.delivered, "redelivered (at least once)": replayRedelivered, "left parked": parkedAtEnd }),
        row("every process together, acknowledged", all),
      ],
      {
        "killed between parking and terminating (journal sequence)": killedAt,
        "handler attempts on that event (max deliver)": `${handlerAttemptsOnKilled} (${o.maxDeliver})`,
        "re-parked without a handler after the kill": reparked,
        "max deliver": o.maxDeliver,
        "backoff (ms)": o.backoffMs,
        "failing events": failingSeqs.length,
      },
    );
    return { record: r, killedAt, parkedAfterFirstPass, failingSeqs, first, killed, replay, all, replayed, replayedFirst, replayRedelivered, parkedAtEnd, pendingAtEnd };
  } finally {
    killAll(children);
    await bus.close();
    removeTempDir(dir); // vitest workers never run the exit hook that would remove it
  }
}
