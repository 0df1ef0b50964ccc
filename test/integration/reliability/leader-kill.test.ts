// Scenario 2 (RELIABILITY.md): a three-node cluster, replicas 3, the stream leader killed
// mid-load and brought back, on both server versions (a cluster, an election and a
// catch-up take 15-30 s on the CI machine, up to twice that with 2.10).
import { describe, it } from "vitest";
import { expectNothingLost } from "../../harness/reliability/expect-leader-kill.js";
import { defaultContext } from "../../harness/reliability/scenarios/common.js";
import { leaderKillScenario } from "../../harness/reliability/scenarios/leader-kill.js";
import { saveRecord } from "../../harness/reliability/save.js";

describe("reliability: the stream leader killed mid-load (R3 cluster)", () => {
  it("loses no acknowledged event and stores each exactly once", async () => {
    const r = await leaderKillScenario(defaultContext(), { events: 600, ratePerSec: 200, killAfter: 200, downMs: 2000 });
    saveRecord(r.record);

    expectNothingLost(r, 600);
  }, 150_000);
});
