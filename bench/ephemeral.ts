/**
 * 3. Ephemeral publish throughput: jetloop `bus.publish(preview)` (validation, encoding,
 * live subject, the last-journal-sequence header) against raw `nc.publish` of the same
 * bytes with the same header, timed until `flush()` returns (the server has them all).
 * Both sides hand control back to the event loop every BATCH messages, so NATS.js
 * writes to the socket at the same cadence. No subscriber: a subscriber in this process
 * would add the same decoding work to both sides and measure the reader, not the writer.
 */
import { headers } from "@nats-io/transport-node";
import { HEADER_LAST_JOURNAL_SEQ } from "../src/index.js";
import { type BenchContext, type Row, compareRow } from "./lib/context.js";
import { coordinates, ephemeralEvent, toWire, wireObject } from "./lib/events.js";
import { nowMs, rotatedRounds } from "./lib/stats.js";

const BATCH = 1000;

export async function runEphemeral(ctx: BenchContext): Promise<Row[]> {
  const n = ctx.options.quick ? 20_000 : 100_000;
  const s = await ctx.setup("ephemeral");
  let samples: Record<"jetloop" | "raw" | "rawJson", number[]>;
  const utf8 = new TextEncoder();
  const makeEvents = (count: number) => {
    const c = Array.from({ length: 16 }, () => coordinates());
    return Array.from({ length: count }, (_, i) => ephemeralEvent(c[i % c.length]!));
  };
  const contenders = {
    jetloop: async (): Promise<number> => {
      const events = makeEvents(n);
      const t0 = nowMs();
      for (let i = 0; i < n; i += BATCH) {
        const end = Math.min(n, i + BATCH);
        const pending = [];
        for (let k = i; k < end; k++) pending.push(s.bus.publish(events[k]!));
        await Promise.all(pending);
      }
      await s.bus.nc.flush();
      return (n / (nowMs() - t0)) * 1000;
    },
    raw: async (): Promise<number> => {
      const wire = makeEvents(n).map((e) => toWire(s.ns, e));
      const h = headers();
      h.set(HEADER_LAST_JOURNAL_SEQ, "0");
      const t0 = nowMs();
      for (let i = 0; i < n; i += BATCH) {
        const end = Math.min(n, i + BATCH);
        for (let k = i; k < end; k++) s.nc.publish(wire[k]!.subject, wire[k]!.data, { headers: h });
        await Promise.resolve();
      }
      await s.nc.flush();
      return (n / (nowMs() - t0)) * 1000;
    },
    rawJson: async (): Promise<number> => {
      const wire = makeEvents(n).map((e) => ({ ...toWire(s.ns, e), object: wireObject(e) }));
      const h = headers();
      h.set(HEADER_LAST_JOURNAL_SEQ, "0");
      const t0 = nowMs();
      for (let i = 0; i < n; i += BATCH) {
        const end = Math.min(n, i + BATCH);
        for (let k = i; k < end; k++) s.nc.publish(wire[k]!.subject, utf8.encode(JSON.stringify(wire[k]!.object)), { headers: h });
        await Promise.resolve();
      }
      await s.nc.flush();
      return (n / (nowMs() - t0)) * 1000;
    },
  };
  try {
    for (const run of Object.values(contenders)) await run();
    samples = await rotatedRounds("ephemeral", ctx.options.reps, (m) => ctx.log(m), contenders);
  } finally {
    await s.close();
  }
  const label = { bench: "3 ephemeral publish", metric: "throughput", unit: "events/s" };
  return [
    compareRow({ ...label, raw: "nc.publish, same bytes", target: ">= 0.8" }, samples.jetloop, samples.raw),
    compareRow({ ...label, raw: "nc.publish + JSON.stringify" }, samples.jetloop, samples.rawJson),
  ];
}
