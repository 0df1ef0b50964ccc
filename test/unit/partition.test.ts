// The session hash, the partition owner and the partitioned copy's origin: pure rules.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fnv1a32, MAX_PARTITIONS, sessionPartition } from "../../src/partition/partition.js";
import { ownedPartitions, partitionOwner } from "../../src/group/assignment.js";
import { parseStreamSource, partitionedOrigin } from "../../src/group/origin.js";
import type { JsMsg } from "@nats-io/jetstream";
import { declaredPartitionedStreamConfig } from "../../src/streams/declared.js";
import { allShards, shardStreamName } from "../../src/streams/shards.js";
import { journalSubjectOfPartitioned, partitionFilter, partitionTransform } from "../../src/subjects/subjects.js";

const utf8 = (s: string) => new TextEncoder().encode(s);
const member = fc.stringMatching(/^[A-Za-z0-9_-]{1,16}$/);

describe("fnv1a32", () => {
  it("is Go's hash/fnv New32a (its published vectors)", () => {
    expect(fnv1a32(utf8(""))).toBe(0x811c9dc5);
    expect(fnv1a32(utf8("a"))).toBe(0xe40c292c);
    expect(fnv1a32(utf8("foobar"))).toBe(0xbf9cf968);
  });
  it("is an unsigned 32-bit value, and sessionPartition its remainder", () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 1, max: MAX_PARTITIONS }), (s, n) => {
        const h = fnv1a32(utf8(s));
        expect(Number.isInteger(h) && h >= 0 && h < 2 ** 32).toBe(true);
        expect(sessionPartition(s, n)).toBe(h % n);
      }),
    );
  });
  it("refuses a partition count outside 1..MAX_PARTITIONS", () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer({ max: 0 }), fc.integer({ min: MAX_PARTITIONS + 1 }), fc.double({ noInteger: true })), (n) => {
        expect(() => sessionPartition("s", n)).toThrow(expect.objectContaining({ code: "OPTIONS_INVALID" }));
      }),
    );
  });
});

describe("partition ownership", () => {
  it("gives every partition to exactly one live member, the same whatever the list's order", () => {
    fc.assert(
      fc.property(fc.uniqueArray(member, { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 64 }), (members, n) => {
        const shares = members.map((m) => ownedPartitions(members, m, n));
        expect(shares.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, p) => p));
        const reversed = [...members].reverse();
        for (let p = 0; p < n; p++) expect(partitionOwner(reversed, p)).toBe(partitionOwner(members, p));
      }),
    );
  });
  it("moves only the partitions of a member that leaves, and to one that joins only what it takes", () => {
    fc.assert(
      fc.property(fc.uniqueArray(member, { minLength: 2, maxLength: 8 }), fc.integer({ min: 1, max: 64 }), (members, n) => {
        const [gone, ...rest] = members as [string, ...string[]];
        for (let p = 0; p < n; p++) {
          const before = partitionOwner(members, p);
          const after = partitionOwner(rest, p);
          if (before !== gone) expect(after).toBe(before);
        }
      }),
    );
  });
});

describe("partitioned subjects", () => {
  const ns = "acme.prod";
  it("a partition's filter of a journal filter maps back to the journal subject", () => {
    fc.assert(
      fc.property(fc.uuid(), fc.integer({ min: 0, max: 255 }), (session, p) => {
        const journal = `${ns}.journal.${session}._.x.Y`;
        const copy = partitionFilter(ns, p, journal);
        expect(copy).toBe(`${ns}.partition.${p}.${session}._.x.Y`);
        expect(journalSubjectOfPartitioned(ns, copy)).toEqual({ partition: p, subject: journal, shard: { index: 0, count: 1 } });
      }),
    );
    // Split in S shards: a copy goes back to its session's shard's journal subject, whichever shard's filter made it.
    fc.assert(
      fc.property(fc.uuid(), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 2, max: 64 }), (session, p, S) => {
        const shard = { index: sessionPartition(session, S), count: S };
        const journal = `${ns}.journal-${shard.index}-of-${S}.${session}._.x.Y`;
        const copy = partitionFilter(ns, p, journal);
        expect(copy).toBe(`${ns}.partition.${p}.${session}._.x.Y`);
        expect(journalSubjectOfPartitioned(ns, copy, (id) => ({ index: sessionPartition(id, S), count: S }))).toEqual({ partition: p, subject: journal, shard });
        expect(partitionFilter(ns, p, `${ns}.journal-${(shard.index + 1) % S}-of-${S}.*.*.>`)).toBe(`${ns}.partition.${p}.*.*.>`);
        expect(partitionTransform(ns, 16, shard).src).toBe(`${ns}.journal-${shard.index}-of-${S}.*.>`);
      }),
    );
    // A split namespace's copy with no session id in its place has no shard, so no journal subject.
    expect(journalSubjectOfPartitioned(ns, `${ns}.partition.1.*.x`, () => ({ index: 0, count: 3 }))).toBeUndefined();
    expect(() => partitionFilter(ns, 1, `${ns}.feed.a.b`)).toThrow();
    expect(partitionTransform(ns, 16)).toEqual({ src: `${ns}.journal.*.>`, dest: `${ns}.partition.{{partition(16,1)}}.{{wildcard(1)}}.>` });
  });
  it("anything else is not a partitioned copy", () => {
    for (const s of [`${ns}.journal.a.b`, `${ns}.partition.x.a`, `${ns}.partition.-1.a`, `${ns}.partition.3`, `other.partition.1.a`]) expect(journalSubjectOfPartitioned(ns, s)).toBeUndefined();
  });
});

