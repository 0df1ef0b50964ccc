// `attach()` against the Go runtime's session store as recorded
// (test/conformance/data/natsstore/), loaded into a real nats-server exactly as recorded:
// every Go event arrives in jetloop's journal byte for byte, in Go's order, once; fences,
// commands and gate_prepared stay out; internal events stay internal; nothing is written
// on the Go side. Then the faults: a blob pointer whose object is missing or whose digest
// differs, and a record Go's reader refuses, are parked and cost only their session.
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attach, connect, openSessionCatalog, type Jetloop } from "../../src/index.js";
import { goSeqOf } from "../../src/attach/journal-position.js";
import { appendGoRecord, goBlobPointer, goEnvelope, readBack, recordedStore, type RecordedStore, readRecording, recordedGoEvents, sha256Hex } from "../harness/natsstore.js";
import { uniqueNamespace } from "../harness/namespace.js";
import type { NatsServer } from "../harness/server.js";
import { reportFigure } from "../harness/figures-log.js";
import { saveAttachFault } from "../harness/reliability/attach-faults.js";

const S101 = "6f1c2a3b-4d5e-4f60-8a7b-000000000101";
const S102 = "01936d2e-7a10-7c3d-9e4f-000000000102";
const S103 = "6f1c2a3b-4d5e-4f60-8a7b-000000000103";

/** Every message of the Go side: streams and their contents, to prove the attach wrote nothing there. */
async function goSide(jsm: JetStreamManager): Promise<string> {
  const names: string[] = [];
  for await (const si of jsm.streams.list()) if (!si.config.name.includes("journal") && !si.config.name.includes("parked") && !si.config.name.includes("catalog")) names.push(si.config.name);
  names.sort();
  const out: unknown[] = [];
  for (const n of names) out.push(n, (await jsm.streams.info(n)).state.last_seq, await readBack(jsm, n));
  return JSON.stringify(out);
}

interface JournalEntry {
  readonly seq: number;
  readonly subject: string;
  readonly goSeq: number | undefined;
  readonly data: Buffer;
}

async function journal(jsm: JetStreamManager, stream: string): Promise<JournalEntry[]> {
  const info = await jsm.streams.info(stream);
  const out: JournalEntry[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
    if (m) out.push({ seq, subject: m.subject, goSeq: goSeqOf(m.header), data: Buffer.from(m.data) });
  }
  return out;
}

/** The counts the brief asks for, per the Go record of each appended event. */
export function tally(goEvents: Map<string, { seq: number; bytes: Buffer }[]>, entries: readonly JournalEntry[], ns: string) {
  let duplicated = 0;
  let missing = 0;
  let outOfOrder = 0;
  let mismatched = 0;
  let goCount = 0;
  for (const [sid, events] of goEvents) {
    goCount += events.length;
    const mine = entries.filter((e) => e.subject.startsWith(`${ns}.journal.${sid}.`));
    const seqs = mine.map((e) => e.goSeq!);
    duplicated += seqs.length - new Set(seqs).size;
    for (let i = 1; i < seqs.length; i++) if (seqs[i]! <= seqs[i - 1]!) outOfOrder++;
    for (const ev of events) {
      const found = mine.filter((e) => e.goSeq === ev.seq);
      if (found.length === 0) missing++;
      else if (!found.every((f) => f.data.equals(ev.bytes))) mismatched++;
    }
  }
  return { goEvents: goCount, jetloopEvents: entries.length, duplicated, missing, outOfOrder, mismatched };
}

