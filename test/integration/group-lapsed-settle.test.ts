// A delivery whose ack wait ran out may already be in another member's hands (the server
// redelivered it there). Settling the old copy then must not settle the new one: the
// server takes an ack by stream sequence, so the old member's late ack would free the
// partition's one slot and hand the session's next event over while the new holder still
// handles the earlier one. Family: a move while a handler holds its delivery past the
// lease, for every way of settling the stale copy (ack, nak, fail, term).
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, newId, type DurableDelivery, type DurableSubscription, type Jetloop, type JetloopEvent } from "../../src/index.js";
import { defaultMembersStreamName, defaultPartitionedStreamName } from "../../src/streams/declared.js";
import { partitionOwner } from "../../src/group/assignment.js";
import { natsServers } from "../harness/context.js";
import { uniqueNamespace } from "../harness/namespace.js";
import { sleep, waitFor, within } from "../harness/async.js";
import { startProxy } from "../harness/proxy.js";

const LEASE_MS = 600;
let bus: Jetloop;
let jsm: JetStreamManager;
const opened: { close(): Promise<unknown> }[] = [];

const buses: Jetloop[] = [];

/** A bus on a namespace of its own with one partition: tests on separate ones share no stream, so they can run side by side. */
async function ownBus(): Promise<Jetloop> {
  const b = await connect({ servers: natsServers(), namespace: uniqueNamespace("gl") });
  buses.push(b);
  await b.provision({ partitions: 1 });
  return b;
}

beforeAll(async () => {
  bus = await ownBus();
  jsm = await jetstreamManager(bus.nc);
});
afterAll(async () => {
  for (const o of opened.reverse()) await o.close().catch(() => undefined);
  for (const b of buses) {
    for (const s of [defaultPartitionedStreamName(b.namespace), defaultMembersStreamName(b.namespace), b.stream, b.parked.stream]) await jsm.streams.delete(s).catch(() => undefined);
  }
  for (const b of buses.reverse()) await b.close();
});

function step(sessionId: string, n: number): JetloopEvent {
  return createEvent("StepDone", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: String(n) }] }] });
}

async function member(group: string, id: string, on: Jetloop = bus): Promise<DurableSubscription<JetloopEvent>> {
  const sub = await on.subscribeEvents({ enduring: "all" }, { durable: group, group: { leaseMs: LEASE_MS, member: id }, start: "new" });
  opened.push(sub);
  return sub;
}

/** A member id that wins the only partition over `other`. */
function winnerOver(other: string): string {
  for (let i = 0; ; i++) if (partitionOwner([other, `b${i}`], 0) === `b${i}`) return `b${i}`;
}

type Settle = "ack" | "nak" | "fail" | "term";

// Each test on its own namespace (ownBus): they wait on leases, not on the CPU, so they run side by side.
describe.concurrent("a delivery held past its ack wait while its partition moved", () => {
  for (const how of ["ack", "nak", "fail", "term"] as const satisfies readonly Settle[]) {
    it(`the old holder's late ${how} does not release the session's next event to the new holder`, async () => {
      const bus = await ownBus();
      const group = `gl${newId().slice(-8)}`;
      const session = newId();
      const a = await member(group, "a", bus);
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let aGot: DurableDelivery<JetloopEvent> | undefined;
      void (async () => {
        for await (const d of a) {
          aGot = d;
          await held; // longer than the lease: the partition moves meanwhile
          if (how === "ack") await d.ack().catch(() => undefined);
          else if (how === "nak") d.nak(0);
          else if (how === "fail") await d.fail(new Error("late"), 0);
          else d.term();
        }
      })();
      const first = await bus.publish(step(session, 0));
      await waitFor("a holds the first event", () => aGot?.journalSeq === first.journalSeq, 10_000, 20);
      await bus.publish(step(session, 1));

      // B takes the partition; A drains for a lease and gives up; the server hands the first event to B.
      const b = await member(group, winnerOver("a"), bus);
      const bGot: number[] = [];
      let bHolds: DurableDelivery<JetloopEvent> | undefined;
      let overtaken = false;
      void (async () => {
        for await (const d of b) {
          if (bHolds !== undefined) overtaken = true; // a second delivery while one is unsettled
          bGot.push(d.journalSeq);
          bHolds = d;
        }
      })();
      await waitFor("b is handed the first event again", () => bGot[0] === first.journalSeq, 15_000, 20);

      release(); // A settles its stale copy now
      await sleep(LEASE_MS * 2);
      expect(overtaken).toBe(false);
      expect(bGot).toEqual([first.journalSeq]);

      // B's own settlement is what lets the session go on.
      const held1 = bHolds!;
      bHolds = undefined;
      await held1.ack();
      await waitFor("b is handed the second event", () => bGot.length === 2, 10_000, 20);
      expect(overtaken).toBe(false);
    }, 40_000);
  }
});

