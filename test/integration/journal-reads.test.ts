// The bus option journalReads: every journal read (replay, a feed subscription's history
// and gap repair, reconcile) gives the same deliveries by pull and by push, over generated
// ranges; a push read leaves no pull-side consumer to delete and delivers below the
// connection's own inbox prefix.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busContext } from "../../src/bus.js";
import { connect, createEvent, newId, type Jetloop, type JetloopEvent } from "../../src/index.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";
import { waitFor } from "../harness/async.js";

const SESSION = newId();
const LOOPS = [newId(), newId()];
const COUNT = 60;
const buses: Record<"pull" | "push", Jetloop> = {} as Record<"pull" | "push", Jetloop>;
const events: JetloopEvent[] = [];
let seqs: number[] = [];

const step = (loopId: string): JetloopEvent => createEvent("StepDone", { sessionId: SESSION, loopId, turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: "x" }] }] });

beforeAll(async () => {
  const namespace = uniqueNamespace();
  for (const mode of ["pull", "push"] as const) {
    buses[mode] = await connect({ servers: natsServers(), namespace, journalReads: mode, natsOptions: { inboxPrefix: `_INBOX_${mode}` } });
  }
  await buses.pull.provision();
  for (let i = 0; i < COUNT; i++) events.push(step(LOOPS[i % 2]!));
  seqs = (await buses.pull.publishAll(events)).map((r) => r.journalSeq);
});

afterAll(async () => {
  for (const b of Object.values(buses)) await b.close();
});

async function replayed(mode: "pull" | "push", fromSeq: number, toSeq: number, batch: number): Promise<number[]> {
  const got: number[] = [];
  for await (const d of buses[mode].session(SESSION).replay({ enduring: "all" }, { fromSeq, toSeq, batch })) got.push(d.journalSeq);
  return got;
}

describe("journalReads: pull and push read the same journal", () => {
  it("replay: the same deliveries for any range and batch", async () => {
    const first = seqs[0]!;
    const last = seqs[seqs.length - 1]!;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: first, max: last + 2 }), fc.integer({ min: 0, max: COUNT + 2 }), fc.integer({ min: 1, max: 40 }), async (from, span, batch) => {
        const to = from + span;
        const want = seqs.filter((s) => s >= from && s <= to);
        expect(await replayed("push", from, to, batch)).toEqual(want);
        expect(await replayed("pull", from, to, batch)).toEqual(want);
      }),
      { numRuns: 12 },
    );
  });

  it("a feed subscription's history, then the feed, then a repaired gap", async () => {
    const sub = await buses.push.session(SESSION).subscribeEvents({ enduring: "all" }, { start: "all" });
    const got: number[] = [];
    const reading = (async () => {
      for await (const d of sub) got.push(d.journalSeq);
    })();
    await waitFor("the history and the feed", () => got.length === COUNT, 15_000);
    expect(got).toEqual(seqs);
    // Past the seam: probes until one comes by the feed (the hook sees feed messages only).
    let seen = 0;
    let dropped = 0;
    let dropping = false;
    busContext(buses.push).feeds.testHooks.drop = () => {
      seen++;
      if (!dropping || dropped > 0) return false;
      dropped++;
      return true;
    };
    while (seen === 0) {
      const probe = step(LOOPS[0]!);
      seqs.push((await buses.pull.publish(probe)).journalSeq);
      events.push(probe);
      await waitFor("the probe", () => got.length === seqs.length, 15_000);
    }
    // The feed loses a message: the loop's next message shows the gap, read back by push.
    dropping = true;
    const more = [step(LOOPS[0]!), step(LOOPS[0]!)];
    const extra = (await buses.pull.publishAll(more)).map((r) => r.journalSeq);
    await waitFor("the repaired gap", () => got.length === seqs.length + 2, 15_000);
    busContext(buses.push).feeds.testHooks.drop = undefined;
    expect(got.slice(seqs.length)).toEqual(extra);
    // A message was dropped, yet both arrived in order: the gap was read back from the journal (by push: the bus's only way).
    expect(dropped).toBeGreaterThan(0);
    await sub.close();
    await reading;
    seqs.push(...extra);
    events.push(...more);
  });

  it("reconcile finds the stored events by push", async () => {
    const since = new Date(Date.now() - 60_000);
    const unknown = step(LOOPS[1]!);
    const found = await buses.push.storedEvents([...events.slice(0, 5), unknown], { since });
    expect([...found.keys()].sort()).toEqual(events.slice(0, 5).map((e) => (e as { eventId: string }).eventId).sort());
  });
});
