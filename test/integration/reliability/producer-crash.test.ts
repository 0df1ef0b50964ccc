// Scenario 11 (RELIABILITY.md): a producer SIGKILLed mid-publish and restarted after the
// stream's duplicate window resumes without storing anything twice or losing anything —
// unfenced through publishAll with resume, fenced by its expectedLastSeq chain.
import { describe, expect, it } from "vitest";
import { supports } from "../../../src/subjects/server-features.js";
import { natsServerFlavor, natsServers, natsServerVersion } from "../../harness/context.js";
import { defaultContext } from "../../harness/reliability/scenarios/common.js";
import { producerCrashScenario } from "../../harness/reliability/scenarios/producer-crash.js";
import { saveRecord } from "../../harness/reliability/save.js";

const FENCING = natsServerFlavor() === "external" || supports(natsServerVersion(), "fencing");

describe("reliability: a producer killed mid-publish, restarted after the duplicate window", () => {
  it("stores every event exactly once, fenced and unfenced", async () => {
    const modes = FENCING ? (["unfenced", "fenced"] as const) : (["unfenced"] as const);
    const r = await producerCrashScenario(defaultContext(), {
      servers: natsServers(),
      serverVersion: natsServerVersion(),
      events: 1500,
      killAfterStored: 300,
      duplicateWindow: "3s",
      windowMs: 3000,
      modes,
    });
    saveRecord(r.record);
    expect(r.runs.map((x) => x.mode)).toEqual([...modes]);
    for (const run of r.runs) {
      // Killed mid-publish: some were stored, not all; the restart came after the window.
      expect(run.storedAtKill, run.mode).toBeGreaterThanOrEqual(300);
      expect(run.storedAtKill).toBeLessThan(1500);
      expect(run.restartAfterKillMs).toBeGreaterThan(3000);
      // The resumed run found what the first had stored (at least what the kill left).
      expect(run.foundStored).toBeGreaterThanOrEqual(run.storedAtKill);
      expect(run).toMatchObject({ published: 1500, stored: 1500, duplicated: 0, lost: 0 });
    }
  }, 120_000);
});