describe("members started at the same instant", () => {
  for (const k of [2, 3, 4]) {
    it(`${k} members of a new group start together, and each session's events are handled in order, one at a time`, async () => {
      const group = `gs${newId().slice(-8)}`;
      const subs = await Promise.all(Array.from({ length: k }, (_, i) => member(group, `m${i}`)));
      const sessions = Array.from({ length: 6 }, () => newId());
      const handled = new Map<string, number[]>();
      const busy = new Set<string>();
      let overlap = 0;
      for (const sub of subs) {
        void (async () => {
          for await (const d of sub) {
            void (async () => {
              const s = d.event.sessionId;
              if (busy.has(s)) overlap++;
              busy.add(s);
              await sleep(Math.random() * 5);
              (handled.get(s) ?? handled.set(s, []).get(s)!).push(d.journalSeq);
              busy.delete(s);
              await d.ack();
            })();
          }
        })();
      }
      const published = new Map<string, number[]>();
      for (let i = 0; i < 5; i++) {
        for (const s of sessions) (published.get(s) ?? published.set(s, []).get(s)!).push((await bus.publish(step(s, i))).journalSeq);
      }
      await waitFor("every event handled", () => [...published.values()].flat().length <= [...handled.values()].flat().length, 20_000, 50);
      expect(overlap).toBe(0);
      for (const s of sessions) expect([...new Set(handled.get(s))]).toEqual(published.get(s));
    }, 40_000);
  }
});

describe("parked replay into a group", () => {
  it("a replayed entry waits for the partition's delivery in hand, and a live event for the replay in hand: one at a time", async () => {
    const group = `gr${newId().slice(-8)}`;
    const session = newId();
    const sub = await member(group, "solo");
    const inHand = new Set<DurableDelivery<JetloopEvent>>();
    let overlap = 0;
    const seen: string[] = [];
    let releaseLive!: () => void;
    const liveHeld = new Promise<void>((r) => (releaseLive = r));
    void (async () => {
      for await (const d of sub) {
        if (inHand.size > 0) overlap++;
        inHand.add(d);
        seen.push(`${d.replayed ? "replay" : "live"}:${d.journalSeq}`);
        void (async () => {
          if (!d.replayed && seen.length === 1) {
            inHand.delete(d);
            return d.term("parked by the test"); // the first event parks
          }
          if (!d.replayed) await liveHeld; // the next live event is held while the replay is asked for
          else await sleep(300);
          inHand.delete(d);
          await d.ack();
        })();
      }
    })();
    const first = await bus.publish(step(session, 0));
    await waitFor("the first event parked", async () => (await bus.parked.list(partitionDurableOf(group))).length === 1, 10_000, 50);
    const second = await bus.publish(step(session, 1));
    await waitFor("the second event in hand", () => seen.length === 2, 10_000, 20);
    await bus.parked.replay(partitionDurableOf(group), "all");
    // The replay has reached the member's process: its consumer on the parked store handed
    // it over (nothing pending, one delivered and unacknowledged). It must wait there while
    // the live event is in hand: yielded now, it would be in `seen` (and `overlap` counts one
    // yielded later while the live event is still held).
    await waitFor(
      "the replay handed to the member",
      async () => {
        const c = await jsm.consumers.info(bus.parked.stream, partitionDurableOf(group));
        return c.num_pending === 0 && c.num_ack_pending === 1;
      },
      10_000,
      20,
    );
    expect(seen, "the replay held while the live event is in hand").toHaveLength(2);
    const third = await bus.publish(step(session, 2));
    releaseLive();
    await waitFor("the replay and the third event handled", () => seen.length === 4 && inHand.size === 0, 15_000, 20);
    expect(overlap).toBe(0);
    expect(seen.slice(0, 2)).toEqual([`live:${first.journalSeq}`, `live:${second.journalSeq}`]);
    expect(new Set(seen.slice(2))).toEqual(new Set([`replay:${first.journalSeq}`, `live:${third.journalSeq}`]));
  }, 40_000);
});

/** The only partition's durable of `group` (this file's namespace has one partition). */
function partitionDurableOf(group: string): string {
  return `${group}_p0`;
}

