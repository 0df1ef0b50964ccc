// Scenario 2: a three-node cluster, stream replicas 3; the stream leader is killed
// (SIGKILL) mid-load and brought back.
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type JetloopEvent } from "../../../../src/index.js";
import { provisionOnCluster, startCluster, type NatsCluster } from "../../cluster.js";
import { settledWithin, sleep, waitFor } from "../../async.js";
import { row, tally } from "../figures.js";
import { auditStream, captureLogger, collect, countAttempts, enduring, resumedAfter, eventIdOf, faultAfter, newCoords, produce, summarize } from "../workload.js";
import { adminConnection, NamespaceFollower, gapSummary, record, scenarioNamespace, type AppendScenarioResult, type ScenarioContext } from "./common.js";

export interface LeaderKillOptions {
  readonly events: number;
  readonly ratePerSec: number;
  /** Kill the stream leader once this many appends have settled. */
  readonly killAfter: number;
  /** How long the killed node stays down. */
  readonly downMs: number;
  /** Starts the cluster; default startCluster() (cluster.conf, processes or containers). */
  readonly cluster?: () => Promise<NatsCluster>;
}

export interface LeaderKillResult extends AppendScenarioResult {
  readonly oldLeader: string;
  readonly newLeader: string;
  /** Every replica current and holding the same last sequence after the node came back. */
  readonly replicasCurrent: boolean;
}

/** What the journal writer logs (debug) when it resends an append whose ack did not come. */
export const RESEND = "ack timed out; resending with the same message id";

export const LEADER_KILL = { id: "2-leader-kill", title: "Cluster stream leader killed under load (R3)" } as const;

export async function leaderKillScenario(ctx: ScenarioContext, o: LeaderKillOptions): Promise<LeaderKillResult> {
  const t0 = Date.now();
  const cluster = await (o.cluster ?? startCluster)();
  const ns = scenarioNamespace();
  const admin = await adminConnection(cluster.urls);
  const log = captureLogger("debug");
  const bus = await connect({
    logger: log.logger,
    servers: cluster.urls,
    namespace: ns,
    ackTimeoutMs: 1000,
    publishDeadlineMs: 30_000,
    natsOptions: { reconnectTimeWait: 200, name: "reliability-leader" },
  });
  try {
    await provisionOnCluster(() => bus.provision({ replicas: 3 }));
    const sends = countAttempts(bus);
    const jsm = await jetstreamManager(admin, { checkAPI: false, timeout: 1000 });
    const leaderOf = async (): Promise<string> => (await jsm.streams.info(bus.stream)).cluster?.leader ?? "";
    const oldLeader = await waitFor("a stream leader", async () => (await leaderOf()) || false, 20_000);
    const placed = (await jsm.streams.info(bus.stream)).cluster;
    ctx.log?.(`  journal ${bus.stream} (R3) placed: leader ${oldLeader}, replicas ${(placed?.replicas ?? []).map((r) => r.name).join(", ")}`);

    const coords = newCoords();
    const events: JetloopEvent[] = Array.from({ length: o.events }, () => enduring(coords));
    const published = events.map(eventIdOf);
    // A live subscription: it follows the stream's feed and repairs gaps from the journal.
    const repairs: string[] = [];
    const orderedSub = await bus.subscribeEvents({ enduring: "all" }, { start: "all", onReport: (rep) => void (rep.kind === "gap_closed" && repairs.push(rep.reason)) });
    const ordered = collect(orderedSub);
    const follower = await NamespaceFollower.open(bus);

    let killedAt = 0;
    let electedMs = -1;
    let newLeader = "";
    const fault = faultAfter(o.killAfter, async () => {
      ctx.log?.(`  killing stream leader ${oldLeader} after ${o.killAfter} appends`);
      const node = cluster.node(oldLeader);
      await node.kill();
      killedAt = Date.now();
      newLeader = await waitFor(
        "a new stream leader",
        async () => {
          const l = await leaderOf();
          return l && l !== oldLeader ? l : false;
        },
        30_000,
        100,
      );
      electedMs = Date.now() - killedAt;
      ctx.log?.(`  new leader ${newLeader} after ${electedMs} ms`);
      await sleep(Math.max(0, o.downMs - electedMs));
      await node.restart();
      await cluster.waitReady();
      ctx.log?.(`  ${oldLeader} back after ${Date.now() - killedAt} ms`);
    });
    const producer = produce({ bus, events, concurrency: 16, ratePerSec: o.ratePerSec, onSettled: fault.onSettled });
    const outcomes = await settledWithin("the producer", producer.done, 120_000);
    await fault.done();

    const failed = events.filter((_, i) => outcomes[i]!.status === "failed");
    const republished = failed.length > 0 ? await produce({ bus, events: failed, concurrency: 16 }).done : [];
    const acked = new Set([...outcomes, ...republished].filter((x) => x.status === "acked").map((x) => x.eventId));
    await ordered.waitForAll(acked, 30_000).catch(() => undefined);
    await follower.got.waitForAll(acked, 30_000).catch(() => undefined);

    // Every replica catches up (the restarted one included) and agrees on the last sequence.
    const replicasCurrent = await waitFor(
      "all replicas current",
      async () => {
        const info = await jsm.streams.info(bus.stream);
        const replicas = info.cluster?.replicas ?? [];
        return replicas.length === 2 && replicas.every((r) => r.current && !r.offline) ? true : false;
      },
      30_000,
      200,
    ).catch(() => false);

    const audit = await auditStream(admin, bus.stream);
    const journal = { ...tally(published, audit.ids), messages: audit.messages };
    const orderedT = tally(published, ordered.ids);
    const s = summarize(outcomes);
    const r = record(
      ctx,
      LEADER_KILL.id,
      LEADER_KILL.title,
      cluster.version,
      t0,
      [
        row("appends (producer)", { published: published.length, delivered: s.acked, lost: 0, duplicated: s.duplicateAcks }, {
          "failed (typed)": s.failedTyped,
          "failed (untyped)": s.failedUntyped,
          "republished ok": summarize(republished).acked,
        }),
        row("journal (stream audit)", journal, { "stream messages": audit.messages }),
        row("live subscriber (feed)", orderedT, { "gaps closed from the journal": gapSummary(repairs) }),
        follower.row(published),
      ],
      {
        "kill after appends": o.killAfter,
        "new leader elected (ms)": electedMs,
        "ordered: first delivery after the kill (ms)": resumedAfter(ordered, killedAt),
        "leader changed": newLeader !== "" && newLeader !== oldLeader,
        "replicas current afterwards": replicasCurrent,
        "slowest append (ms)": Math.max(...outcomes.map((x) => x.ms)),
        "appends resent with the same msg id": sends.resent(),
        "resends in all": sends.resends(),
        "of them after an ack timeout": log.count(RESEND),
        "acks marked duplicate (a resend found the first copy)": s.duplicateAcks,
      },
    );
    const result: LeaderKillResult = { record: r, outcomes, republished, published, oldLeader, newLeader, journal, ordered: orderedT, namespaceFeed: follower.figures(published), replicasCurrent };
    await orderedSub.close();
    await follower.sub.close();
    return result;
  } finally {
    await bus.close();
    await admin.close().catch(() => undefined);
    await cluster.close();
  }
}
