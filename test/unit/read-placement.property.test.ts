// placeOnLeader's rule over every sequence of placements: a consumer is kept only where its
// counts are the stream's (no cluster, a stream of one replica, or the leader); every other
// is discarded; PLACEMENT_ATTEMPTS misplacements end in a typed error.
import fc from "fast-check";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { SubscriptionError } from "../../src/errors.js";
import { PLACEMENT_ATTEMPTS, placeOnLeader } from "../../src/subscribe/read-placement.js";

const node = fc.constantFrom("n1", "n2", "n3");
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
          { leader: () => Promise.resolve(creations[made - 1]!.leader), log },
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
    await expect(placeOnLeader(() => Promise.reject(refusal), (c) => Promise.resolve(void discarded.push(c)), { leader: () => Promise.resolve("n1"), log }, "a test read")).rejects.toBe(refusal);
    expect(discarded).toEqual([]);
  });

  it("discards the consumer it made when the leader cannot be read, and passes that refusal on", async () => {
    const refusal = new Error("stream info: permissions violation");
    const discarded: string[] = [];
    const made = { info: { name: "c1", cluster: { leader: "n2" } } };
    await expect(placeOnLeader(() => Promise.resolve(made), (c) => Promise.resolve(void discarded.push(c.info.name)), { leader: () => Promise.reject(refusal), log }, "a test read")).rejects.toBe(refusal);
    expect(discarded).toEqual(["c1"]);
  });
});