describe("the declared partitioned stream over shards", () => {
  it("has one source per shard stream, each with its own root's transform; one never split has the one source it had", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1, max: 256 }), (S, n) => {
        const journals = allShards(S).map((shard) => ({ shard, stream: shardStreamName("acme_journal", shard) }));
        const config = declaredPartitionedStreamConfig({ namespace: "acme", stream: "acme_partitioned", replicas: 1, journals, partitions: n });
        expect(config.sources).toEqual(
          journals.map((j) => ({
            name: j.stream,
            subject_transforms: [{ src: S === 1 ? "acme.journal.*.>" : `acme.journal-${j.shard.index}-of-${S}.*.>`, dest: `acme.partition.{{partition(${n},1)}}.{{wildcard(1)}}.>` }],
          })),
        );
        expect(config.metadata).toEqual({ jetloop_partitions: String(n) });
        if (S === 1) expect(config.sources).toEqual([{ name: "acme_journal", subject_transforms: [{ src: "acme.journal.*.>", dest: `acme.partition.{{partition(${n},1)}}.{{wildcard(1)}}.>` }] }]);
      }),
      { numRuns: 50 },
    );
  });
});

describe("a partitioned copy's origin over shards", () => {
  const ns = "acme";
  const copy = (subject: string, source: string) => ({ subject, headers: { get: (k: string) => (k === "Nats-Stream-Source" ? source : "") } }) as unknown as JsMsg;
  it("is its session's shard's journal subject and sequence, only when the header names that shard's stream", () => {
    fc.assert(
      fc.property(fc.uuid(), fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 1e9 }), fc.nat(), (session, S, seq, other) => {
        const journals = Array.from({ length: S }, (_, k) => (S === 1 ? "acme_journal" : `acme_journal_${k}_of_${S}`));
        const k = sessionPartition(session, S);
        const p = sessionPartition(session, 4);
        const subject = `${ns}.partition.${p}.${session}._.step.StepDone`;
        const origin = partitionedOrigin(ns, journals, p);
        const root = S === 1 ? `${ns}.journal` : `${ns}.journal-${k}-of-${S}`;
        expect(origin(copy(subject, `${journals[k]} ${seq} > >`))).toEqual({ journalSeq: seq, subject: `${root}.${session}._.step.StepDone` });
        // Another shard's stream: its sequence is another event's.
        if (S > 1) expect(origin(copy(subject, `${journals[(k + 1 + (other % (S - 1))) % S]} ${seq} > >`))).toBeUndefined();
        // Another partition than the consumer's.
        expect(partitionedOrigin(ns, journals, p + 1)(copy(subject, `${journals[k]} ${seq} > >`))).toBeUndefined();
      }),
    );
  });
});

describe("Nats-Stream-Source", () => {
  it("reads the stream and sequence of the 2.10 and the 2.11+ forms", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9_-]{1,32}$/), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), fc.boolean(), (stream, seq, long) => {
        const value = `${stream} ${seq} a.journal.*.> a.partition.{{partition(4,1)}}.{{wildcard(1)}}.>${long ? " a.journal.s._.x.Y abc123" : ""}`;
        expect(parseStreamSource(value)).toEqual({ stream, seq });
        expect(parseStreamSource(value.replace(stream, `${stream}:hash`))).toEqual({ stream, seq });
      }),
    );
  });
  it("refuses a value without a positive integer sequence", () => {
    for (const v of ["", "J", "J 0 f t", "J -1 f t", "J 1.5 f t", "J x f t", "J 99999999999999999999 f t"]) expect(parseStreamSource(v)).toBeUndefined();
  });
});
