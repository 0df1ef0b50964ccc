// The session hash (src/partition/partition.ts) against the server's own partition()
// subject mapping: for random session tokens and partition counts, the partition the
// server stores a journal copy under is the one sessionPartition names.
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessionPartition } from "../../src/partition/partition.js";
import { journalSubjectOfPartitioned, partitionTransform } from "../../src/subjects/subjects.js";
import { closeTestConnections, connectTest } from "../harness/context.js";
import { uniqueNamespace } from "../harness/namespace.js";

let nc: NatsConnection;
let jsm: JetStreamManager;
const streams: string[] = [];

beforeAll(async () => {
  nc = await connectTest();
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  for (const s of streams) await jsm.streams.delete(s).catch(() => undefined);
  await closeTestConnections();
});

/** A session token as a subject carries it: UUIDs (jetloop's ids) and other tokens (a later shard's keys). */
const token = fc.oneof(
  fc.uuid(),
  fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/),
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 12 }).filter((s) => ![...s].some((c) => c <= " " || c === "\u007f" || ".*>".includes(c) || /\s/u.test(c))),
);

describe("the session hash is the server's partition()", () => {
  it("for random sessions and partition counts, as stored by a stream sourcing the journal with the transform", async () => {
    const ns = uniqueNamespace("p");
    const journal = `${ns}_j`;
    streams.push(journal);
    await jsm.streams.add({ name: journal, subjects: [`${ns}.journal.>`] });
    const js = jetstream(nc);
    const cases = fc.sample(fc.tuple(fc.integer({ min: 1, max: 256 }), fc.uniqueArray(token, { minLength: 50, maxLength: 120 })), { numRuns: 6 }); // the run's seed (JETLOOP_SEED, harness/property.ts), printed on failure
    let published = 0;
    for (const [n, sessions] of cases) {
      const copy = `${ns}_c${n}_${streams.length}`;
      streams.push(copy);
      const startSeq = published + 1;
      await jsm.streams.add({ name: copy, sources: [{ name: journal, opt_start_seq: startSeq, subject_transforms: [partitionTransform(ns, n)] }] });
      await Promise.all(sessions.map((s) => js.publish(`${ns}.journal.${s}._.x.Y`, "x")));
      published += sessions.length;
      const expected = new Map(sessions.map((s) => [s, sessionPartition(s, n)]));
      const c = await jsm.consumers.add(copy, { ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.All, mem_storage: true, inactive_threshold: 60e9 });
      const consumer = await jetstream(nc).consumers.get(copy, c.name);
      const seen = new Map<string, number>();
      while (seen.size < sessions.length) {
        const batch = await consumer.fetch({ max_messages: sessions.length, expires: 2000 });
        for await (const m of batch) {
          const at = journalSubjectOfPartitioned(ns, m.subject)!;
          seen.set(at.subject.split(".")[2]!, at.partition);
        }
      }
      expect(seen).toEqual(expected);
    }
  });
});
