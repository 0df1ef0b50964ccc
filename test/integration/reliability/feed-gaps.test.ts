// Scenario 10 (RELIABILITY.md): gaps on the live feed — dropped by a test hook, a slow
// consumer cut off by the server, a cut connection — in both feed modes. Every viewer gets
// each of its events exactly once and no viewer holds a consumer while it follows; in
// namespace mode always in journal order, in loop mode except where the known limit applies.
import { describe, expect, it } from "vitest";
import { defaultContext } from "../../harness/reliability/scenarios/common.js";
import { feedGapsScenario } from "../../harness/reliability/scenarios/feed-gaps.js";
import { saveRecord } from "../../harness/reliability/save.js";

describe("reliability: gaps on the live feed", () => {
  it("closes every gap from the journal: each viewer gets each event once; in order in namespace mode", async () => {
    const r = await feedGapsScenario(defaultContext(), { events: 300, loops: 4, viewersPerLoop: 3, dropEvery: 7 });
    saveRecord(r.record);

    expect(r.consumersWhileFollowing).toEqual({ loop: 0, namespace: 0 });
    for (const p of r.phases) {
      expect(p, p.what).toMatchObject({ lost: 0, duplicated: 0, unexpected: 0, errors: 0 });
      expect(p.delivered, p.what).toBe(p.published);
      expect(p.published, p.what).toBeGreaterThan(0);
    }
    for (const mode of ["loop", "namespace"] as const) {
      const [hook, hookWide, slow, cut] = r.phases.filter((p) => p.mode === mode);
      // Each fault really happened, and was repaired from the journal.
      expect(hook!.dropped).toBeGreaterThan(0);
      expect(hook!.gapsClosed.gap).toBeGreaterThan(0);
      expect(slow!.slowConsumers).toBeGreaterThanOrEqual(1);
      expect(slow!.gapsClosed.reconnect).toBeGreaterThan(0);
      expect(cut!.gapsClosed.reconnect).toBeGreaterThan(0);
      for (const p of [hook!, slow!, cut!]) expect(p.outOfOrder, p.what).toBe(0);
      if (mode === "namespace") expect(hookWide!.outOfOrder, hookWide!.what).toBe(0);
      // Loop mode's known limit: a view over many subjects gets a missed event late (exactly once, above).
      else expect(hookWide!.outOfOrder, hookWide!.what).toBeGreaterThan(0);
    }
  }, 180_000);
});
