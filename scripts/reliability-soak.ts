// The reliability scenarios of RELIABILITY.md under more load than CI should carry.
// Same code as test/integration/reliability/ (test/harness/reliability/scenarios/), larger
// parameters, and the same figures: printed here, written to
// .bench-out/reliability/soak-<flavor>/, and rendered into RELIABILITY.md.
//
//   npx tsx scripts/reliability-soak.ts                          # every scenario, newest server
//   JETLOOP_NATS_SERVER=oldest npx tsx scripts/reliability-soak.ts
//   npx tsx scripts/reliability-soak.ts --only leader-kill,client-cutoff --scale 2
//   npx tsx scripts/reliability-soak.ts --no-report              # do not touch RELIABILITY.md
//
// Exits 1 when a scenario breaks its promise (a lost or duplicated journal event, an
// unsettled or untyped failure, an invalid event yielded, a leaked secret ...).
import { figuresTable, factsTable, writeReliabilityReport } from "./reliability-report.js";
import { writeScenarioRecord, type ScenarioRecord } from "../test/harness/reliability/figures.js";
import { badInputScenario } from "../test/harness/reliability/scenarios/bad-input.js";
import { clientCutoffScenario } from "../test/harness/reliability/scenarios/client-cutoff.js";
import type { ScenarioContext } from "../test/harness/reliability/scenarios/common.js";
import { consumerCrashScenario } from "../test/harness/reliability/scenarios/consumer-crash.js";
import { groupScenario } from "../test/harness/reliability/scenarios/group.js";
import { durabilityScenario } from "../test/harness/reliability/scenarios/durability.js";
import { leaderKillScenario } from "../test/harness/reliability/scenarios/leader-kill.js";
import { shardLeaderKillScenario } from "../test/harness/reliability/scenarios/shard-leader-kill.js";
import { parkingScenario } from "../test/harness/reliability/scenarios/parking.js";
import { securityScenario } from "../test/harness/reliability/scenarios/security.js";
import { serverRestartScenario } from "../test/harness/reliability/scenarios/server-restart.js";
import { slowConsumerScenario } from "../test/harness/reliability/scenarios/slow-consumer.js";
import { serverFlavor, startServer } from "../test/harness/server.js";

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? undefined : process.argv[i + 1];
}

const scale = Number(arg("scale") ?? 1);
if (!(scale > 0)) throw new Error("--scale must be a positive number");
const n = (x: number): number => Math.max(1, Math.round(x * scale));
const only = arg("only")?.split(",").map((s) => s.trim());
const ctx: ScenarioContext = { run: `soak-${serverFlavor()}`, log: (line) => console.log(line) };

/** A scenario: runs, returns its record and the promises it broke (empty: kept). */
type Soak = () => Promise<{ record: ScenarioRecord; broken: string[] }>;

const check = (broken: string[], ok: boolean, what: string): void => {
  if (!ok) broken.push(what);
};

