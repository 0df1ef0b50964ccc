/**
 * 1. Enduring append throughput, the same durability on both sides: every append is
 * acknowledged by the stream and carries a message id. Three contenders, the same
 * number of appends in flight (jetloop's default maxInFlight):
 *   - jetloop: `bus.publish(event)` — validation, encoding, subject, headers, ack matching;
 *   - stock:   `js.publish(subject, bytes, { msgID })` from @nats-io/jetstream;
 *   - lean:    the lean raw loop (lib/lean.ts) with pre-encoded payloads;
 *   - lean+JSON: the lean loop serializing each event's wire object (JSON.stringify and
 *              UTF-8) as it appends it: the floor for any client that sends JSON, since
 *              the target asks jetloop to include its encoding.
 */
import { type BenchContext, type Row, compareRow } from "./lib/context.js";
import { enduringBatch, toWire, wireObject } from "./lib/events.js";
import { LeanAppender } from "./lib/lean.js";
import { nowMs, rotatedRounds, windowed } from "./lib/stats.js";

export const IN_FLIGHT = 1024;

export async function runAppend(ctx: BenchContext): Promise<Row[]> {
  const n = ctx.options.quick ? 5_000 : 20_000;
  const s = await ctx.setup("append", { maxInFlight: IN_FLIGHT });
  const lean = new LeanAppender(s.nc);
  let samples: Record<"jetloop" | "stock" | "lean" | "leanJson", number[]>;
  const utf8 = new TextEncoder();
  try {
    const contenders: Record<keyof typeof samples, () => Promise<number>> = {
      jetloop: async () => {
        const events = enduringBatch(n);
        const t0 = nowMs();
        await windowed(n, IN_FLIGHT, (i) => s.bus.publish(events[i]!));
        return (n / (nowMs() - t0)) * 1000;
      },
      stock: async () => {
        const wire = enduringBatch(n).map((e) => toWire(s.ns, e));
        const t0 = nowMs();
        await windowed(n, IN_FLIGHT, (i) => s.js.publish(wire[i]!.subject, wire[i]!.data, { msgID: wire[i]!.eventId }));
        return (n / (nowMs() - t0)) * 1000;
      },
      lean: async () => {
        const wire = enduringBatch(n).map((e) => toWire(s.ns, e));
        const t0 = nowMs();
        await windowed(n, IN_FLIGHT, (i) => lean.append(wire[i]!.subject, wire[i]!.data, wire[i]!.eventId));
        return (n / (nowMs() - t0)) * 1000;
      },
      leanJson: async () => {
        const wire = enduringBatch(n).map((e) => ({ ...toWire(s.ns, e), object: wireObject(e) }));
        const t0 = nowMs();
        await windowed(n, IN_FLIGHT, (i) => lean.append(wire[i]!.subject, utf8.encode(JSON.stringify(wire[i]!.object)), wire[i]!.eventId));
        return (n / (nowMs() - t0)) * 1000;
      },
    };
    // A warm-up round of each (JIT, server file blocks), then the repetitions, the order
    // rotated each time so drift on a noisy machine does not favour one contender.
    for (const run of Object.values(contenders)) await run();
    samples = await rotatedRounds("append", ctx.options.reps, (m) => ctx.log(m), contenders, () => s.jsm.streams.purge(s.stream));
  } finally {
    lean.close();
    await s.close();
  }
  const row = (raw: keyof typeof samples, label: string, target?: string) =>
    compareRow({ bench: "1 enduring append", metric: "throughput", unit: "events/s", raw: label, target }, samples.jetloop, samples[raw]);
  return [
    row("stock", `js.publish, ${IN_FLIGHT} in flight`, ">= 3"),
    row("lean", "lean raw loop", ">= 0.7"),
    row("leanJson", "lean raw loop + JSON.stringify"),
  ];
}
