// Scenario 1 (RELIABILITY.md): a single server stopped and started on the same store
// while a producer appends and an ordered and a durable subscriber consume.
import { describe, expect, it } from "vitest";
import { defaultContext } from "../../harness/reliability/scenarios/common.js";
import { serverRestartScenario } from "../../harness/reliability/scenarios/server-restart.js";
import { saveRecord } from "../../harness/reliability/save.js";

describe("reliability: a server restart under load", () => {
  it("loses no enduring event: the stream and the live subscriber hold each once, the durable one each at least once", async () => {
    const r = await serverRestartScenario(defaultContext(), { events: 600, ratePerSec: 150, restartAfter: 200, downMs: 1000 });
    saveRecord(r.record);

    // Every append settled; none with an untyped error; failures (if any) were republished.
    expect(r.outcomes).toHaveLength(600);
    expect(r.outcomes.filter((o) => o.status === "failed" && !o.typed)).toEqual([]);
    expect(r.republished.every((o) => o.status === "acked")).toBe(true);
    // No append outlasts the outage by much: each retries until the server is back (an
    // append once waited out a 5 s stream lookup instead, in about one run in five).
    expect(Math.max(...r.outcomes.map((o) => o.ms))).toBeLessThan(1000 + 2500);
    // The journal: each published event exactly once.
    expect(r.journal).toMatchObject({ published: 600, lost: 0, duplicated: 0, unexpected: 0, messages: 600 });
    // Ordered: no gap, no duplicate, across the restart.
    expect(r.ordered).toMatchObject({ lost: 0, duplicated: 0, unexpected: 0 });
    expect(r.orderedErr).toBeUndefined();
    // The same in namespace feed mode, and in journal order.
    expect(r.namespaceFeed).toMatchObject({ lost: 0, duplicated: 0, unexpected: 0, outOfOrder: 0 });
    // Durable: at least once; deduplicated by event id it is exactly the published set.
    expect(r.durable).toMatchObject({ lost: 0, unexpected: 0 });
    expect(r.durable.delivered - r.durable.duplicated).toBe(600);
    expect(r.durableErr).toBeUndefined();
  }, 120_000);
});