const SOAKS: Record<string, Soak> = {
  "server-restart": async () => {
    const events = n(6000);
    const r = await serverRestartScenario(ctx, { events, ratePerSec: 300, restartAfter: Math.floor(events / 3), downMs: 3000 });
    const b: string[] = [];
    check(b, r.outcomes.every((o) => o.status === "acked" || o.typed), "an append failed untyped");
    check(b, r.journal.lost === 0 && r.journal.duplicated === 0 && r.journal.messages === events, "the journal lost or duplicated an event");
    check(b, r.ordered.lost === 0 && r.ordered.duplicated === 0, "the live subscriber lost or duplicated an event");
    check(b, r.durable.lost === 0 && r.durable.unexpected === 0, "the durable subscriber lost an event");
    return { record: r.record, broken: b };
  },
  "leader-kill": async () => {
    const events = n(6000);
    const r = await leaderKillScenario(ctx, { events, ratePerSec: 300, killAfter: Math.floor(events / 3), downMs: 3000 });
    const b: string[] = [];
    check(b, r.newLeader !== "" && r.newLeader !== r.oldLeader, "the leadership did not move");
    check(b, r.outcomes.every((o) => o.status === "acked" || o.typed), "an append failed untyped");
    check(b, r.journal.lost === 0 && r.journal.duplicated === 0 && r.journal.messages === events, "the journal lost or duplicated an event");
    check(b, r.ordered.lost === 0 && r.ordered.duplicated === 0, "the live subscriber lost or duplicated an event");
    check(b, r.replicasCurrent, "the replicas did not catch up");
    return { record: r.record, broken: b };
  },
  "shard-leader-kill": async () => {
    const eventsPerShard = n(2000);
    const r = await shardLeaderKillScenario(ctx, { eventsPerShard, ratePerSec: 200, sessionsPerShard: 8, killAfter: Math.floor((3 * eventsPerShard) / 4), downMs: 3000 });
    const b: string[] = [];
    check(b, new Set((r.provisioned.shards ?? []).map((s) => s.leader)).size === 3, "the shard leaders were not spread over three servers");
    check(b, r.newLeader !== "" && r.newLeader !== r.oldLeader, "the leadership did not move");
    for (const s of r.shards) {
      check(b, s.outcomes.every((o) => o.status === "acked" || o.typed), `shard ${s.shard}: an append failed untyped`);
      check(b, s.journal.lost === 0 && s.journal.duplicated === 0 && s.journal.unexpected === 0 && s.journal.messages === eventsPerShard, `shard ${s.shard}: the journal lost or duplicated an event`);
      check(b, s.live.lost === 0 && s.live.duplicated === 0 && s.replays.lost === 0 && s.replays.duplicated === 0, `shard ${s.shard}: a reader lost or duplicated an event`);
      check(b, s.shard === r.victim || s.ackedDuringStall > 0, `shard ${s.shard}: stalled with the killed shard`);
    }
    const { loopFeed, namespaceFeed, resumed, durable, gateway, positions } = r.readers;
    for (const [what, f] of Object.entries({ "the loop-feed reader": loopFeed, "the namespace-feed reader": namespaceFeed, "the resumed reader": resumed, "the durable": durable, "the gateway's SSE": gateway.sse, "the gateway's journal pages": gateway.pages })) {
      check(b, f.lost === 0 && f.duplicated === 0 && f.unexpected === 0 && f.outOfOrder === 0 && f.wrongShard === 0, `${what} (every shard) lost, duplicated or reordered an event`);
    }
    check(b, positions.loopFeed && positions.namespaceFeed && positions.resumed, "a namespace-wide reader's positions() did not end at every shard's last sequence");
    check(b, r.readers.durableErr === undefined, `the durable (every shard) failed: ${r.readers.durableErr?.message ?? ""}`);
    check(b, gateway.statusRight === gateway.sessions, "the gateway's status missed a session's last event");
    check(b, r.replicasCurrent, "the replicas did not catch up");
    return { record: r.record, broken: b };
  },
  "client-cutoff": async () => {
    const events = n(3000);
    const r = await clientCutoffScenario(ctx, { events, ratePerSec: 150, pauseAfter: Math.floor(events / 4), pauseMs: 8000, pingIntervalMs: 500, maxPingOut: 2, publishDeadlineMs: 5000 });
    const b: string[] = [];
    check(b, r.unsettledAtDeadline === 0, "an append never settled");
    check(b, r.outcomes.every((o) => o.status === "acked" || o.typed), "an append failed untyped");
    check(b, r.journal.lost === 0 && r.journal.duplicated === 0 && r.journal.messages === events, "the journal lost or duplicated an event");
    check(b, r.ordered.lost === 0 && r.ordered.duplicated === 0 && r.orderedAfterResume === r.appendedAfterResume, "the subscriber did not resume cleanly");
    return { record: r.record, broken: b };
  },
  "consumer-crash": async () => {
    const server = await startServer();
    try {
      const events = n(5000);
      const r = await consumerCrashScenario(ctx, { servers: [server.url], serverVersion: server.version, events, killAfter: Math.floor(events / 3), delayMs: 1, ackWaitMs: 2000 });
      const b: string[] = [];
      check(b, r.all.lost === 0 && r.all.unexpected === 0, "an event was lost");
      check(b, r.belowFloor === 0, "the restarted consumer got events at or below the ack floor");
      return { record: r.record, broken: b };
    } finally {
      await server.close();
    }
  },
  "partitioned-group": async () => {
    const server = await startServer();
    try {
      // The size: 200 sessions × 50 events, three members, one killed and one added.
      const r = await groupScenario(ctx, { servers: [server.url], serverVersion: server.version, sessions: 200, eventsPerSession: n(50), partitions: 16, maxDelayMs: 4, leaseMs: 1000, ackWaitMs: 1500 });
      const b: string[] = [];
      check(b, r.all.lost === 0 && r.all.unexpected === 0, "an event was lost");
      check(b, r.orderViolations === 0, "an event was handled before an earlier one of its session was done");
      check(b, r.foreignDuplicates === 0 && r.duplicated <= r.killedOwned, "a duplicate was not the killed member's unsettled delivery");
      check(b, r.addedHandled > 0, "the added member handled nothing");
      check(b, r.moveMs > 0 && r.moveMs < 2500, "the partitions did not move within two lease times");
      return { record: r.record, broken: b };
    } finally {
      await server.close();
    }
  },
  parking: async () => {
    const server = await startServer();
    try {
      const r = await parkingScenario(ctx, { servers: [server.url], serverVersion: server.version, events: n(2000), failEvery: 8, maxDeliver: 3, backoffMs: 200 });
      const b: string[] = [];
      check(b, r.all.lost === 0 && r.all.unexpected === 0, "an event was lost");
      check(b, r.replayed.lost === 0 && r.replayed.duplicated === 0, "a parked event was not replayed exactly once");
      check(b, r.parkedAtEnd === 0 && r.pendingAtEnd === 0, "something stayed parked or pending");
      return { record: r.record, broken: b };
    } finally {
      await server.close();
    }
  },
  "slow-consumer": async () => {
    const r = await slowConsumerScenario(ctx, { previews: n(200_000), previewBytes: 400, journalEvents: n(20_000), ephemeralBuffer: 256, readDelayMs: 0 });
    const b: string[] = [];
    check(b, r.journal.lost === 0 && r.journal.duplicated === 0, "a journal event was lost or duplicated");
    check(b, r.previews.unaccounted === 0, "a preview vanished without being counted");
    check(b, r.retainedDeltaBytes < r.burstBytes / 4, "the retained heap grew with the burst");
    return { record: r.record, broken: b };
  },
  "bad-input": async () => {
    const server = await startServer();
    try {
      const r = await badInputScenario(ctx, { servers: [server.url], serverVersion: server.version, repeat: n(150), validEvents: n(2000), seed: Date.now() % 1_000_000, capBytes: 65_536 });
      const b: string[] = [];
      for (const s of [r.ordered, r.durable, r.replay, r.live]) check(b, s.t.lost === 0 && s.t.duplicated === 0 && s.t.unexpected === 0, "a subscriber yielded something invalid or lost something valid");
      check(b, r.ordered.poison.length === r.injectedJournal && r.live.poison.length === r.injectedLive, "a malformed message was not reported");
      check(b, r.leakyDeliveries === 0 && r.logSecretHits === 0, "a secret leaked");
      check(b, r.boundaries.every((x) => x.outcome !== "accepted" && !x.outcome.startsWith("untyped")), "a bad call was accepted or failed untyped");
      check(b, r.crashes.uncaught === 0 && r.crashes.unhandled === 0, "an uncaught exception or unhandled rejection");
      return { record: r.record, broken: b };
    } finally {
      await server.close();
    }
  },
  security: async () => {
    const r = await securityScenario(ctx, { events: n(1000) });
    const b: string[] = [];
    check(b, r.alice.lost === 0 && r.alice.foreign === 0 && r.bob.lost === 0 && r.bob.foreign === 0, "a follower lost its events or got another's");
    check(b, r.refusals.every((x) => x.typed && x.ms < 2000), "a refusal was untyped or slow");
    check(b, r.attacks.every((a) => a.refused), "a raw API attempt was not refused");
    check(b, r.logHits.length === 0 && r.streamHits === 0 && r.deliveredHits === 0, "a secret leaked");
    return { record: r.record, broken: b };
  },
  durability: async () => {
    const events = n(30_000);
    const r = await durabilityScenario(ctx, { events, killAfter: Math.floor((events * 2) / 3), concurrency: 512 });
    const b: string[] = [];
    for (const run of r.runs) check(b, run.lostAcked === 0 && run.duplicates === 0, `${run.setting}: an acknowledged event was lost`);
    return { record: r.record, broken: b };
  },
};

const names = only ?? Object.keys(SOAKS);
for (const name of names) if (!SOAKS[name]) throw new Error(`unknown scenario ${name}; known: ${Object.keys(SOAKS).join(", ")}`);

let failed = 0;
for (const name of names) {
  console.log(`\n=== ${name} (${ctx.run}, scale ${scale})`);
  try {
    const { record, broken } = await SOAKS[name]!();
    writeScenarioRecord(record);
    console.log(`\n${record.title}\n\n${figuresTable([record])}\n\n${factsTable([record])}\n`);
    if (broken.length > 0) {
      failed++;
      console.log(`BROKEN: ${broken.join("; ")}`);
    } else {
      console.log("kept its promise");
    }
  } catch (e) {
    failed++;
    console.log(`FAILED: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  }
}
if (!process.argv.includes("--no-report")) console.log(`\nwrote ${writeReliabilityReport()}`);
process.exit(failed > 0 ? 1 : 0);
