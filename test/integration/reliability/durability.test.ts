// Scenario 8 (RELIABILITY.md): an acknowledged event survives a server crash (SIGKILL)
// with file storage, under the default fsync policy and with sync_interval: always; a
// memory-storage stream does not.
import { describe, expect, it } from "vitest";
import { defaultContext } from "../../harness/reliability/scenarios/common.js";
import { durabilityScenario } from "../../harness/reliability/scenarios/durability.js";
import { saveRecord } from "../../harness/reliability/save.js";

describe("reliability: server crash right after acks", () => {
  it("keeps every acknowledged event with file storage, with either sync setting", async () => {
    const r = await durabilityScenario(defaultContext(), { events: 3000, killAfter: 1500, concurrency: 256 });
    saveRecord(r.record);

    const [byDefault, always] = r.runs;
    // The settings took effect (read back from /varz).
    expect(byDefault).toMatchObject({ syncAlways: false, syncIntervalNs: 120e9 });
    expect(always).toMatchObject({ syncAlways: true });
    for (const run of r.runs) {
      expect(run.acked, run.setting).toBeGreaterThanOrEqual(1500);
      expect(run.lostAcked, run.setting).toBe(0);
      expect(run.survivedAcked, run.setting).toBe(run.acked);
      expect(run.duplicates, run.setting).toBe(0);
    }
    // Memory storage: acknowledged, and gone after the crash.
    expect(r.memory.published).toBeGreaterThan(0);
    expect(r.memory.survived).toBe(0);
  }, 90_000);
});
