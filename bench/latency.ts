/**
 * 2. Sequential append latency: one append at a time, each awaited before the next.
 * jetloop `await bus.publish(event)` against raw `await js.publish(subject, bytes, { msgID })`.
 */
import { type BenchContext, type Row, compareRow } from "./lib/context.js";
import { enduringBatch, toWire } from "./lib/events.js";
import { gc, nowUs, percentile } from "./lib/stats.js";

export async function runLatency(ctx: BenchContext): Promise<Row[]> {
  const n = ctx.options.quick ? 300 : 2_000;
  const s = await ctx.setup("latency");
  const p50 = { jetloop: [] as number[], raw: [] as number[] };
  const p99 = { jetloop: [] as number[], raw: [] as number[] };
  const contenders = {
    jetloop: async (): Promise<number[]> => {
      const events = enduringBatch(n);
      const lat = new Array<number>(n);
      gc();
      for (let i = 0; i < n; i++) {
        const t0 = nowUs();
        await s.bus.publish(events[i]!);
        lat[i] = nowUs() - t0;
      }
      return lat;
    },
    raw: async (): Promise<number[]> => {
      const wire = enduringBatch(n).map((e) => toWire(s.ns, e));
      const lat = new Array<number>(n);
      gc();
      for (let i = 0; i < n; i++) {
        const w = wire[i]!;
        const t0 = nowUs();
        await s.js.publish(w.subject, w.data, { msgID: w.eventId });
        lat[i] = nowUs() - t0;
      }
      return lat;
    },
  };
  try {
    await contenders.jetloop();
    await contenders.raw();
    for (let r = 0; r < ctx.options.reps; r++) {
      const order = r % 2 === 0 ? (["jetloop", "raw"] as const) : (["raw", "jetloop"] as const);
      for (const name of order) {
        const lat = await contenders[name]();
        p50[name].push(percentile(lat, 50));
        p99[name].push(percentile(lat, 99));
      }
      ctx.log(`latency rep ${r + 1}: p50 jetloop ${p50.jetloop.at(-1)!.toFixed(0)} µs raw ${p50.raw.at(-1)!.toFixed(0)} µs; p99 jetloop ${p99.jetloop.at(-1)!.toFixed(0)} µs raw ${p99.raw.at(-1)!.toFixed(0)} µs`);
    }
  } finally {
    await s.close();
  }
  return (["p50", "p99"] as const).map((metric) => {
    const samples = metric === "p50" ? p50 : p99;
    return compareRow({ bench: "2 sequential append", metric: `latency ${metric}`, unit: "µs", raw: "await js.publish", target: "<= 1.2" }, samples.jetloop, samples.raw);
  });
}
