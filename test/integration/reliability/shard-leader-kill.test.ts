// Scenario 2b (RELIABILITY.md): a namespace split in 3 R3 shards on a three-node cluster.
// provision spreads the shards' leaders over the three servers (the SDK report and the
// CLI's `provision --verify` say where each is; 5 shards as 2, 2, 1; R1 shards left where
// the server placed them); one shard's leader is killed under load:
// the other shards keep acknowledging while it elects, no shard loses or duplicates an
// event, and one-session live subscriptions and replays in every shard get all of theirs.
// Namespace-wide readers through the same kill (namespace-readers.ts): a live subscription
// of every session in each feed mode, one resumed from positions taken at the kill, a
// durable reopened during the election, and the gateway serving a session of every shard.
import { describe, expect, it } from "vitest";
import { connect } from "../../../src/index.js";
import { jetloopIn } from "../../harness/cli.js";
import { uniqueNamespace } from "../../harness/context.js";
import { defaultContext } from "../../harness/reliability/scenarios/common.js";
import { SHARDS, shardLeaderKillScenario } from "../../harness/reliability/scenarios/shard-leader-kill.js";
import { saveRecord } from "../../harness/reliability/save.js";

describe("reliability: one shard's leader killed mid-load (3 shards, R3 cluster)", () => {
  it("spreads the leaders; the other shards go on; nothing lost or duplicated in any shard", async () => {
    let cliVerify = "";
    const r = await shardLeaderKillScenario(defaultContext(), {
      eventsPerShard: 400,
      ratePerSec: 100,
      sessionsPerShard: 4,
      killAfter: 300,
      downMs: 2000,
      onProvisioned: async (servers, namespace) => {
        // --verify without --shards verifies the count the namespace has.
        const run = await jetloopIn(["provision", "--verify", "--server", servers.join(","), "--namespace", namespace]);
        expect(run).toMatchObject({ code: 0, stderr: "" });
        cliVerify = run.stdout;
        // More shards than servers: as even as the peers allow (2, 2, 1). R1 shards: each
        // where the server placed it, reported, nothing stepped down or refused.
        for (const [shards, replicas, loads] of [[5, 3, [1, 2, 2]], [3, 1, undefined]] as const) {
          const other = await connect({ servers, namespace: uniqueNamespace(), shards });
          try {
            const report = await other.provision({ replicas });
            const leaders = (report.shards ?? []).map((s) => s.leader ?? "");
            expect(leaders.every((l) => l !== "")).toBe(true);
            if (loads) expect([...new Set(leaders)].map((l) => leaders.filter((x) => x === l).length).sort()).toEqual(loads);
            const jsm = await other.jetstreamManager();
            for (const s of report.shards ?? []) await jsm.streams.delete(s.stream);
            await jsm.streams.delete(other.parked.stream);
          } finally {
            await other.close();
          }
        }
      },
    });
    saveRecord(r.record);

    // Leaders on three different servers, as provision and --verify (SDK and CLI) report them.
    const placed = (r.provisioned.shards ?? []).map((s) => s.leader);
    expect(new Set(placed).size).toBe(SHARDS);
    expect((r.verified.shards ?? []).map((s) => s.leader)).toEqual(placed);
    for (const s of r.verified.shards ?? []) expect(cliVerify).toContain(`stream ${s.stream}: unchanged, leader ${s.leader}`);

    expect(r.newLeader).not.toBe("");
    expect(r.newLeader).not.toBe(r.oldLeader);
    for (const s of r.shards) {
      expect(s.outcomes.filter((o) => o.status === "failed" && !o.typed)).toEqual([]);
      expect(s.republished.every((o) => o.status === "acked")).toBe(true);
      expect(s.journal).toMatchObject({ published: 400, lost: 0, duplicated: 0, unexpected: 0, messages: 400 });
      expect(s.live).toMatchObject({ lost: 0, duplicated: 0, unexpected: 0, outOfOrder: 0 });
      expect(s.replays).toMatchObject({ lost: 0, duplicated: 0, unexpected: 0, outOfOrder: 0 });
      // The shards whose leader lived kept being acknowledged while the victim acknowledged nothing.
      if (s.shard !== r.victim) expect(s.ackedDuringStall).toBeGreaterThan(0);
    }
    // Namespace-wide readers (every shard at once) through the kill: every event once, in
    // order per session, each delivery naming its session's shard; the live ones end at
    // every shard's last sequence, and one resumed from positions taken before the kill
    // gets exactly the rest. The gateway served one session of every shard: its SSE stream,
    // open across the kill, its journal page and its status, every event of the session.
    const exact = { lost: 0, duplicated: 0, unexpected: 0, outOfOrder: 0, wrongShard: 0 };
    expect(r.readers.loopFeed).toMatchObject({ published: 1200, ...exact });
    expect(r.readers.namespaceFeed).toMatchObject({ published: 1200, ...exact });
    expect(r.readers.resumed).toMatchObject(exact);
    expect(r.readers.resumed.published).toBeGreaterThan(0);
    expect(r.readers.positions).toEqual({ loopFeed: true, namespaceFeed: true, resumed: true });
    expect(r.readers.durable).toMatchObject({ published: 1200, ...exact });
    expect(r.readers.durableErr).toBeUndefined();
    expect(r.readers.gateway.sse).toMatchObject({ published: 3 * 100, ...exact });
    expect(r.readers.gateway.pages).toMatchObject({ published: 3 * 100, ...exact });
    expect(r.readers.gateway.statusRight).toBe(SHARDS);
    expect(r.stallMs).toBeGreaterThan(500);
    expect(r.replicasCurrent).toBe(true);
  }, 150_000);
});
