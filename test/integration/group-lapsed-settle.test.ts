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
import { partitionOwner } from "../../src/subscribe/group/assignment.js";
import { natsServers } from "../harness/context.js";
import { uniqueNamespace } from "../harness/namespace.js";
import { sleep, waitFor } from "../harness/async.js";

const LEASE_MS = 600;
let bus: Jetloop;
let jsm: JetStreamManager;
const opened: { close(): Promise<unknown> }[] = [];

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("gl") });
  await bus.provision({ partitions: 1 });
  jsm = await jetstreamManager(bus.nc);
});
afterAll(async () => {
  for (const o of opened.reverse()) await o.close().catch(() => undefined);
  for (const s of [defaultPartitionedStreamName(bus.namespace), defaultMembersStreamName(bus.namespace), bus.stream, bus.parked.stream]) await jsm.streams.delete(s).catch(() => undefined);
  await bus.close();
});

function step(sessionId: string, n: number): JetloopEvent {
  return createEvent("StepDone", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: String(n) }] }] });
}

async function member(group: string, id: string): Promise<DurableSubscription<JetloopEvent>> {
  const sub = await bus.subscribeEvents({ enduring: "all" }, { durable: group, group: { leaseMs: LEASE_MS, member: id }, start: "new" });
  opened.push(sub);
  return sub;
}

/** A member id that wins the only partition over `other`. */
function winnerOver(other: string): string {
  for (let i = 0; ; i++) if (partitionOwner([other, `b${i}`], 0) === `b${i}`) return `b${i}`;
}

type Settle = "ack" | "nak" | "fail" | "term";

describe("a delivery held past its ack wait while its partition moved", () => {
  for (const how of ["ack", "nak", "fail", "term"] as const satisfies readonly Settle[]) {
    it(`the old holder's late ${how} does not release the session's next event to the new holder`, async () => {
      const group = `gl${newId().slice(-8)}`;
      const session = newId();
      const a = await member(group, "a");
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
      const b = await member(group, winnerOver("a"));
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
