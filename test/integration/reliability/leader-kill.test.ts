// Scenario 2 (RELIABILITY.md): a three-node cluster, replicas 3, the stream leader killed
// mid-load and brought back, on both server versions (a cluster, an election and a
// catch-up take 15-30 s on the CI machine, up to twice that with 2.10).
import { describe, expect, it } from "vitest";
import { defaultContext } from "../../harness/reliability/scenarios/common.js";
import { leaderKillScenario } from "../../harness/reliability/scenarios/leader-kill.js";
import { saveRecord } from "../../harness/reliability/save.js";

describe("reliability: the stream leader killed mid-load (R3 cluster)", () => {
  it("loses no acknowledged event and stores each exactly once", async () => {
    const r = await leaderKillScenario(defaultContext(), { events: 600, ratePerSec: 200, killAfter: 200, downMs: 2000 });
    saveRecord(r.record);

    expect(r.newLeader).not.toBe("");
    expect(r.newLeader).not.toBe(r.oldLeader);
    expect(r.outcomes.filter((o) => o.status === "failed" && !o.typed)).toEqual([]);
    expect(r.republished.every((o) => o.status === "acked")).toBe(true);
    // Every acknowledged event is stored, each exactly once: message count == published.
    const acked = new Set([...r.outcomes, ...r.republished].filter((o) => o.status === "acked").map((o) => o.eventId));
    expect(acked.size).toBe(600);
    expect(r.journal).toMatchObject({ published: 600, lost: 0, duplicated: 0, unexpected: 0, messages: 600 });
    expect(r.ordered).toMatchObject({ lost: 0, duplicated: 0, unexpected: 0 });
    expect(r.replicasCurrent).toBe(true);
  }, 150_000);
});
