// Scenario 6 (RELIABILITY.md): bad input at every boundary gets a typed error or a
// report; nothing invalid is yielded; the process never crashes.
import { describe, expect, it } from "vitest";
import { natsServers, natsServerVersion } from "../../harness/context.js";
import { badInputScenario, isTypedPoison } from "../../harness/reliability/scenarios/bad-input.js";
import { defaultContext } from "../../harness/reliability/scenarios/common.js";
import { saveRecord } from "../../harness/reliability/save.js";

describe("reliability: bad input at every boundary", () => {
  it("reports every malformed message with a typed error, yields only valid events, refuses every bad call typed", async () => {
    const r = await badInputScenario(defaultContext(), { servers: natsServers(), serverVersion: natsServerVersion(), repeat: 12, validEvents: 150, seed: 20_251_130, capBytes: 65_536 });
    saveRecord(r.record);

    for (const [name, s] of [["ordered", r.ordered], ["durable", r.durable], ["replay", r.replay]] as const) {
      // Exactly the valid events (and the valid ones with a stripped extra key), once each.
      expect(s.t, name).toMatchObject({ lost: 0, duplicated: 0, unexpected: 0, published: 150 + r.strippedJournal });
      expect(s.poison.length, name).toBe(r.injectedJournal);
      expect(s.poison.every(isTypedPoison), name).toBe(true);
    }
    expect(r.live.t).toMatchObject({ lost: 0, duplicated: 0, unexpected: 0, published: 150 + r.strippedLive });
    expect(r.live.poison.length).toBe(r.injectedLive);
    expect(r.live.poison.every(isTypedPoison)).toBe(true);
    expect(r.live.poison.every((p) => p.kind === "poison" && p.journalSeq === 0)).toBe(true);
    // The subscriptions kept running.
    expect([r.ordered.err, r.durable.err, r.live.err]).toEqual([undefined, undefined, undefined]);
    // The durable terminated the poison: nothing waits for an ack, nothing was redelivered.
    expect(r.durable.ackPending).toBe(0);
    expect(r.durable.redelivered).toBe(0);
    // Nothing yielded carries a smuggled key or a secret.
    expect(r.leakyDeliveries).toBe(0);
    expect(r.logLines).toBeGreaterThan(0);
    expect(r.logSecretHits).toBe(0);
    // Every bad call: a typed error, never accepted, never untyped; no consumer left behind.
    expect(r.boundaries.length).toBeGreaterThan(150);
    expect(r.boundaries.filter((b) => b.outcome === "accepted" || b.outcome.startsWith("untyped"))).toEqual([]);
    expect(r.consumersAfter).toBe(r.consumersBefore);
    expect(r.crashes).toEqual({ uncaught: 0, unhandled: 0 });
  }, 90_000);
});
