// The composite journal source over shards (src/sources/sharded-source.ts), from its
// start rule: a start that fails stops every part, and only once each part's own start has
// settled — a part still starting when another failed would otherwise finish starting after
// its stop and consume on with no reader (found by RELIABILITY.md scenario 2b: a durable
// reopened while one shard elected left running consumers on the healthy shards, which took
// their deliveries away from the subscription that opened afterwards).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ShardFilter } from "../../src/sources/filter.js";
import { ShardedSource, type ShardPart } from "../../src/sources/sharded-source.js";
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
          { start: () => "all", subjects: (f) => f.journalSubjects, fail: () => undefined },
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

/** A part that records whether it runs and on which subjects; its start or an update fails as planned. */
class FakePart implements ShardPart {
  running = false;
  subjects: readonly string[];
  constructor(
    subjects: readonly string[],
    private readonly failsStart: boolean,
    private readonly failsUpdate: (to: readonly string[]) => boolean,
  ) {
    this.subjects = subjects;
  }
  async start(): Promise<void> {
    await new Promise((r) => setTimeout(r, 0));
    if (this.failsStart) throw new Error("start refused");
    this.running = true;
  }
  async update(to: readonly string[]): Promise<void> {
    await new Promise((r) => setTimeout(r, 0));
    if (this.failsUpdate(to)) throw new Error("update refused");
    this.subjects = to;
  }
  stop(): Promise<void> {
    this.running = false;
    return Promise.resolve();
  }
}

describe("a sharded source's update", () => {
  const shardSet = fc.uniqueArray(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 4 });
  it("is all or nothing: resolved, the new selection runs; rejected, the old one does; neither only when a part cannot go back, and then the subscription fails", async () => {
    await fc.assert(
      fc.asyncProperty(shardSet, shardSet, fc.array(fc.record({ failsStart: fc.boolean(), failsUpdate: fc.boolean(), failsBack: fc.boolean() }), { minLength: 4, maxLength: 4 }), async (before, after, plans) => {
        const parts = new Map<number, FakePart>();
        const filter = (index: number, v: string): ShardFilter => ({ shard: { index } as JournalShard, journalSubjects: [`${v}${index}`], feedSubjects: [] });
        let failed: Error | undefined;
        let starting = true;
        const source = new ShardedSource(
          (f) => {
            const plan = plans[f.shard.index]!;
            const part = new FakePart(f.journalSubjects, !starting && plan.failsStart, (to) => (to[0]!.startsWith("new") ? plan.failsUpdate : plan.failsBack));
            parts.set(f.shard.index, part);
            return part;
          },
          before.map((k) => filter(k, "old")),
          { start: () => "new", subjects: (f) => f.journalSubjects, fail: (e) => (failed = e) },
        );
        await source.start();
        starting = false;
        const ok = await source.updateShards(after.map((k) => filter(k, "new"))).then(
          () => true,
          () => false,
        );
        const running = [...parts.entries()].filter(([, p]) => p.running).map(([k, p]) => [k, p.subjects[0]] as const).sort((a, b) => a[0] - b[0]);
        const as = (ks: number[], v: string) => [...ks].sort((a, b) => a - b).map((k) => [k, `${v}${k}`] as const);
        if (ok) expect(running).toEqual(as(after, "new"));
        else if (failed === undefined) expect(running).toEqual(as(before, "old"));
        else expect(before.some((k) => after.includes(k) && plans[k]!.failsBack)).toBe(true);
        expect(source.shards.slice().sort()).toEqual((ok ? after : before).slice().sort());
      }),
      { numRuns: 200 },
    );
  });

  it("a stop during an update leaves no part running; the update rejects unless it was done first", async () => {
    for (let delay = 0; delay < 4; delay++) {
      const parts: FakePart[] = [];
      const source = new ShardedSource(
        (f) => {
          const p = new FakePart(f.journalSubjects, false, () => false);
          parts.push(p);
          return p;
        },
        [filterOf(0)],
        { start: () => "new", subjects: (f) => f.journalSubjects, fail: () => undefined },
      );
      await source.start();
      const update = source.updateShards([filterOf(0), filterOf(1), filterOf(2)]).then(
        () => "resolved",
        () => "rejected",
      );
      for (let i = 0; i < delay; i++) await new Promise((r) => setTimeout(r, 0));
      await source.stop();
      const outcome = await update;
      if (delay === 0) expect(outcome).toBe("rejected");
      expect(parts.map((p) => p.running)).toEqual(parts.map(() => false));
    }
  });
});