// Each test on its own namespace (ownBus), side by side like the ones above.
describe.concurrent("a member cut off from the server while it holds a delivery", () => {
  for (const how of ["ack", "nak", "term"] as const) it(`its ${how}, sent when it reconnects, does not release the session's next event to the member that took the partition`, async () => {
    const bus = await ownBus();
    const group = `gc${newId().slice(-8)}`;
    const session = newId();
    const target = new URL(natsServers()[0]!.replace(/^nats:/, "http:"));
    const proxy = await startProxy(Number(target.port), target.hostname);
    // Reconnecting takes longer than the lease: the member looks dead meanwhile.
    const far = await connect({ servers: [proxy.url], namespace: bus.namespace, natsOptions: { reconnectTimeWait: LEASE_MS * 4, reconnectJitter: 0 } });
    try {
      const a = await far.subscribeEvents({ enduring: "all" }, { durable: group, group: { leaseMs: LEASE_MS, member: "a" }, start: "new" });
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let aGot: number | undefined;
      const aAck = (async () => {
        for await (const d of a) {
          aGot = d.journalSeq;
          await held;
          if (how === "nak") return d.nak(0);
          if (how === "term") return d.term();
          return d.ack().then(() => "acked", () => "refused");
        }
      })();
      const first = await bus.publish(step(session, 0));
      await waitFor("a holds the first event", () => aGot === first.journalSeq, 10_000, 20);
      await bus.publish(step(session, 1));
      let aReconnected = false;
      void (async () => {
        for await (const st of far.nc.status()) if (st.type === "reconnect") aReconnected = true;
      })();
      proxy.cut();
      const b = await member(group, winnerOver("a"), bus);
      const bGot: number[] = [];
      let overtaken = false;
      void (async () => {
        for await (const d of b) {
          if (bGot.length > 0) overtaken = true; // b never settles what it holds
          bGot.push(d.journalSeq);
        }
      })();
      await waitFor("b is handed the first event again", () => bGot[0] === first.journalSeq, 15_000, 20);
      release(); // a settles while cut off: the ack goes out when it reconnects
      await within(aAck, 15_000, "timeout");
      await waitFor("a reconnects", () => !far.nc.isClosed() && far.nc.info !== undefined && aReconnected, 15_000, 20);
      await sleep(LEASE_MS * 2);
      expect(overtaken).toBe(false);
      expect(bGot).toEqual([first.journalSeq]);
      await a.close();
    } finally {
      await far.close();
      await proxy.close();
    }
  }, 40_000);
});

describe("a delivery held past autoExtendMs by the partition's only member", () => {
  it("its redelivery waits for the held copy, whose late ack is refused; then the session goes on in order", async () => {
    const group = `ge${newId().slice(-8)}`;
    const session = newId();
    // Extensions stop after 200 ms: the server hands the event again about a lease later.
    const sub = await bus.subscribeEvents({ enduring: "all" }, { durable: group, group: { leaseMs: LEASE_MS, member: "solo" }, autoExtendMs: 200, start: "new" });
    opened.push(sub);
    const handed: string[] = [];
    const inHand = new Set<DurableDelivery<JetloopEvent>>();
    let overlap = 0;
    const acks: string[] = [];
    void (async () => {
      for await (const d of sub) {
        if (inHand.size > 0) overlap++;
        inHand.add(d);
        handed.push(`${d.journalSeq}/${d.deliveryCount}`);
        void (async () => {
          if (d.deliveryCount === 1 && handed.length === 1) await sleep(LEASE_MS * 3); // past its ack wait
          inHand.delete(d);
          acks.push(await d.ack().then(() => "acked", () => "refused"));
        })();
      }
    })();
    const first = await bus.publish(step(session, 0));
    const second = await bus.publish(step(session, 1));
    await waitFor("both events handled", () => acks.filter((a) => a === "acked").length === 2, 20_000, 20);
    expect(overlap).toBe(0);
    expect(acks[0]).toBe("refused");
    // The first event's copies, one after the other (a copy that waited past autoExtendMs lapses too), then the second.
    const copies = handed.slice(0, -1);
    expect(copies.length).toBeGreaterThanOrEqual(2);
    expect(copies).toEqual(copies.map((_, i) => `${first.journalSeq}/${i + 1}`));
    expect(handed.at(-1)).toBe(`${second.journalSeq}/1`);
  }, 40_000);
});

describe("a partition moved while a replayed entry is in hand", () => {
  it("a live event delivered while the replay is in hand waits for it, and the old owner's drain waits for both", async () => {
    const group = `gm${newId().slice(-8)}`;
    const session = newId();
    const a = await member(group, "a");
    const events: string[] = [];
    let aReplay: DurableDelivery<JetloopEvent> | undefined;
    void (async () => {
      for await (const d of a) {
        if (!d.replayed && aReplay === undefined) {
          d.term("parked by the test");
          continue;
        }
        if (!d.replayed) {
          events.push("a:live");
          await d.ack();
          continue;
        }
        aReplay = d;
        events.push("a:replay");
        await sleep(LEASE_MS / 2); // within the drain's wait
        events.push("a:replay-settled");
        await d.ack();
      }
    })();
    await bus.publish(step(session, 0));
    await waitFor("the first event parked", async () => (await bus.parked.list(partitionDurableOf(group))).length === 1, 10_000, 50);
    await bus.parked.replay(partitionDurableOf(group), "all");
    await waitFor("a holds the replay", () => aReplay !== undefined, 10_000, 20);
    await bus.publish(step(session, 1));
    const b = await member(group, winnerOver("a"));
    void (async () => {
      for await (const d of b) {
        events.push(`b:${d.replayed ? "replay" : "live"}`);
        await d.ack();
      }
    })();
    // The old owner may hand the next event itself before it lets go, after the replay.
    await waitFor("the next event handled", () => events.some((e) => e.endsWith(":live")), 15_000, 20);
    expect(events.slice(0, 2)).toEqual(["a:replay", "a:replay-settled"]);
    expect(events.slice(2)).toHaveLength(1);
  }, 40_000);
});

