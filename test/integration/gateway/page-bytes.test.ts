// A journal page bounded in bytes (maxPageBytes) as well as in count (limit), generated:
// events of random sizes, random caps and limits. Paging to done reads every event once
// in order; a page is at most the cap unless it holds a single event; a page shorter than
// its limit that is not done ends exactly where the next event would have taken it past
// the cap; next_journal_seq is always the last returned sequence + 1.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENCY_USER } from "../../../src/events/header.js";
import { connect, createEvent, type Jetloop, newId, startGateway } from "../../../src/index.js";
import { natsServers, uniqueNamespace } from "../../harness/context.js";
import { request } from "./http.js";

let bus: Jetloop;
const sid = newId();
const stored: { seq: number }[] = [];

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("pb") });
  await bus.provision();
  const sizes = fc.sample(fc.integer({ min: 1, max: 24_000 }), { numRuns: 40, seed: 3801 });
  for (const n of sizes) {
    const coords = { sessionId: sid, loopId: newId(), turnId: newId(), stepId: newId() };
    const toolExecutionId = newId();
    const e = createEvent("PermissionDecided", { ...coords, cause: { commandId: newId(), toolExecutionId, agency: AGENCY_USER }, toolExecutionId, effect: "approve", reason: "r".repeat(n) });
    stored.push({ seq: (await bus.publish(e)).journalSeq });
  }
});
afterAll(async () => {
  await bus.close();
});

interface Page {
  events: { journal_seq: number; event: unknown }[];
  next_journal_seq: number;
  done: boolean;
}

/** An entry's bytes in a page, as the page writes it (the comma before it included when not first). */
const entryBytes = (e: Page["events"][number], first: boolean) => Buffer.byteLength(`${first ? "" : ","}{"journal_seq":${e.journal_seq},"event":${JSON.stringify(e.event)}}`);

describe("journal pages bounded in bytes", () => {
  it("read every event once, each page within the cap unless it holds one event, cut only where the next event would pass it", async () => {
    // Every entry's size, from one unbounded read.
    const gwAll = await startGateway(bus, { listen: "127.0.0.1:0" });
    const all = JSON.parse((await request(`${gwAll.url}/v1/sessions/${sid}/journal?limit=1000`)).body) as Page;
    await gwAll.close();
    expect(all.events.map((e) => e.journal_seq)).toEqual(stored.map((s) => s.seq));
    const sizeOf = new Map(all.events.map((e) => [e.journal_seq, e]));
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1024, max: 96 * 1024 }), fc.integer({ min: 1, max: 1000 }), async (cap, limit) => {
        const gw = await startGateway(bus, { listen: "127.0.0.1:0", maxPageBytes: cap });
        try {
          const seen: number[] = [];
          let from = 0;
          for (;;) {
            const r = await request(`${gw.url}/v1/sessions/${sid}/journal?limit=${limit}&from_journal_seq=${from}`);
            expect(r.status).toBe(200);
            const page = JSON.parse(r.body) as Page;
            const bytes = Buffer.byteLength(r.body);
            if (page.events.length > 1) expect(bytes).toBeLessThanOrEqual(cap);
            seen.push(...page.events.map((e) => e.journal_seq));
            if (page.done) {
              expect(page.next_journal_seq).toBe(0);
              break;
            }
            const last = page.events.at(-1)!.journal_seq;
            expect(page.next_journal_seq).toBe(last + 1);
            if (page.events.length < limit) {
              // Cut by bytes: the next event would have passed the cap.
              const nextSeq = stored.find((s) => s.seq > last)!.seq;
              expect(bytes - 1 + entryBytes(sizeOf.get(nextSeq)!, false)).toBeGreaterThan(cap - 64);
            }
            from = page.next_journal_seq;
          }
          expect(seen).toEqual(stored.map((s) => s.seq));
        } finally {
          await gw.close();
        }
      }),
      { numRuns: 12, seed: 3802 },
    );
  }, 120_000);
});
