// Scenario 2b: a three-node cluster, a namespace split in three R3 shards whose leaders
// provision spread over the three servers; the leader of one shard is killed (SIGKILL)
// mid-load and brought back. Each shard has its own producer (a producer's appends wait on
// each other, so one shared by all shards would stall them all behind the dead shard's).
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, createEvent, newId, type BusProvisionReport, type Jetloop, type JetloopEvent } from "../../../../src/index.js";
import { sessionPartition } from "../../../../src/partition/partition.js";
import { provisionOnCluster, startCluster, type NatsCluster } from "../../cluster.js";
import { settledWithin, sleep, waitFor } from "../../async.js";
import { row, tally, type FigureRow } from "../figures.js";
import { SPREAD_STEP } from "../../../../src/streams/leaders.js";
import { auditStream, captureLogger, collect, enduring, eventIdOf, faultAfter, newCoords, produce, summarize, type AppendOutcome, type Collected } from "../workload.js";
import { adminConnection, outOfOrder, record, scenarioNamespace, type ScenarioContext } from "./common.js";
import { NamespaceReaders, type Stored } from "./namespace-readers.js";
import type { ScenarioRecord } from "../figures.js";

export const SHARDS = 3;

export interface ShardLeaderKillOptions {
  /** Events per shard. */
  readonly eventsPerShard: number;
  /** Appends started per second, per shard. */
  readonly ratePerSec: number;
  readonly sessionsPerShard: number;
  /** Kill the victim shard's leader once this many appends (all shards) have settled. */
  readonly killAfter: number;
  /** How long the killed node stays down. */
  readonly downMs: number;
  readonly cluster?: () => Promise<NatsCluster>;
  /** Runs once the shards are provisioned and spread (the CLI's view of them, in the test). */
  readonly onProvisioned?: (servers: string[], namespace: string) => Promise<void>;
}

/** What one shard went through. */
export interface ShardOutcome {
  readonly shard: number;
  readonly stream: string;
  readonly leader: string;
  readonly sessions: readonly string[];
  readonly published: readonly string[];
  readonly outcomes: readonly AppendOutcome[];
  readonly republished: readonly AppendOutcome[];
  /** Appends of this shard acknowledged while the victim shard acknowledged none (its stall). */
  readonly ackedDuringStall: number;
  readonly journal: ReturnType<typeof tally> & { messages: number };
  /** The live subscription of the shard's first session: its events, in order. */
  readonly live: ReturnType<typeof tally> & { outOfOrder: number };
  /** One-session replays of every session of the shard, after the run. */
  readonly replays: ReturnType<typeof tally> & { outOfOrder: number };
}

export interface ShardLeaderKillResult {
  readonly record: ScenarioRecord;
  readonly serverVersion: string;
  /** provision's report, and `provision --verify`'s afterwards. */
  readonly provisioned: BusProvisionReport;
  readonly verified: BusProvisionReport;
  readonly victim: number;
  readonly oldLeader: string;
  readonly newLeader: string;
  readonly electedMs: number;
  /** The longest time the victim shard acknowledged nothing, around the kill. */
  readonly stallMs: number;
  readonly shards: readonly ShardOutcome[];
  /** The namespace-wide readers (every shard at once) and the gateway, through the kill. */
  readonly readers: Awaited<ReturnType<NamespaceReaders["figures"]>>;
  readonly replicasCurrent: boolean;
}

export const SHARD_LEADER_KILL = { id: "2b-shard-leader-kill", title: "A shard's leader killed under load (3 shards, R3)" } as const;

/** Sessions until every shard has `perShard`, grouped by shard. */
function sessionsByShard(perShard: number): string[][] {
  const out: string[][] = Array.from({ length: SHARDS }, () => []);
  while (out.some((s) => s.length < perShard)) {
    const id = newId();
    const k = sessionPartition(id, SHARDS);
    if (out[k]!.length < perShard) out[k]!.push(id);
  }
  return out;
}

