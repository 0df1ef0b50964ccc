// Scenario 14 (RELIABILITY.md): a partitioned durable group of three member processes,
// one SIGKILLed and one added mid-run. A smaller size than the 200 × 50 keeps the
// suite's time; `npm run reliability:soak -- --only partitioned-group` runs the full size (200 × 50).
import { describe, expect, it } from "vitest";
import { natsServers, natsServerVersion } from "../../harness/context.js";
import { defaultContext } from "../../harness/reliability/scenarios/common.js";
import { groupScenario } from "../../harness/reliability/scenarios/group.js";
import { saveRecord } from "../../harness/reliability/save.js";

const LEASE_MS = 1000;
const ACK_WAIT_MS = 1500;

describe("reliability: a partitioned durable group, a member SIGKILLed and one added", () => {
  it("keeps every session in journal order, loses nothing, and moves partitions within the lease", async () => {
    const r = await groupScenario(defaultContext(), {
      servers: natsServers(),
      serverVersion: natsServerVersion(),
      sessions: 60,
      eventsPerSession: 20,
      partitions: 12,
      maxDelayMs: 4,
      leaseMs: LEASE_MS,
      ackWaitMs: ACK_WAIT_MS,
    });
    saveRecord(r.record);
    expect(r.all).toMatchObject({ published: 1200, lost: 0, unexpected: 0 });
    expect(r.orderViolations).toBe(0);
    expect(r.addedHandled).toBeGreaterThan(0);
    expect(r.foreignDuplicates).toBe(0);
    // At most one unsettled delivery per partition the killed member owned.
    expect(r.duplicated).toBeLessThanOrEqual(r.killedOwned);
    // Stale after the lease, seen at the next check (a third of it), plus the new owner's start.
    expect(r.moveMs).toBeGreaterThan(0);
    expect(r.moveMs).toBeLessThan(LEASE_MS * 2 + 500);
  }, 240_000);
});
