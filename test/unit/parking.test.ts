// The pure parts of parking and lag: parked subjects, the entry's headers, retention
// warnings, the parked store's declared configuration, what a handler's error becomes.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  declaredParkedStreamConfig,
  defaultParkedStreamName,
  parkedFilter,
  parkedSubject,
  parseParkedSubject,
  retentionLimits,
  retentionWarnings,
  SubjectError,
} from "../../src/index.js";
import { errorText, MAX_ERROR_CHARS, parkHeaders, readParked, readParkedAt, type ParkInput } from "../../src/parking/parked-entry.js";
import { errorSummary } from "../../src/sources/durable-settlement.js";
import { parsePartitionDurable, partitionDurable } from "../../src/partition/partition-durable.js";
import { MAX_PARTITIONS } from "../../src/partition/partition.js";
import { parkedStreamSubjects, replayConsumerName, streamSubjects } from "../../src/subjects/subjects.js";

const HOUR = 3600e9;

describe("parked subjects of a namespace split in shards", () => {
  it("name the shard their journal sequence is of, and parse back; one never split keeps its form", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/), fc.constantFrom("held" as const, "replay" as const), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), fc.integer({ min: 1, max: 64 }), fc.nat(), (durable, state, seq, S, i) => {
        const shard = { index: i % S, count: S };
        const subject = parkedSubject("acme", durable, state, seq, shard);
        expect(subject).toBe(S === 1 ? `acme.parked.${durable}.${state}.${seq}` : `acme.parked.${durable}.${state}.journal-${shard.index}-of-${S}.${seq}`);
        expect(parseParkedSubject("acme", subject)).toEqual({ durable, state, shard, journalSeq: seq });
        // The shard's filter takes its own entries, not another shard's of the same sequence.
        const filter = parkedFilter("acme", durable, state, shard);
        expect(filter).toBe(S === 1 ? `acme.parked.${durable}.${state}.*` : `acme.parked.${durable}.${state}.journal-${shard.index}-of-${S}.*`);
        expect(parkedFilter("acme", durable, state)).toBe(`acme.parked.${durable}.${state}.>`);
        expect(replayConsumerName(durable, shard)).toBe(S === 1 ? durable : `${durable}_journal-${shard.index}-of-${S}`);
      }),
    );
  });

  it("an entry whose headers name another shard, durable or sequence than its subject is not an entry", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.nat(), fc.nat(), fc.integer({ min: 1, max: 1e6 }), (S, i, j, seq) => {
        const kept = { index: i % S, count: S };
        const named = { index: j % S, count: S };
        const root = named.count === 1 ? "acme.journal" : `acme.journal-${named.index}-of-${S}`;
        const p: ParkInput = { durable: "svc", journalSeq: seq, subject: `${root}.${crypto.randomUUID()}._.step.StepDone`, data: new Uint8Array([1]), deliveryCount: 1, reason: "terminated", errorCode: "TERMINATED", errorMessage: "x" };
        const h = parkHeaders(p, new Date());
        const e = readParkedAt("acme", parkedSubject("acme", "svc", "held", seq, kept), 7, h, p.data);
        if (kept.index === named.index) expect(e).toMatchObject({ shard: kept, journalSeq: seq, storeSeq: 7, state: "held" });
        else expect(e).toBeUndefined();
        expect(readParkedAt("acme", parkedSubject("acme", "other", "held", seq, named), 7, h, p.data)).toBeUndefined();
        expect(readParkedAt("acme", parkedSubject("acme", "svc", "held", seq + 1, named), 7, h, p.data)).toBeUndefined();
        expect(readParkedAt("acme", "acme.parked.svc.held.x", 7, h, p.data)).toBeUndefined();
      }),
    );
  });

  it("an entry of a namespace never split reads as before, whatever its subject header", () => {
    const p: ParkInput = { durable: "svc", journalSeq: 3, subject: "not.a.journal.subject", data: new Uint8Array([1]), deliveryCount: 1, reason: "poison", errorCode: "EVENT_DECODE", errorMessage: "x" };
    expect(readParkedAt("acme", "acme.parked.svc.held.3", 1, parkHeaders(p, new Date()), p.data)?.shard).toEqual({ index: 0, count: 1 });
    expect(readParkedAt("acme", "acme.parked.svc.held.journal-0-of-2.3", 1, parkHeaders(p, new Date()), p.data)).toBeUndefined();
  });
});