describe("a partition given away while its replayed entry is in hand", () => {
  it("the old owner keeps extending the replay while it drains, so its ack within the drain is taken and the entry is not handed again", async () => {
    const group = `gd${newId().slice(-8)}`;
    const session = newId();
    const a = await member(group, "a");
    let aReplay: DurableDelivery<JetloopEvent> | undefined;
    let aAck: Promise<string> | undefined;
    let goAhead!: () => void;
    const moved = new Promise<void>((r) => (goAhead = r));
    void (async () => {
      for await (const d of a) {
        if (!d.replayed) {
          d.term("parked by the test");
          continue;
        }
        aReplay = d;
        aAck = moved.then(() => sleep((LEASE_MS * 5) / 6)).then(() => d.ack().then(() => "acked", () => "refused"));
      }
    })();
    await bus.publish(step(session, 0));
    await waitFor("the first event parked", async () => (await bus.parked.list(partitionDurableOf(group))).length === 1, 10_000, 50);
    await bus.parked.replay(partitionDurableOf(group), "all");
    await waitFor("a holds the replay", () => aReplay !== undefined, 10_000, 20);
    const b = await member(group, winnerOver("a"));
    const bReplays: number[] = [];
    void (async () => {
      for await (const d of b) {
        if (d.replayed) bReplays.push(d.journalSeq);
        await d.ack();
      }
    })();
    await waitFor("a gave the partition away", () => a.group()!.owned.length === 0, 10_000, 5);
    goAhead(); // a settles past two thirds of the ack wait after it began to drain, within the drain
    expect(await aAck).toBe("acked");
    await sleep(LEASE_MS * 2);
    expect(bReplays).toEqual([]);
    expect(await bus.parked.list(partitionDurableOf(group))).toEqual([]);
  }, 40_000);
});

describe("a member cut off after the server sent it a delivery, before it read it", () => {
  it("reads the copy after it could not prove itself live: its handler does not run, nothing of it is settled, the new owner keeps the session in order", async () => {
    const group = `gu${newId().slice(-8)}`;
    const session = newId();
    const target = new URL(natsServers()[0]!.replace(/^nats:/, "http:"));
    const proxy = await startProxy(Number(target.port), target.hostname);
    const far = await connect({ servers: [proxy.url], namespace: bus.namespace });
    try {
      const a = await far.subscribeEvents({ enduring: "all" }, { durable: group, group: { leaseMs: LEASE_MS, member: "a" }, start: "new" });
      const aGot: number[] = [];
      void (async () => {
        for await (const d of a) {
          aGot.push(d.journalSeq);
          await d.ack().catch(() => undefined);
        }
      })();
      const warm = await bus.publish(step(session, 0));
      await waitFor("a handles the first event", () => aGot.includes(warm.journalSeq), 10_000, 20);
      await sleep(50); // a's next pull request is out
      proxy.pause(); // what the server sends a now waits unread
      const stale = await bus.publish(step(session, 1));
      const b = await member(group, winnerOver("a"));
      const bGot: number[] = [];
      const bHeld: DurableDelivery<JetloopEvent>[] = [];
      void (async () => {
        for await (const d of b) {
          bGot.push(d.journalSeq);
          bHeld.push(d);
        }
      })();
      // After a's ack wait the server hands the copy to b, which holds it.
      await waitFor("b holds the event a was sent", () => bGot[0] === stale.journalSeq, 15_000, 20);
      const next = await bus.publish(step(session, 2));
      proxy.resume(); // a reads its copy now
      await sleep(LEASE_MS * 2);
      expect(aGot).toEqual([warm.journalSeq]); // a's handler never ran on the copy b holds
      expect(bGot).toEqual([stale.journalSeq]); // nothing of a's released the session's next event
      await bHeld[0]!.ack();
      await waitFor("the next event comes once the held one is settled", () => bGot.length === 2, 10_000, 20);
      expect(bGot).toEqual([stale.journalSeq, next.journalSeq]);
      await bHeld[1]!.ack();
      await a.close();
    } finally {
      await far.close();
      await proxy.close();
    }
  }, 40_000);
});
