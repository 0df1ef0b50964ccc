// `skip` and `from_journal_seq` over real HTTP, the family Go's strconv decides: a value
// Go reads (up to 2^63 - 1 for skip, 2^64 - 1 for the sequence, with a sign, leading zeros)
// is answered 200 — past every session or every event an empty page, done, the request's
// skip echoed exactly — and only what Go refuses is 400.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, type Jetloop, newId, startGateway, type RunningGateway } from "../../../src/index.js";
import { natsServers, uniqueNamespace } from "../../harness/context.js";
import { atoi, goNumberText, parseUint64 } from "../../harness/go-strconv.js";
import { request } from "./http.js";

let bus: Jetloop;
let gw: RunningGateway;
const sessions = [newId(), newId(), newId()];

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("gp") });
  await bus.provision();
  for (const sessionId of sessions) await bus.publish(createEvent("SessionStarted", { sessionId }));
  gw = await startGateway(bus, { listen: "127.0.0.1:0" });
});
afterAll(async () => {
  await gw.close();
  await bus.close();
});

const INVALID_PARAMETER = { error: { code: "invalid_parameter", message: "invalid query parameter", retryable: false } };

describe("query numbers as the Go handler reads them, over HTTP", () => {
  it("skip: every Go int from 0 up is a page (empty past the sessions, the skip echoed exactly); anything else 400", async () => {
    const values = fc.sample(goNumberText, { numRuns: 120 });
    values.push("9007199254740993", "9223372036854775807", "9223372036854775808", "+2", "-0", "0002", "");
    for (const raw of values) {
      const r = await request(`${gw.url}/v1/sessions?skip=${encodeURIComponent(raw)}&limit=2`);
      const go = atoi(raw);
      const skip = raw === "" ? 0n : go;
      if (typeof skip === "string" || skip < 0n) {
        expect([raw, r.status, JSON.parse(r.body)]).toEqual([raw, 400, INVALID_PARAMETER]);
        continue;
      }
      expect([raw, r.status]).toEqual([raw, 200]);
      // The echo is Go's int, exact: read as text, not through a JavaScript number.
      expect([raw, /"skip":(\d+),/.exec(r.body)?.[1]]).toEqual([raw, skip.toString()]);
      const page = JSON.parse(r.body) as { sessions: unknown[]; next_skip: number; done: boolean };
      const shown = Math.max(0, Math.min(2, sessions.length - Number(skip > 100n ? 100n : skip)));
      expect([raw, page.sessions.length, page.done]).toEqual([raw, shown, shown < 2]);
      if (page.done) expect(page.next_skip).toBe(0);
    }
  }, 60_000);

  it("from_journal_seq: every uint64 is a page (empty and done past the journal); anything else 400", async () => {
    const sid = sessions[0]!;
    const values = fc.sample(goNumberText, { numRuns: 120 });
    values.push("9007199254740991", "9007199254740993", "18446744073709551615", "18446744073709551616", "+1", "01");
    for (const raw of values) {
      const r = await request(`${gw.url}/v1/sessions/${sid}/journal?from_journal_seq=${encodeURIComponent(raw)}`);
      const go = raw === "" ? 0n : parseUint64(raw);
      if (typeof go === "string") {
        expect([raw, r.status, JSON.parse(r.body)]).toEqual([raw, 400, INVALID_PARAMETER]);
        continue;
      }
      expect([raw, r.status]).toEqual([raw, 200]);
      const page = JSON.parse(r.body) as { events: { journal_seq: number }[]; next_journal_seq: number; done: boolean };
      const jsm = await bus.jetstreamManager();
      if (go > BigInt((await jsm.streams.info(bus.stream)).state.last_seq)) expect([raw, page]).toEqual([raw, { events: [], next_journal_seq: 0, done: true }]);
      else expect(page.events.every((e) => BigInt(e.journal_seq) >= go)).toBe(true);
    }
  }, 60_000);
});
