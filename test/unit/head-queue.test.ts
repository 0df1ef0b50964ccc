// The writer's head-indexed queue against a plain array, over generated runs of pushes,
// takes and take-alls with small compaction thresholds (so a run compacts many times):
// it hands out exactly what a FIFO would, and its array stays within what compaction bounds.
import fc from "fast-check";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { HeadQueue } from "../../src/publish/head-queue.js";

type Op = { push: number } | "shift" | "takeAll";

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.nat().map((n) => ({ push: n })) },
  { weight: 5, arbitrary: fc.constant("shift" as const) },
  { weight: 1, arbitrary: fc.constant("takeAll" as const) },
);

describe("HeadQueue", () => {
  it("is a FIFO whose array holds fewer than twice its items plus the compaction threshold", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(op, { maxLength: 300 }), (compactAt, ops) => {
        const q = new HeadQueue<number>(compactAt);
        const model: number[] = [];
        for (const o of ops) {
          if (o === "shift") expect(q.shift()).toBe(model.shift());
          else if (o === "takeAll") expect(q.takeAll()).toEqual(model.splice(0));
          else {
            q.push(o.push);
            model.push(o.push);
          }
          expect(q.size).toBe(model.length);
          expect(q.peek()).toBe(model[0]);
          expect([...q]).toEqual(model);
          // Taken slots left behind: fewer than the threshold, or fewer than the items left.
          expect(q.slots - q.size).toBeLessThan(Math.max(compactAt, q.size));
        }
      }),
    );
  });

  it("holds no slot once emptied, by takes or by takeAll", () => {
    const q = new HeadQueue<string>();
    for (const s of ["a", "b", "c"]) q.push(s);
    q.shift();
    q.shift();
    q.shift();
    expect(q.slots).toBe(0);
    q.push("d");
    expect(q.takeAll()).toEqual(["d"]);
    expect(q.slots).toBe(0);
    expect(q.shift()).toBeUndefined();
  });

  it("lets a taken item be collected while later ones are still queued", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const q = new HeadQueue<object>();
    let taken: WeakRef<object> | undefined;
    (() => {
      const item = {};
      taken = new WeakRef(item);
      q.push(item);
      q.push({});
      q.shift();
    })();
    // A WeakRef holds its target until the current job ends.
    await new Promise((r) => setImmediate(r));
    gc();
    expect(taken.deref()).toBeUndefined();
    expect(q.size).toBe(1);
  });
});
