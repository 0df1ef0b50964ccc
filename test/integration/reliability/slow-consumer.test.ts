// Scenario 5 (RELIABILITY.md): a slow consumer under a burst. Previews beyond the buffer
// are dropped and counted, journal events all arrive, the heap stays bounded.
import { describe, expect, it } from "vitest";
import { defaultContext } from "../../harness/reliability/scenarios/common.js";
import { slowConsumerScenario } from "../../harness/reliability/scenarios/slow-consumer.js";
import { saveRecord } from "../../harness/reliability/save.js";
import { MiB } from "../../harness/reliability/workload.js";

describe("reliability: a slow consumer under a burst", () => {
  it("counts every dropped preview, delivers every journal event, keeps the heap bounded", async () => {
    const r = await slowConsumerScenario(defaultContext(), { previews: 12_000, previewBytes: 400, journalEvents: 1500, ephemeralBuffer: 256, readDelayMs: 0 });
    saveRecord(r.record);

    expect(r.err).toBeUndefined();
    // Enduring: all delivered, once.
    expect(r.journal).toMatchObject({ published: 1500, delivered: 1500, lost: 0, duplicated: 0, unexpected: 0 });
    // Ephemeral: delivered or counted as dropped, nothing unaccounted for; the buffer bounded it.
    expect(r.previews.unaccounted).toBe(0);
    expect(r.previews.duplicated).toBe(0);
    expect(r.previews.unexpected).toBe(0);
    expect(r.previews.dropped).toBeGreaterThan(0);
    expect(r.previews.delivered).toBeLessThanOrEqual(256 + 64);
    expect(r.serverSlowConsumers).toBe(0);
    // Bounded memory: what the stalled subscription holds is a small fraction of the burst.
    expect(r.burstBytes).toBeGreaterThan(8 * MiB);
    expect(r.retainedDeltaBytes).toBeLessThan(16 * MiB);
    // Measured 4.9 MiB of a 9.9 MiB burst before 2026-12-01's wave, 5.05 after it, and 7.2 MiB
    // of a 19.2 MiB burst: what is held grows with the burst (not only the buffers), an open
    // question (closing note of that wave); the bound here is what it was measured to hold.
    expect(r.retainedDeltaBytes).toBeLessThan(r.burstBytes * 0.6);
  }, 90_000);
});