describe("parked subjects", () => {
  it("build and parse {ns}.parked.{durable}.{held|replay}.{journalSeq}", () => {
    expect(parkedSubject("acme.prod", "billing-v2", "held", 42)).toBe("acme.prod.parked.billing-v2.held.42");
    expect(parseParkedSubject("acme.prod", "acme.prod.parked.billing-v2.replay.42")).toEqual({ durable: "billing-v2", state: "replay", shard: { index: 0, count: 1 }, journalSeq: 42 });
    expect(parkedFilter("acme", "svc", "replay")).toBe("acme.parked.svc.replay.>");
    expect(parkedFilter("acme", "svc")).toBe("acme.parked.svc.*.>");
    expect(parkedFilter("acme")).toBe("acme.parked.*.*.>");
    expect(parkedStreamSubjects("acme")).toEqual(["acme.parked.>"]);
    // Disjoint from the journal: neither stream captures the other's subjects.
    expect(streamSubjects("acme")[0]!.startsWith("acme.parked")).toBe(false);
    expect(defaultParkedStreamName("acme.prod")).toBe("acme_prod_parked");
  });

  it.each([
    () => parkedSubject("acme", "a.b", "held", 1),
    () => parkedSubject("acme", "*", "held", 1),
    () => parkedSubject("acme", "svc", "held", 0),
    () => parkedSubject("acme", "svc", "held", 1.5),
    () => parkedSubject("acme", "svc", "gone" as "held", 1),
    () => parseParkedSubject("acme", "acme.parked.svc.held.x"),
    () => parseParkedSubject("acme", "acme.parked.svc.other.1"),
    () => parseParkedSubject("acme", "other.parked.svc.held.1"),
    () => parseParkedSubject("acme", "acme.parked.svc.held.1.2"),
    () => parseParkedSubject("acme", "acme.parked.svc.held.journal.2"),
    () => parseParkedSubject("acme", "acme.parked.svc.held.journal-3-of-3.2"),
    () => parseParkedSubject("acme", "acme.parked.svc.held.journal-0-of-1.2"),
    () => parseParkedSubject("acme", "acme.parked.svc.held.journal-0-of-3.02"),
    () => parseParkedSubject("acme", "acme.parked.svc.held.journal-0-of-3.2.3"),
  ])("refuses a bad token or shape (%#)", (f) => {
    expect(f).toThrow(SubjectError);
  });
});

describe("parked entries", () => {
  const input: ParkInput = {
    durable: "billing",
    journalSeq: 7,
    subject: "acme.journal.s.l.tool.PermissionDecided",
    data: new TextEncoder().encode("{}"),
    deliveryCount: 5,
    reason: "max_deliver",
    errorCode: "BACKEND_DOWN",
    errorMessage: "ledger offline",
  };

  it("round-trips through headers, the payload untouched", () => {
    const at = new Date("2026-01-02T03:04:05.678Z");
    const e = readParked("held", 99, parkHeaders(input, at), input.data);
    expect(e).toEqual({ ...input, state: "held", parkedAt: at, storeSeq: 99 });
  });

  it("keeps error text on one line and capped", () => {
    expect(errorText("a\r\nb\tc")).toBe("a b c");
    const long = errorText("x".repeat(5000));
    expect(long).toHaveLength(MAX_ERROR_CHARS);
    expect(long.endsWith("…")).toBe(true);
    const h = parkHeaders({ ...input, errorMessage: "line one\nline two" }, new Date());
    expect(readParked("held", 1, h, input.data)?.errorMessage).toBe("line one line two");
  });

  it("reads a message that is not an entry as undefined", () => {
    expect(readParked("held", 1, undefined, input.data)).toBeUndefined();
    const h = parkHeaders(input, new Date());
    h.set("Jetloop-Parked-Reason", "whim");
    expect(readParked("held", 1, h, input.data)).toBeUndefined();
  });

  it("summarises what a handler failed with: a stable code, else the error's name", () => {
    expect(errorSummary(Object.assign(new Error("x"), { code: "LEDGER" }))).toEqual({ code: "LEDGER", message: "x" });
    expect(errorSummary(new TypeError("y"))).toEqual({ code: "TypeError", message: "y" });
    expect(errorSummary("plain")).toEqual({ code: "HANDLER_FAILED", message: "plain" });
  });
});