export async function shardLeaderKillScenario(ctx: ScenarioContext, o: ShardLeaderKillOptions): Promise<ShardLeaderKillResult> {
  const t0 = Date.now();
  const cluster = await (o.cluster ?? startCluster)();
  const ns = scenarioNamespace();
  const admin = await adminConnection(cluster.urls);
  const log = captureLogger("debug");
  const bus: Jetloop = await connect({ logger: log.logger, servers: cluster.urls, namespace: ns, shards: SHARDS, ackTimeoutMs: 1000, publishDeadlineMs: 30_000, natsOptions: { reconnectTimeWait: 200, name: "reliability-shards" } });
  let opened: NamespaceReaders | undefined;
  try {
    let provisioned: BusProvisionReport | undefined;
    const p0 = Date.now();
    await provisionOnCluster(async () => void (provisioned = await bus.provision({ replicas: 3 })));
    const provisionMs = Date.now() - p0;
    const verified = await bus.provision({ mode: "verify" });
    await o.onProvisioned?.(cluster.urls, ns);
    const shardReports = verified.shards ?? [];
    const leaders = shardReports.map((r) => r.leader ?? "");
    ctx.log?.(`  ${SHARDS} shards of ${bus.stream} (R3), leaders ${leaders.join(", ")}`);
    const jsm = await jetstreamManager(admin, { checkAPI: false, timeout: 1000 });
    const leaderOf = async (stream: string): Promise<string> => (await jsm.streams.info(stream)).cluster?.leader ?? "";

    // The victim: a shard led by a server the producer is not connected to, so the kill is
    // one shard's election, not also the client's reconnect (which pauses every shard).
    const connectedTo = bus.nc.info?.server_name;
    const victim = Math.max(0, leaders.findIndex((l) => l !== "" && l !== connectedTo));
    const oldLeader = leaders[victim]!;
    // A durable's open also reads its replay consumer on the parked store, one stream with a leader of its own.
    const parkedLeader = await leaderOf(bus.parked.stream).catch(() => "");

    const sessions = sessionsByShard(o.sessionsPerShard);
    const events: JetloopEvent[][] = sessions.map((ss) => {
      const coords = ss.map((s) => newCoords(s));
      const evs = Array.from({ length: o.eventsPerShard }, (_, i) => enduring(coords[i % coords.length]!));
      // The first session's last event starts a turn, after the kill: the gateway's status
      // of the session must read it (a decision does not move a session's status).
      const last = evs.findLastIndex((e) => e.sessionId === ss[0]);
      evs[last] = createEvent("TurnStarted", { sessionId: ss[0]!, loopId: coords[0]!.loopId, turnId: newId() });
      return evs;
    });
    const lives: Collected[] = [];
    const liveSubs = [];
    for (const ss of sessions) {
      const sub = await bus.subscribeEvents({ enduring: "all", sessions: [ss[0]!] }, { start: "all" });
      liveSubs.push(sub);
      lives.push(collect(sub));
    }
    const readers = (opened = await NamespaceReaders.open(bus));

    let killedAt = 0;
    let electedAt = 0;
    let newLeader = "";
    let readersAtKill: Promise<void> = Promise.resolve();
    let onKilled = () => {};
    const killed = new Promise<void>((r) => (onKilled = r));
    const fault = faultAfter(o.killAfter, async () => {
      ctx.log?.(`  killing ${oldLeader}, leader of shard ${victim}, after ${o.killAfter} appends`);
      ({ restarted: readersAtKill } = await readers.atKill(sessions.map((ss, k) => ({ sessionId: ss[0]!, statusEventId: eventIdOf(events[k]!.find((e) => e.type === "TurnStarted")!) })), killed));
      const node = cluster.node(oldLeader);
      await node.kill();
      killedAt = Date.now();
      onKilled();
      newLeader = await waitFor("a new leader of the shard", async () => {
        const l = await leaderOf(shardReports[victim]!.stream).catch(() => "");
        return l && l !== oldLeader ? l : false;
      }, 30_000, 100);
      electedAt = Date.now();
      ctx.log?.(`  shard ${victim}: new leader ${newLeader} after ${electedAt - killedAt} ms`);
      await sleep(Math.max(0, o.downMs - (electedAt - killedAt)));
      await node.restart();
      await cluster.waitReady();
    });
    let settled = 0;
    const producers = events.map((evs) => produce({ bus, events: evs, concurrency: 8, ratePerSec: o.ratePerSec, onSettled: () => fault.onSettled(++settled) }));
    const outcomes = await settledWithin("the producers", Promise.all(producers.map((p) => p.done)), 120_000);
    await fault.done();
    await readersAtKill;

    // The victim's stall: the longest gap between two of its acks from just before the kill
    // (its own clock, not a poll of the server's view of the election).
    const ackTimes = (k: number) => outcomes[k]!.flatMap((x) => (x.status === "acked" ? [x.at + x.ms] : [])).sort((a, b) => a - b);
    const stall = ((): { from: number; to: number } => {
      const times = ackTimes(victim).filter((t) => t >= killedAt - 1000);
      let best = { from: killedAt, to: killedAt };
      for (let i = 1; i < times.length; i++) if (times[i]! - times[i - 1]! > best.to - best.from) best = { from: times[i - 1]!, to: times[i]! };
      return best;
    })();

    const shards: ShardOutcome[] = [];
    // Every shard's stream as the namespace-wide readers must have it.
    const stored: Stored[] = [];
    const shardEnds: number[] = [];
    const sessionOf = new Map(events.flatMap((evs) => evs.map((e) => [eventIdOf(e), e.sessionId] as const)));
    for (let k = 0; k < SHARDS; k++) {
      const mine = outcomes[k]!;
      const failed = events[k]!.filter((_, i) => mine[i]!.status === "failed");
      const republished = failed.length > 0 ? await produce({ bus, events: failed, concurrency: 8 }).done : [];
      const published = events[k]!.map(eventIdOf);
      const watched = new Set(events[k]!.filter((e) => e.sessionId === sessions[k]![0]).map(eventIdOf));
      await lives[k]!.waitForAll(watched, 30_000).catch(() => undefined);
      const audit = await auditStream(admin, shardReports[k]!.stream);
      shardEnds.push(audit.lastSeq);
      audit.ids.forEach((id, i) => stored.push({ id, shard: k, seq: audit.firstSeq + i, sessionId: sessionOf.get(id) ?? "" }));
      const replayed: string[] = [];
      let replayDisorder = 0;
      for (const s of sessions[k]!) {
        const seqs: number[] = [];
        for await (const d of bus.replay({ enduring: "all", sessions: [s] })) {
          replayed.push(eventIdOf(d.event));
          seqs.push(d.journalSeq);
        }
        replayDisorder += outOfOrder(seqs);
      }
      shards.push({
        shard: k,
        stream: shardReports[k]!.stream,
        leader: leaders[k]!,
        sessions: sessions[k]!,
        published,
        outcomes: mine,
        republished,
        ackedDuringStall: ackTimes(k).filter((t) => t > stall.from && t < stall.to).length,
        journal: { ...tally(published, audit.ids), messages: audit.messages },
        live: { ...tally(watched, lives[k]!.ids), outOfOrder: outOfOrder(lives[k]!.seqs) },
        replays: { ...tally(published, replayed), outOfOrder: replayDisorder },
      });
    }

    await readers.settle(stored, 30_000);
    const readerFigures = await readers.figures(stored, shardEnds, SHARDS);

    const replicasCurrent = await waitFor(
      "every shard's replicas current",
      async () => {
        for (const r of shardReports) {
          const replicas = (await jsm.streams.info(r.stream)).cluster?.replicas ?? [];
          if (replicas.length !== 2 || !replicas.every((x) => x.current && !x.offline)) return false;
        }
        return true;
      },
      30_000,
      200,
    ).catch(() => false);

    const rows: FigureRow[] = shards.flatMap((s) => {
      const sum = summarize([...s.outcomes]);
      const label = `shard ${s.shard}${s.shard === victim ? " (leader killed)" : ""}`;
      return [
        row(`appends of ${label}`, { published: s.published.length, delivered: sum.acked, lost: 0, duplicated: sum.duplicateAcks }, {
          "failed (typed)": sum.failedTyped,
          "failed (untyped)": sum.failedUntyped,
          "republished ok": summarize([...s.republished]).acked,
          ...(s.shard === victim ? { "stalled (ms)": stall.to - stall.from } : { [`acked while shard ${victim} stalled`]: s.ackedDuringStall }),
          "slowest append (ms)": Math.max(...s.outcomes.map((x) => x.ms)),
        }),
        row(`journal of ${label} (stream audit)`, s.journal, { "stream messages": s.journal.messages, "of other shards": s.journal.unexpected }),
        row(`live subscriber of ${label} (one session)`, s.live, { "out of order": s.live.outOfOrder }),
        row(`replays of ${label} (each session)`, s.replays, { "out of order": s.replays.outOfOrder }),
      ];
    });
    rows.push(...readerFigures.rows);
    const r = record(ctx, SHARD_LEADER_KILL.id, SHARD_LEADER_KILL.title, cluster.version, t0, rows, {
      "shard leaders after provision": (provisioned?.shards ?? []).map((x) => x.leader ?? "").join(", "),
      "servers leading a shard": new Set(leaders).size,
      "step-downs provision asked for to spread them": log.count(SPREAD_STEP),
      "provision, spreading included (ms)": provisionMs,
      "killed shard": victim,
      "kill after appends (all shards)": o.killAfter,
      "new leader seen by a poll (ms)": electedAt - killedAt,
      "killed shard stalled (ms)": stall.to - stall.from,
      "replicas current afterwards": replicasCurrent,
      "parked store led by the killed server": parkedLeader === oldLeader,
    });
    for (const sub of liveSubs) await sub.close();
    return { record: r, serverVersion: cluster.version, provisioned: provisioned!, verified, victim, oldLeader, newLeader, electedMs: electedAt - killedAt, stallMs: stall.to - stall.from, shards, readers: readerFigures, replicasCurrent };
  } finally {
    await opened?.close().catch(() => undefined);
    await bus.close();
    await admin.close().catch(() => undefined);
    await cluster.close();
  }
}
