// Scenario 9 (RELIABILITY.md): failing durable handlers park their events, a process killed
// between parking and terminating loses nothing, two processes share the durable, and
// replay sends each parked event back exactly once (redeliveries counted apart).
import { describe, expect, it } from "vitest";
import { natsServers, natsServerVersion } from "../../harness/context.js";
import { defaultContext } from "../../harness/reliability/scenarios/common.js";
import { parkingScenario } from "../../harness/reliability/scenarios/parking.js";
import { saveRecord } from "../../harness/reliability/save.js";

describe("reliability: parking and replay across processes", () => {
  it("parks each failing event once, survives a SIGKILL between parking and terminating, and replays each exactly once (redeliveries counted apart)", async () => {
    const o = { servers: natsServers(), serverVersion: natsServerVersion(), events: 120, failEvery: 8, maxDeliver: 3, backoffMs: 200 };
    const r = await parkingScenario(defaultContext(), o);
    saveRecord(r.record);

    // The killed process parked one event and died before terminating it.
    expect(r.killedAt).toBeGreaterThan(0);
    expect(r.failingSeqs).toContain(r.killedAt);
    expect(r.killed.parked).toEqual([]); // it never got to report (the report follows the term)
    // The original was not terminated: it came again and was parked again, without a handler.
    expect(r.first.parked.filter((p) => p.seq === r.killedAt).map((p) => p.code)).toEqual(["NOT_SETTLED"]);
    expect(r.first.handed.filter((h) => h.seq === r.killedAt).length).toBeLessThanOrEqual(o.maxDeliver);
    // Every failing event parked exactly once, none of the others.
    expect(r.parkedAfterFirstPass).toEqual(r.failingSeqs);
    for (const s of r.failingSeqs) expect(r.first.handed.filter((h) => h.seq === s).length).toBeLessThanOrEqual(o.maxDeliver);
    // Replay: each parked event sent back exactly once (one first hand-over each) and
    // acknowledged; what came again is the server's redelivery (delivery count above 1),
    // counted separately: delivery is at least once. Nothing left.
    expect(r.replayedFirst).toMatchObject({ published: r.failingSeqs.length, lost: 0, duplicated: 0, unexpected: 0 });
    expect(r.replayed).toMatchObject({ published: r.failingSeqs.length, lost: 0, duplicated: r.replayRedelivered, unexpected: 0 });
    expect(r.replay.acked.filter((x) => !x.replayed)).toEqual([]);
    expect(r.parkedAtEnd).toBe(0);
    expect(r.pendingAtEnd).toBe(0);
    // Nothing lost overall; what came twice is what a killed process handled but did not acknowledge.
    expect(r.all).toMatchObject({ published: o.events, lost: 0, unexpected: 0 });
  }, 180_000);
});