describe("the parked store's declared configuration", () => {
  it("is file storage with its own limits, refuses rather than evicts, one entry per subject", () => {
    const c = declaredParkedStreamConfig({ namespace: "acme", stream: "acme_parked", replicas: 3 });
    expect(c).toMatchObject({
      name: "acme_parked",
      subjects: ["acme.parked.>"],
      storage: "file",
      retention: "limits",
      discard: "new",
      num_replicas: 3,
      max_age: 0,
      max_msgs_per_subject: 1,
      deny_delete: false,
    });
    expect(c.max_msgs as number).toBeGreaterThan(0);
    expect(JSON.stringify(c)).not.toContain("${");
  });
});

describe("retention warnings", () => {
  it("finds the limits that remove events, none for a kept journal", () => {
    expect(retentionLimits({ retention: "limits", max_age: 0, max_bytes: -1, max_msgs: -1, max_msgs_per_subject: -1 })).toEqual([]);
    expect(retentionLimits({ retention: "limits", max_age: 2160 * HOUR, max_bytes: 100, max_msgs: -1, max_msgs_per_subject: 3 })).toEqual([
      { field: "max_age", value: 2160 * HOUR },
      { field: "max_bytes", value: 100 },
      { field: "max_msgs_per_subject", value: 3 },
    ]);
  });

  it("warns for each durable with unacknowledged events on a stream with limits, and only then", () => {
    const durables = [
      { durable: "billing", unacknowledged: 12 },
      { durable: "audit", unacknowledged: 0 },
    ];
    expect(retentionWarnings("acme_journal", { max_age: 0 }, durables)).toEqual([]);
    expect(retentionWarnings("acme_journal", { max_age: 90 * 60e9 }, durables)).toEqual([
      {
        durable: "billing",
        unacknowledged: 12,
        limits: [{ field: "max_age", value: 90 * 60e9 }],
        message: "stream acme_journal has max_age 90m: it can remove events durable billing has not acknowledged (12)",
      },
    ]);
  });
});

describe("parked entries of a group partition", () => {
  const base: ParkInput = { durable: "billing_p3", journalSeq: 7, subject: "acme.journal.s.l.StepDone", data: new Uint8Array([1]), deliveryCount: 1, reason: "terminated", errorCode: "TERMINATED", errorMessage: "x" };

  it("name their group and partition, read back as written, for any group name and partition", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/), fc.integer({ min: 0, max: MAX_PARTITIONS - 1 }), (name, partition) => {
        const durable = partitionDurable(name, partition);
        expect(parsePartitionDurable(durable)).toEqual({ group: name, partition });
        const e = readParked("held", 1, parkHeaders({ ...base, durable, group: { name, partition } }, new Date()), base.data);
        expect(e?.group).toEqual({ name, partition });
        expect(e?.durable).toBe(durable);
      }),
    );
  });

  it("a plain durable's entry has no group; half the group headers is not an entry", () => {
    expect(readParked("held", 1, parkHeaders(base, new Date()), base.data)?.group).toBeUndefined();
    for (const drop of ["Jetloop-Parked-Group", "Jetloop-Parked-Partition"]) {
      const h = parkHeaders({ ...base, group: { name: "billing", partition: 3 } }, new Date());
      h.delete(drop);
      expect(readParked("held", 1, h, base.data)).toBeUndefined();
    }
    for (const bad of ["-1", "x", "1.5", "1e2", "", "0003x"]) {
      const h = parkHeaders({ ...base, group: { name: "billing", partition: 3 } }, new Date());
      h.set("Jetloop-Parked-Partition", bad);
      expect(readParked("held", 1, h, base.data)).toBeUndefined();
    }
  });

  it("partition durable names outside the stream's count are not a group's", () => {
    expect(parsePartitionDurable("billing_p6", 6)).toBeUndefined();
    expect(parsePartitionDurable("billing_p5", 6)).toEqual({ group: "billing", partition: 5 });
    expect(parsePartitionDurable("billing_p01")).toBeUndefined();
    expect(parsePartitionDurable("billing")).toBeUndefined();
    expect(parsePartitionDurable("a_p1_p2")).toEqual({ group: "a_p1", partition: 2 });
  });
});
