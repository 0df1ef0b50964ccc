// The composite journal source over shards (src/subscribe/sharded-source.ts), from its
// start rule: a start that fails stops every part, and only once each part's own start has
// settled — a part still starting when another failed would otherwise finish starting after
// its stop and consume on with no reader (found by RELIABILITY.md scenario 2b: a durable
// reopened while one shard elected left running consumers on the healthy shards, which took
// their deliveries away from the subscription that opened afterwards).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ShardFilter } from "../../src/subscribe/filter.js";
import { ShardedSource, type ShardPart } from "../../src/subscribe/sharded-source.js";
import type { JournalShard } from "../../src/streams/shards.js";

interface PartPlan {
  readonly delayMs: number;
  readonly fails: boolean;
}

/** A part that starts after `delayMs` (or fails then), and records what happened to it in order. */
function plannedPart(plan: PartPlan, log: string[]): ShardPart {
  return {
    start: () =>
      new Promise<void>((resolve, reject) =>
        setTimeout(() => {
          log.push("start settled");
          if (plan.fails) reject(new Error("refused"));
          else resolve();
        }, plan.delayMs),
      ),
    update: () => Promise.resolve(),
    stop: () => {
      log.push("stop");
      return Promise.resolve();
    },
  };
}

const filterOf = (index: number): ShardFilter => ({ shard: { index } as JournalShard, journalSubjects: [], feedSubjects: [] });

describe("a sharded source's start", () => {
  it("fails as a whole: every part stopped, each after its own start settled; a start that succeeds stops nothing", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.record({ delayMs: fc.integer({ min: 0, max: 5 }), fails: fc.boolean() }), { minLength: 1, maxLength: 4 }), async (plans) => {
        const logs = plans.map(() => [] as string[]);
        const source = new ShardedSource(
          (f) => plannedPart(plans[f.shard.index]!, logs[f.shard.index]!),
          plans.map((_, i) => filterOf(i)),
          () => "all",
        );
        const failed = await source.start().then(
          () => false,
          () => true,
        );
        expect(failed).toBe(plans.some((p) => p.fails));
        for (const log of logs) expect(log).toEqual(failed ? ["start settled", "stop"] : ["start settled"]);
      }),
      { numRuns: 60 },
    );
  });
});
