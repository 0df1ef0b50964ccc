// Scenario 4 (RELIABILITY.md): a durable consumer process killed with SIGKILL mid-batch
// and started again resumes from its ack floor; nothing is lost.
import { describe, expect, it } from "vitest";
import { natsServers, natsServerVersion } from "../../harness/context.js";
import { defaultContext } from "../../harness/reliability/scenarios/common.js";
import { consumerCrashScenario } from "../../harness/reliability/scenarios/consumer-crash.js";
import { saveRecord } from "../../harness/reliability/save.js";

describe("reliability: a durable consumer process killed mid-batch", () => {
  it("resumes from its ack floor after a restart, and nothing is lost", async () => {
    const r = await consumerCrashScenario(defaultContext(), {
      servers: natsServers(),
      serverVersion: natsServerVersion(),
      events: 400,
      killAfter: 120,
      delayMs: 5,
      ackWaitMs: 2000,
    });
    saveRecord(r.record);

    // Killed mid-stream: it had recorded some, not all.
    expect(r.first.length).toBeGreaterThanOrEqual(120);
    expect(r.first.length).toBeLessThan(400);
    expect(r.ackFloorAtKill).toBeGreaterThan(0);
    // Resumed from the ack floor: nothing at or below it was delivered again.
    expect(r.belowFloor).toBe(0);
    expect(r.second.length).toBeGreaterThan(0);
    // Nothing lost; what came twice is only what was recorded but not acknowledged.
    expect(r.all).toMatchObject({ published: 400, lost: 0, unexpected: 0 });
    const acked = new Set(r.first.filter((x) => x.seq <= r.ackFloorAtKill).map((x) => x.id));
    expect(r.second.filter((x) => acked.has(x.id))).toEqual([]);
  }, 90_000);
});