describe("attach: the recorded Go session store", () => {
  let server: NatsServer;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let bus: Jetloop;

  let store: RecordedStore | undefined;

  beforeAll(async () => {
    store = await recordedStore("att");
    ({ server, nc, jsm, bus } = store);
  }, 60_000);

  afterAll(async () => {
    await store?.close();
  });

  it("loads the recording exactly as recorded: subjects, sequences, headers and bytes", async () => {
    const rec = readRecording();
    for (const s of rec.streams) {
      // The bytes compared by digest: a failure prints a line per message, not megabytes.
      const digest = (b64: string) => sha256Hex(Buffer.from(b64, "base64"));
      const want = rec.messages.filter((m) => m.stream === s.config.name && m.subject !== "").map((m) => ({ seq: m.seq, subject: m.subject, headers: m.headers ?? null, data: digest(m.data_b64) }));
      const got = (await readBack(jsm, s.config.name)).map((m) => ({ seq: m.seq, subject: m.subject, headers: m.headers ?? null, data: digest(m.data_b64) }));
      expect(got, s.config.name).toEqual(want);
    }
  });

  it("appends every Go event byte for byte, in Go's order, once, and writes nothing on the Go side", async () => {
    const before = await goSide(jsm);
    const reports: string[] = [];
    const a = await attach(bus, { onReport: (r) => reports.push(r.kind), pollMs: 100 });
    try {
      await a.caughtUp();
      const entries = await journal(jsm, bus.stream);
      const counts = tally(recordedGoEvents(), entries, bus.namespace);
      reportFigure(`attach of the recording: ${JSON.stringify({ ...counts, parked: a.sessions().reduce((n, s) => n + s.parked, 0) })}`);
      expect(counts).toMatchObject({ goEvents: 58, jetloopEvents: 58, duplicated: 0, missing: 0, outOfOrder: 0, mismatched: 0 });
      // Fences, commands and gate_prepared stay out: every journal message is an event of its Go record.
      const sessions = a.sessions();
      expect(sessions.map((s) => [s.sessionId, s.appended, s.keptOut, s.parked, s.lag, s.state])).toEqual([
        [S102, 7, 2, 0, 0, "following"],
        [S101, 15, 5, 0, 0, "following"],
        [S103, 36, 2, 0, 0, "following"],
      ].sort((x, y) => (x[0] as string).localeCompare(y[0] as string)));
      // The one event id two sessions share (TurnStarted e3c) is in both, each under its own session.
      expect(reports.filter((k) => k === "collision")).toHaveLength(1);
      // The Go catalog's view of each session is kept.
      expect(a.goMeta(S101)?.status).toBe("stopped");
      expect(await goSide(jsm)).toBe(before);
    } finally {
      await a.close();
    }
  }, 60_000);

  it("lists the attached sessions as the Go catalog lists them: title, state, created_at", async () => {
    const catalog = await openSessionCatalog(bus);
    const rows = (await catalog.list()).sessions;
    for (const go of readRecording().catalog.list_sessions) {
      const row = rows.find((r) => r.sessionId === go.session_id);
      expect(row, String(go.session_id)).toBeDefined();
      expect({ title: row!.title, state: row!.state, created_at: row!.createdAt }).toEqual({ title: go.title, state: go.state, created_at: go.created_at });
    }
  });

  it("keeps internal events internal: a feed reader without includeInternal sees the public ones only", async () => {
    const all: string[] = [];
    for await (const d of bus.replay({ enduring: "all", sessions: [S103] })) all.push((d.event as { eventId: string }).eventId);
    const internal = recordedGoEvents()
      .get(S103)!
      .filter((e) => /"visibility":1/.test(e.bytes.toString()));
    expect(internal.length).toBe(12);
    expect(all.length).toBe(36 - 12);
  });

  it("a restarted attach appends nothing: it resumes from the journal", async () => {
    const before = (await jsm.streams.info(bus.stream)).state.last_seq;
    const a = await attach(bus, { pollMs: 100 });
    await a.caughtUp();
    await a.close();
    expect((await jsm.streams.info(bus.stream)).state.last_seq).toBe(before);
  }, 30_000);

  it("parks a blob pointer with a wrong digest, or to a missing object, and a record Go refuses; the session goes on, the others are untouched", async () => {
    const startedAt = Date.now();
    const a = await attach(bus, { pollMs: 50 });
    try {
      await a.caughtUp();
      const others = a.sessions().filter((s) => s.sessionId !== S103);
      const template = recordedGoEvents().get(S103)!.at(-1)!.bytes.toString();
      const freshEvent = (n: number) => Buffer.from(template.replace(/"event_id":"[0-9a-f-]{36}"/, `"event_id":"6f1c2a3b-4d5e-4f60-8a7b-0000000a${String(n).padStart(4, "0")}"`));
      // An object that exists, named with a wrong digest.
      const key = `sessions/${S102}/blobs/446b970e4707f89cda893ed07b70c51bb2a130407235690877433b84030241a9`;
      const wrongDigest = await appendGoRecord(nc, S103, goEnvelope("blobptr", "x1", goBlobPointer(key, 900768, sha256Hex(Buffer.from("not it")))));
      const missing = await appendGoRecord(nc, S103, goEnvelope("blobptr", "x2", goBlobPointer(`sessions/${S103}/blobs/${sha256Hex(Buffer.from("gone"))}`, 10, sha256Hex(Buffer.from("gone")))));
      const refusedVersion = await appendGoRecord(nc, S103, Buffer.from('{"v":2,"kind":"event","id":"x3","body":""}'));
      const refusedEvent = await appendGoRecord(nc, S103, goEnvelope("event", "x4", Buffer.from('{"type":"NoSuchEvent","v":1}')));
      const good = await appendGoRecord(nc, S103, goEnvelope("event", "x5", freshEvent(1)));
      await a.caughtUp();
      const s103 = a.sessions().find((s) => s.sessionId === S103)!;
      expect(s103).toMatchObject({ parked: 4, goSeq: good, lag: 0 });
      const parked = await bus.parked.list(`go-${S103}`);
      expect(parked.map((p) => p.journalSeq)).toEqual([wrongDigest, missing, refusedVersion, refusedEvent]);
      expect(parked.map((p) => /blob_integrity|blob_unavailable|unsupported version|event/.exec(p.errorMessage)?.[0])).toEqual(["blob_integrity", "blob_unavailable", "unsupported version", "event"]);
      // The good event after them arrived; the other sessions did not move.
      const entries = await journal(jsm, bus.stream);
      const appendedGood = entries.filter((e) => e.goSeq === good && e.subject.includes(S103));
      expect(appendedGood).toHaveLength(1);
      // Unreadable records are never appended: nothing in the journal at their Go sequences.
      const unreadable = [wrongDigest, missing, refusedVersion, refusedEvent];
      const appendedBad = entries.filter((e) => e.subject.includes(S103) && unreadable.includes(e.goSeq!)).length;
      expect(appendedBad).toBe(0);
      saveAttachFault("3", "records Go's reader refuses beside a good one: a blob pointer with a wrong digest, one to a missing object, an envelope of version 2, an event of no known type", { goEvents: 5, jetloopEvents: appendedGood.length + appendedBad, duplicated: Math.max(0, appendedGood.length - 1), missing: 1 - Math.min(1, appendedGood.length), outOfOrder: 0, parked: parked.length }, startedAt, {
        "other sessions' figures moved": false,
      });
      expect(a.sessions().filter((s) => s.sessionId !== S103)).toEqual(others);
    } finally {
      await a.close();
    }
  }, 60_000);

  it("two attaches racing on one namespace append each Go event once: the fence, not a lease, decides", async () => {
    const startedAt = Date.now();
    const race = await connect({ servers: server.url, namespace: uniqueNamespace("race") });
    const race2 = await connect({ servers: server.url, namespace: race.namespace });
    try {
      await race.provision();
      const [a, b] = await Promise.all([attach(race, { pollMs: 50, readers: 1 }), attach(race2, { pollMs: 50, readers: 3 })]);
      await Promise.all([a.caughtUp(), b.caughtUp()]);
      await Promise.all([a.close(), b.close()]);
      const counts = tally(recordedGoEvents(), await journal(jsm, race.stream), race.namespace);
      reportFigure(`two attaches racing: ${JSON.stringify({ ...counts, appendedByEach: [a.sessions(), b.sessions()].map((l) => l.reduce((n, x) => n + x.appended, 0)) })}`);
      // The recording's 58, and the good event the fault test wrote after its parked records.
      expect(counts).toMatchObject({ goEvents: 58, jetloopEvents: 59, duplicated: 0, missing: 0, outOfOrder: 0, mismatched: 0 });
      // The good event the fault test wrote is a Go event too.
      saveAttachFault("4", "two attaches racing on one namespace, no lease (the fence decides)", { ...counts, goEvents: counts.goEvents + 1, parked: 0 }, startedAt, {
        "appended by each of the two racing attaches": [a.sessions(), b.sessions()].map((l) => l.reduce((n, x) => n + x.appended, 0)).join(" + "),
      });
    } finally {
      await race2.close();
      await race.close();
    }
  }, 60_000);

  it("a session the runtime reopens while the attach follows it (a new fence, events after it) goes on in Go's order, once", async () => {
    const startedAt = Date.now();
    const a = await attach(bus, { pollMs: 50 });
    try {
      await a.caughtUp();
      const template = recordedGoEvents().get(S101)!.at(-1)!.bytes.toString();
      const fresh = (n: number) => {
        const id = `6f1c2a3b-4d5e-4f60-8a7b-0000000b${String(n).padStart(4, "0")}`;
        return { id, bytes: Buffer.from(template.replace(/"event_id":"[0-9a-f-]{36}"/, `"event_id":"${id}"`)) };
      };
      const written: { seq: number; bytes: Buffer }[] = [];
      const write = async (n: number) => {
        const e = fresh(n);
        written.push({ seq: await appendGoRecord(nc, S101, goEnvelope("event", e.id, e.bytes)), bytes: e.bytes });
      };
      for (let n = 0; n < 20; n++) await write(n);
      // The runtime closes the session and another process opens it: its lease taken again, a new fence.
      const fence = await appendGoRecord(nc, S101, goEnvelope("fence", "3", Buffer.from('{"epoch":3}')));
      for (let n = 20; n < 40; n++) await write(n);
      await a.caughtUp();
      const s101 = a.sessions().find((s) => s.sessionId === S101)!;
      expect(s101).toMatchObject({ goSeq: written.at(-1)!.seq, lag: 0, parked: 0, state: "following" });
      const expected = new Map([[S101, [...recordedGoEvents().get(S101)!, ...written.map((w) => ({ ...w, id: "" }))]]]);
      const entries = (await journal(jsm, bus.stream)).filter((e) => e.subject.includes(S101));
      const counts = tally(expected, entries, bus.namespace);
      expect(entries.some((e) => e.goSeq === fence)).toBe(false);
      expect(counts).toMatchObject({ goEvents: expected.get(S101)!.length, jetloopEvents: expected.get(S101)!.length, duplicated: 0, missing: 0, outOfOrder: 0, mismatched: 0 });
      saveAttachFault("2", "a session reopened by the runtime (a new fence, epoch 3) while the attach follows it, 20 events before and 20 after", { ...counts, parked: 0 }, startedAt);
    } finally {
      await a.close();
    }
  }, 60_000);

  it("provision refuses a namespace whose streams would capture the Go sessions' subjects, and attach refuses it too", async () => {
    const clash = await connect({ servers: server.url, namespace: "sessions" });
    try {
      await expect(clash.provision()).rejects.toMatchObject({ code: "OPTIONS_INVALID", option: "namespace" });
      await expect(attach(clash)).rejects.toMatchObject({ code: "ATTACH_FAILED", reason: "layout" });
      // Nothing was created beside the Go streams.
      const names: string[] = [];
      for await (const n of jsm.streams.names()) names.push(n);
      expect(names.filter((n) => n.startsWith("sessions_") && !n.startsWith("sessions_s"))).toEqual([]);
    } finally {
      await clash.close();
    }
  });
});
