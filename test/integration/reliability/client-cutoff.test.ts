// Scenario 3 (RELIABILITY.md): a client cut off by a server frozen with SIGSTOP past the
// client's ping interval, then resumed.
import { describe, expect, it } from "vitest";
import { defaultContext } from "../../harness/reliability/scenarios/common.js";
import { clientCutoffScenario } from "../../harness/reliability/scenarios/client-cutoff.js";
import { saveRecord } from "../../harness/reliability/save.js";

describe("reliability: a client cut off (SIGSTOP) and resumed", () => {
  it("settles every in-flight append once or with a typed error, never silently; subscribers resume", async () => {
    const r = await clientCutoffScenario(defaultContext(), {
      events: 800,
      ratePerSec: 100,
      pauseAfter: 150,
      pauseMs: 4000,
      pingIntervalMs: 500,
      maxPingOut: 2,
      publishDeadlineMs: 2500,
    });
    saveRecord(r.record);

    // Nothing vanished: every append settled by its deadline, as an ack or a typed error.
    expect(r.unsettledAtDeadline).toBe(0);
    expect(r.outcomes).toHaveLength(800);
    expect(r.outcomes.filter((o) => o.status === "failed" && !o.typed)).toEqual([]);
    for (const o of r.outcomes) if (o.status === "failed") expect(o.code).toMatch(/^(PUBLISH_TIMEOUT|CONNECTION_CLOSED)$/);
    // The client noticed the cut and came back.
    expect(r.disconnects).toBeGreaterThanOrEqual(1);
    expect(r.reconnects).toBeGreaterThanOrEqual(1);
    // Acked once: the stream holds the published set exactly once (failed ones republished).
    expect(r.republished.every((o) => o.status === "acked")).toBe(true);
    expect(r.journal).toMatchObject({ published: 800, lost: 0, duplicated: 0, unexpected: 0, messages: 800 });
    // The subscriber resumed: everything, including what was appended after the resume.
    expect(r.ordered).toMatchObject({ lost: 0, duplicated: 0, unexpected: 0 });
    expect(r.appendedAfterResume).toBeGreaterThan(0);
    expect(r.orderedAfterResume).toBe(r.appendedAfterResume);
    expect(r.orderedErr).toBeUndefined();
  }, 120_000);
});
