// placeOnLeader's rule over every sequence of placements: a consumer is kept only where its
// counts are the stream's (no cluster, a stream of one replica, or the leader); every other
// is discarded; placementAttempts(peers) misplacements end in a typed error.
import fc from "fast-check";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { SubscriptionError } from "../../src/errors.js";
import { placeOnLeader, placementAttempts } from "../../src/journal/read-placement.js";

const node = fc.constantFrom("n1", "n2", "n3");
const PLACEMENT_ATTEMPTS = placementAttempts(3);
/** What one creation reports as its host (undefined: not clustered) and what the leader read says then. */
const creation = fc.record({ host: fc.option(node, { nil: undefined }), leader: fc.option(fc.oneof(node, fc.constant("")), { nil: undefined }) });
/** A creation on a replica: a host and a leader read naming another (or none yet). */
const misplaced = fc.tuple(node, fc.constantFrom("n1", "n2", "n3", "")).filter(([h, l]) => h !== l).map(([host, leader]) => ({ host, leader }));
/** Runs of misplacements of every length up to past the bound, then anything. */
const placements = fc
  .tuple(fc.array(misplaced, { maxLength: PLACEMENT_ATTEMPTS + 2 }), fc.array(creation, { minLength: PLACEMENT_ATTEMPTS + 2, maxLength: PLACEMENT_ATTEMPTS + 2 }))
  .map(([run, rest]) => [...run, ...rest]);
const log = pino({ level: "silent" });

describe("placeOnLeader", () => {
  it("keeps the first consumer whose counts are the stream's, discards each before it, refuses after the bound", async () => {
    await fc.assert(
      fc.asyncProperty(placements, async (creations) => {
        let made = 0;
        const discarded: number[] = [];
        const settled = await placeOnLeader(
          () => {
            const c = creations[made]!;
            made++;
            return Promise.resolve({ id: made, info: { name: `c${made}`, ...(c.host === undefined ? {} : { cluster: { leader: c.host } }) } });
          },
          (c) => Promise.resolve(void discarded.push(c.id)),
          { leader: () => Promise.resolve(((l) => (l === undefined ? undefined : { name: l, peers: 3 }))(creations[made - 1]!.leader)), log },
          "a test read",
        ).then(
          (c) => c,
          (e: unknown) => e,
        );
        const trusted = (c: (typeof creations)[number]) => c.host === undefined || c.leader === undefined || c.host === c.leader;
        const first = creations.findIndex(trusted);
        if (first >= 0 && first < PLACEMENT_ATTEMPTS) {
          expect(settled).toMatchObject({ id: first + 1 });
          expect(discarded).toEqual(Array.from({ length: first }, (_, i) => i + 1));
        } else {
          expect(settled).toBeInstanceOf(SubscriptionError);
          expect(discarded).toHaveLength(PLACEMENT_ATTEMPTS);
          expect(made).toBe(PLACEMENT_ATTEMPTS);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("passes a refusal of the creation on as it is, discarding nothing", async () => {
    const refusal = new Error("permissions violation");
    const discarded: unknown[] = [];
    await expect(placeOnLeader(() => Promise.reject(refusal), (c) => Promise.resolve(void discarded.push(c)), { leader: () => Promise.resolve({ name: "n1", peers: 3 }), log }, "a test read")).rejects.toBe(refusal);
    expect(discarded).toEqual([]);
  });

  it("fails a read on a healthy cluster at most once in 1e9 reads, for every replica count jetloop provisions (1-5)", async () => {
    // The server places each creation uniformly over the stream's online peers: a read that
    // gives up after k misplacements fails with probability (1 - 1/peers)^k. The bound must
    // take every run of misplacements shorter than that.
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 5 }), async (peers) => {
        const needed = Math.ceil(Math.log(1e-9) / Math.log(1 - 1 / peers));
        let made = 0;
        const kept = await placeOnLeader(
          () => Promise.resolve({ info: { name: `c${++made}`, cluster: { leader: made < needed ? "replica" : "leader" } } }),
          () => Promise.resolve(),
          { leader: () => Promise.resolve({ name: "leader", peers }), log },
          "a test read",
        );
        expect(kept.info.name).toBe(`c${needed}`);
        expect(placementAttempts(peers)).toBeGreaterThanOrEqual(needed);
      }),
      { numRuns: 20 },
    );
  });

  it("discards every consumer it created and does not return, also when reading the leader fails", async () => {
    // Each step: where the creation lands, and whether the leader read then answers or fails.
    const step = fc.record({ onLeader: fc.boolean(), leaderFails: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), async (steps) => {
        let made = 0;
        const discarded: string[] = [];
        const leaderRead = new Error("stream info timed out");
        const outcome = await placeOnLeader(
          () => {
            const s = steps[Math.min(made, steps.length - 1)]!;
            made++;
            return Promise.resolve({ info: { name: `c${made}`, cluster: { leader: s.onLeader ? "n1" : "n2" } } });
          },
          (c) => Promise.resolve(void discarded.push(c.info.name)),
          {
            leader: () => (steps[Math.min(made - 1, steps.length - 1)]!.leaderFails ? Promise.reject(leaderRead) : Promise.resolve({ name: "n1", peers: 3 })),
            log,
          },
          "a test read",
        ).then(
          (c) => c,
          (e: unknown) => e,
        );
        const created = Array.from({ length: made }, (_, i) => `c${i + 1}`);
        const kept = outcome instanceof Error ? [] : [(outcome as { info: { name: string } }).info.name];
        // Every creation is either handed to the read or discarded, exactly once.
        expect([...discarded, ...kept].sort()).toEqual(created.sort());
        if (outcome instanceof Error) expect(outcome === leaderRead || outcome instanceof SubscriptionError).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
