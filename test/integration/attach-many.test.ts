// 1,000 Go sessions appearing at once, written as natsstore writes them (a stream each, a
// fence, two events, a catalog entry for every other one): the attach finds each (by its
// stream, its catalog entry, its first append or its stream-created advisory), reads a bounded
// number at a time, and appends every event once.
import { jetstream, type JetStreamManager, type StreamConfig } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attach, type Jetloop } from "../../src/index.js";
import { reportFigure } from "../harness/figures-log.js";
import { saveAttachFault } from "../harness/reliability/attach-faults.js";
import { goSeqOf } from "../../src/attach/journal-position.js";
import { goEnvelope, readRecording, recordedGoEvents, recordedStore, type RecordedStore } from "../harness/natsstore.js";
import { headers } from "@nats-io/transport-node";

const SESSIONS = 1000;
const S103 = "6f1c2a3b-4d5e-4f60-8a7b-000000000103";

describe("attach: 1,000 Go sessions appearing at once", () => {
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let bus: Jetloop;

  let store: RecordedStore | undefined;

  beforeAll(async () => {
    store = await recordedStore("many");
    ({ nc, jsm, bus } = store);
  }, 60_000);

  afterAll(async () => {
    await store?.close();
  });

  it("appends every event of every session once", async () => {
    const a = await attach(bus, { pollMs: 500, resyncMs: 1000 });
    try {
      await a.caughtUp();
      const template = recordedGoEvents().get(S103)!;
      const { metadata: _m, ...config } = readRecording().streams.find((s) => s.config.name === `sessions_s${S103}`)!.config;
      const js = jetstream(nc);
      const kv = await new Kvm(nc).open("natsstore_kv");
      const started = Date.now();
      const ids: string[] = [];
      // At once for the attach (written without waiting for it), 50 sessions in flight at a
      // time: a thousand stream creates together time out on the server's API.
      const write = async (i: number) => {
        const sid = `6f1c2a3b-4d5e-4f60-8a7b-${(0xc00000000000 + i).toString(16)}`;
          ids.push(sid);
          await jsm.streams.add({ ...(config as unknown as StreamConfig), name: `sessions_s${sid}`, subjects: [`sessions.${sid}`] });
          const records = [goEnvelope("fence", "1", Buffer.from('{"epoch":1}')), ...template.slice(0, 2).map((e) => goEnvelope("event", e.id, Buffer.from(e.bytes.toString().split(S103).join(sid))))];
          for (const [k, data] of records.entries()) {
            const h = headers();
            h.set("Nats-Expected-Last-Sequence", String(k));
            await js.publish(`sessions.${sid}`, data, { headers: h });
          }
          if (i % 2 === 0) await kv.put(`sessions/${sid}`, JSON.stringify({ session_id: sid, status: "active" }));
      };
      for (let i = 0; i < SESSIONS; i += 50) await Promise.all(Array.from({ length: Math.min(50, SESSIONS - i) }, (_, k) => write(i + k)));
      const written = Date.now() - started;
      await a.caughtUp();
      const took = Date.now() - started;
      const mine = a.sessions().filter((s) => ids.includes(s.sessionId));
      const vias = new Map<string, number>();
      for (const s of mine) vias.set(s.via, (vias.get(s.via) ?? 0) + 1);
      reportFigure(`attach, ${SESSIONS} sessions at once: written in ${written} ms, all appended ${took} ms after the first write; found by ${JSON.stringify(Object.fromEntries(vias))}`);
      expect(mine).toHaveLength(SESSIONS);
      expect(mine.every((s) => s.appended === 2 && s.keptOut === 1 && s.parked === 0 && s.lag === 0)).toBe(true);
      expect((await jsm.streams.info(bus.stream)).state.messages).toBe(58 + 2 * SESSIONS);
      // Per Go record, over the journal as stored: each new session's two events at Go sequences 2 and 3.
      const info = await jsm.streams.info(bus.stream);
      const seen = new Map<string, number[]>();
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const m = await jsm.streams.getMessage(bus.stream, { seq });
        if (m === null) continue;
        const sid = m.subject.split(".")[2]!;
        seen.set(sid, [...(seen.get(sid) ?? []), goSeqOf(m.header)!]);
      }
      let duplicated = 0;
      let missing = 0;
      let outOfOrder = 0;
      for (const sid of ids) {
        const got = seen.get(sid) ?? [];
        duplicated += got.length - new Set(got).size;
        missing += [2, 3].filter((g) => !got.includes(g)).length;
        for (let i = 1; i < got.length; i++) if (got[i]! <= got[i - 1]!) outOfOrder++;
      }
      saveAttachFault("5", `${SESSIONS} Go sessions appearing at once (streams, catalog entries for half)`, { goEvents: 2 * SESSIONS, jetloopEvents: [...seen.entries()].filter(([sid]) => ids.includes(sid)).reduce((n, [, l]) => n + l.length, 0), duplicated, missing, outOfOrder, parked: mine.reduce((n, s) => n + s.parked, 0) }, started, {
        "all appended after the first write (ms)": took,
        "found by": JSON.stringify(Object.fromEntries(vias)),
      });
      expect({ duplicated, missing, outOfOrder }).toEqual({ duplicated: 0, missing: 0, outOfOrder: 0 });
    } finally {
      await a.close();
    }
  }, 300_000);
});
