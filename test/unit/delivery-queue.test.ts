// DeliveryQueue: the bounded buffer between a subscription's sources and its reader.
import { describe, expect, it } from "vitest";
import { DeliveryQueue } from "../../src/sources/delivery-queue.js";

/** Lets pending promise callbacks run. */
const tick = () => new Promise<void>((r) => setImmediate(r));

/** Reads `n` items that are already available (or arrive soon). */
async function take<D>(q: DeliveryQueue<D>, n: number): Promise<D[]> {
  const out: D[] = [];
  for (let i = 0; i < n; i++) {
    const r = await q.next();
    if (r.done) break;
    out.push(r.value);
  }
  return out;
}

describe("DeliveryQueue", () => {
  it("keeps arrival order across enduring and ephemeral items", async () => {
    const q = new DeliveryQueue<string>(10, 10);
    await q.pushEnduring("e1");
    q.pushEphemeral("p1");
    q.pushEphemeral("p2");
    await q.pushEnduring("e2");
    q.pushEphemeral("p3");
    await q.pushEnduring("e3");
    await q.pushEnduring("e4");
    expect(await take(q, 7)).toEqual(["e1", "p1", "p2", "e2", "p3", "e3", "e4"]);
  });

  it("hands an item straight to a waiting reader, of either kind", async () => {
    const q = new DeliveryQueue<string>(1, 1);
    const first = q.next();
    q.pushEphemeral("p1");
    expect(await first).toEqual({ done: false, value: "p1" });
    const second = q.next();
    await q.pushEnduring("e1");
    expect(await second).toEqual({ done: false, value: "e1" });
    // A hand-over never occupies the buffer: both limits are still free.
    await q.pushEnduring("e2");
    expect(q.pushEphemeral("p2")).toBe(true);
    expect(await take(q, 2)).toEqual(["e2", "p2"]);
    expect(q.dropped).toBe(0);
  });

  it("drops the oldest ephemeral item when its buffer is full, and counts it", async () => {
    const q = new DeliveryQueue<string>(10, 3);
    expect(["p1", "p2", "p3"].map((p) => q.pushEphemeral(p))).toEqual([true, true, true]);
    expect(q.dropped).toBe(0);
    expect(q.pushEphemeral("p4")).toBe(false);
    expect(q.pushEphemeral("p5")).toBe(false);
    expect(q.dropped).toBe(2);
    expect(await take(q, 3)).toEqual(["p3", "p4", "p5"]);
    // Space again: no further drops.
    expect(q.pushEphemeral("p6")).toBe(true);
    expect(q.dropped).toBe(2);
    expect(await take(q, 1)).toEqual(["p6"]);
  });

  it("never drops an enduring item for an ephemeral one, and keeps order around the drops", async () => {
    const q = new DeliveryQueue<string>(10, 2);
    await q.pushEnduring("e1");
    q.pushEphemeral("p1");
    q.pushEphemeral("p2");
    await q.pushEnduring("e2");
    q.pushEphemeral("p3"); // drops p1
    q.pushEphemeral("p4"); // drops p2
    await q.pushEnduring("e3");
    expect(q.dropped).toBe(2);
    expect(await take(q, 5)).toEqual(["e1", "e2", "p3", "p4", "e3"]);
  });

  it("makes an enduring push wait while the buffer is full, and resumes it when the reader takes one", async () => {
    const q = new DeliveryQueue<number>(2, 10);
    await q.pushEnduring(1);
    await q.pushEnduring(2);
    let pushed3 = false;
    let pushed4 = false;
    const p3 = q.pushEnduring(3).then(() => (pushed3 = true));
    const p4 = p3.then(() => q.pushEnduring(4)).then(() => (pushed4 = true));
    await tick();
    await tick();
    expect(pushed3).toBe(false);
    expect(q.dropped).toBe(0);

    expect(await q.next()).toEqual({ done: false, value: 1 });
    await p3;
    expect(pushed3).toBe(true);
    await tick();
    expect(pushed4).toBe(false); // full again: 2, 3

    expect(await q.next()).toEqual({ done: false, value: 2 });
    await p4;
    expect(pushed4).toBe(true);
    expect(await take(q, 2)).toEqual([3, 4]);
    expect(q.dropped).toBe(0);
  });

  it("keeps every enduring item of a fast producer in order, however slow the reader", async () => {
    const q = new DeliveryQueue<number>(3, 1);
    const n = 200;
    const producer = (async () => {
      for (let i = 1; i <= n; i++) await q.pushEnduring(i);
      q.end();
    })();
    const got: number[] = [];
    for (;;) {
      const r = await q.next();
      if (r.done) break;
      got.push(r.value);
      if (got.length % 7 === 0) await tick();
    }
    await producer;
    expect(got).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    expect(q.dropped).toBe(0);
  });

  it("lets ephemeral items through while an enduring push waits", async () => {
    const q = new DeliveryQueue<string>(1, 5);
    await q.pushEnduring("e1");
    const waiting = q.pushEnduring("e2");
    expect(q.pushEphemeral("p1")).toBe(true);
    expect(await q.next()).toEqual({ done: false, value: "e1" });
    await waiting;
    // p1 was buffered before e2 got its place.
    expect(await take(q, 2)).toEqual(["p1", "e2"]);
  });

  it("end(): the reader drains what is buffered, then sees done (and keeps seeing it)", async () => {
    const q = new DeliveryQueue<string>(5, 5);
    await q.pushEnduring("e1");
    q.pushEphemeral("p1");
    q.end();
    expect(q.ended).toBe(true);
    expect(await q.next()).toEqual({ done: false, value: "e1" });
    expect(await q.next()).toEqual({ done: false, value: "p1" });
    expect(await q.next()).toEqual({ done: true, value: undefined });
    expect(await q.next()).toEqual({ done: true, value: undefined });
  });

  it("end() wakes a waiting reader with done", async () => {
    const q = new DeliveryQueue<string>(5, 5);
    const pending = q.next();
    q.end();
    expect(await pending).toEqual({ done: true, value: undefined });
  });

  it("end() releases a waiting enduring push, and ignores items pushed after it", async () => {
    const q = new DeliveryQueue<string>(1, 1);
    await q.pushEnduring("e1");
    const waiting = q.pushEnduring("e2");
    q.end();
    await waiting; // resolves instead of hanging
    await q.pushEnduring("e3");
    expect(q.pushEphemeral("p1")).toBe(true);
    expect(await take(q, 5)).toEqual(["e1"]);
    expect(q.dropped).toBe(0);
  });

  it("end(error): the reader drains what is buffered, then its next rejects with the first error", async () => {
    const q = new DeliveryQueue<string>(5, 5);
    await q.pushEnduring("e1");
    const first = new Error("first");
    q.end(first);
    q.end(new Error("second"));
    expect(await q.next()).toEqual({ done: false, value: "e1" });
    await expect(q.next()).rejects.toBe(first);
    await expect(q.next()).rejects.toBe(first);
  });

  it("end(error) rejects a waiting reader; clear() after it (a close) makes the reader just end", async () => {
    const q = new DeliveryQueue<string>(5, 5);
    const e = new Error("failed");
    const pending = q.next();
    q.end(e);
    await expect(pending).rejects.toBe(e);
    q.clear();
    expect(await q.next()).toEqual({ done: true, value: undefined });
  });

  it("counts what the reader took, handed over or buffered", async () => {
    const q = new DeliveryQueue<string>(5, 5);
    const pending = q.next();
    q.offerEnduring("e1");
    await pending;
    q.pushEphemeral("p1");
    await q.pushEnduring("e2");
    expect(q.taken).toBe(1);
    await take(q, 2);
    expect(q.taken).toBe(3);
  });

  it("clear() drops everything buffered (an intentional close)", async () => {
    const q = new DeliveryQueue<string>(5, 5);
    await q.pushEnduring("e1");
    q.pushEphemeral("p1");
    q.clear();
    q.end();
    expect(await q.next()).toEqual({ done: true, value: undefined });
  });
});
