// An event stored in a shard that is not its session's (a raw publish onto another shard's
// subjects), on a real nats-server with S = 3: every namespace-wide reader that reads that
// shard reports it as poison of that shard; none delivers it as the session's, none skips it
// silently. A position vector past a shard's end is refused.
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, newId, type Jetloop, type JetloopEvent, type SubscriptionReport } from "../../src/index.js";
import { sessionPartition } from "../../src/partition/partition.js";
import { connectTest, natsServers, uniqueNamespace } from "../harness/context.js";
import { rejection, waitFor } from "../harness/async.js";
import { OptionsError } from "../../src/errors.js";

const S = 3;

let nc: NatsConnection;
let jsm: JetStreamManager;
let bus: Jetloop;

const decided = (sessionId: string): JetloopEvent =>
  createEvent("PermissionDecided", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), toolExecutionId: newId(), effect: "approve" });

/** A session whose home shard is `k`. */
function sessionIn(k: number): string {
  for (;;) {
    const s = newId();
    if (sessionPartition(s, S) === k) return s;
  }
}

/** Publishes an event of `sessionId` (home shard 0) raw onto shard `k`'s subject: stored in shard k. */
async function misplace(sessionId: string, k: number): Promise<number> {
  const home = sessionPartition(sessionId, S);
  const [r] = await bus.publishAll([decided(sessionId)]);
  const stored = await jsm.streams.getMessage(`${bus.stream}_${home}_of_${S}`, { seq: r!.journalSeq });
  const subject = r!.subject.replace(`.journal-${home}-of-${S}.`, `.journal-${k}-of-${S}.`);
  const ack = await jetstream(nc).publish(subject, stored!.data);
  expect(ack.stream).toBe(`${bus.stream}_${k}_of_${S}`);
  return ack.seq;
}

beforeAll(async () => {
  nc = await connectTest();
  jsm = await jetstreamManager(nc);
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace(), shards: S, logger: pino({ level: "silent" }) });
  await bus.provision();
});

afterAll(async () => {
  for (let k = 0; k < S; k++) await jsm?.streams.delete(`${bus.stream}_${k}_of_${S}`).catch(() => undefined);
  await jsm?.streams.delete(bus.parked.stream).catch(() => undefined);
  await bus?.close();
  await nc?.close();
});

describe("an event stored in another shard than its session's", () => {
  for (const feed of ["loop", "namespace"] as const) {
    it(`a live namespace-wide feed subscription (${feed} mode) reports it as poison of that shard`, async () => {
      const reports: SubscriptionReport[] = [];
      const sub = await bus.subscribeEvents({ enduring: "all" }, { feed, onReport: (r) => reports.push(r) });
      try {
        const s = sessionIn(0);
        const before = await bus.publishAll([decided(s)]);
        const seq = await misplace(s, 1);
        const after = await bus.publishAll([decided(sessionIn(1)), decided(sessionIn(2))]);
        const got: number[] = [];
        const it = sub[Symbol.asyncIterator]();
        // the home event of s, the copy's source publish (home), then one in shard 1 and one in shard 2
        for (let i = 0; i < 4; i++) {
          const d = await it.next();
          expect(d.done).toBe(false);
          if (!d.done) {
            expect(d.value.shard).toBe(sessionPartition(d.value.event.sessionId, S));
            got.push(d.value.journalSeq);
          }
        }
        expect(got).toContain(before[0]!.journalSeq);
        expect(got).toContain(after[0]!.journalSeq);
        await waitFor("the misplaced event reported as poison of shard 1", () => reports.some((r) => r.kind === "poison" && r.shard === 1 && r.journalSeq === seq), 5_000);
      } finally {
        await sub.close();
      }
    }, 30_000);
  }
  it("a durable and a replay of every session report it as poison of the shard it is stored in (every pair of shards)", async () => {
    for (let home = 0; home < S; home++) {
      for (let k = 0; k < S; k++) {
        if (k === home) continue;
        const s = sessionIn(home);
        const seq = await misplace(s, k);
        const isIt = (r: SubscriptionReport) => r.kind === "poison" && r.shard === k && r.journalSeq === seq;
        const replayed: SubscriptionReport[] = [];
        const seen: string[] = [];
        for await (const d of bus.replay({ enduring: "all" }, { onReport: (r) => replayed.push(r) })) {
          expect(d.shard).toBe(sessionPartition(d.event.sessionId, S));
          seen.push(`${d.shard}:${d.journalSeq}`);
        }
        expect(seen).not.toContain(`${k}:${seq}`);
        // A journal sequence is its shard's: the replay's report names the shard as the subscriptions' do.
        expect(replayed.some(isIt)).toBe(true);
        const reports: SubscriptionReport[] = [];
        const durable = await bus.subscribeEvents({ enduring: "all" }, { durable: `d${newId().slice(0, 8)}`, start: "all", onReport: (r) => reports.push(r) });
        try {
          await waitFor("the durable's poison report", () => reports.some(isIt), 5_000);
        } finally {
          await durable.close();
        }
      }
    }
  }, 60_000);
});

describe("a position vector past a shard's end", () => {
  it("is refused by a subscription (feed or durable) and by a replay: it is no position this journal handed out", async () => {
    // Which shard is past its end, by how much, and the reader, generated.
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: S - 1 }), fc.integer({ min: 1, max: 1_000_000 }), fc.constantFrom("loop", "namespace", "durable", "replay"), async (k, ahead, reader) => {
        await bus.publishAll([0, 1, 2].map((j) => decided(sessionIn(j))));
        const ends = await Promise.all(Array.from({ length: S }, async (_, j) => (await jsm.streams.info(`${bus.stream}_${j}_of_${S}`)).state.last_seq));
        const after = ends.map((e, j) => (j === k ? e + ahead : e));
        const open = async () => {
          if (reader === "replay") {
            for await (const _ of bus.replay({ enduring: "all" }, { after })) void _;
            return;
          }
          const sub = await bus.subscribeEvents({ enduring: "all" }, reader === "durable" ? { durable: `d${newId().slice(0, 8)}`, start: { after } } : { feed: reader, start: { after } });
          await sub.close();
        };
        const e = await rejection(open());
        expect(e).toBeInstanceOf(OptionsError);
        expect((e as Error).message).toMatch(/past the end of journal shard/);
      }),
      { numRuns: 12 },
    );
  }, 60_000);
});

describe("a parked selection naming a shard the namespace does not have", () => {
  it("is refused by show, replay and drop (OptionsError), not read as selecting nothing", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: S, max: 1000 }), fc.integer({ min: 1, max: 1_000_000 }), fc.constantFrom("show", "replay", "drop"), async (shard, seq, op) => {
        const durable = `d${newId().slice(0, 8)}`;
        const run = () =>
          op === "show" ? bus.parked.show(durable, seq, shard) : op === "replay" ? bus.parked.replay(durable, { seq, shard }) : bus.parked.drop(durable, { seq, shard });
        const e = await rejection(run());
        expect(e).toBeInstanceOf(OptionsError);
        expect((e as Error).message).toMatch(/shard index/);
      }),
      { numRuns: 12 },
    );
  });
});
