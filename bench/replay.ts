/**
 * 5. Replay throughput: a journal of N events read from the start, decoded and validated,
 * against a raw ordered consumer over the same stream that only counts its messages.
 * Both pull in batches of 512. An extra row, informative only, is the raw consumer that
 * also runs JSON.parse on every payload: the floor for any reader that looks inside.
 */
import { DeliverPolicy } from "@nats-io/jetstream";
import { type BenchContext, type Row, compareRow } from "./lib/context.js";
import { fillStream, WireFactory } from "./lib/fill.js";
import { nowMs, rotatedRounds } from "./lib/stats.js";

const BATCH = 512;

export async function runReplay(ctx: BenchContext): Promise<Row[]> {
  const n = ctx.options.quick ? 20_000 : 100_000;
  const s = await ctx.setup("replay");
  let samples: Record<"jetloop" | "raw" | "parse", number[]>;
  try {
    const f = new WireFactory(s.ns);
    const rate = await fillStream(s.nc, s.jsm, s.stream, n, (i) => f.make(i % 50, (i >> 4) % 4, i));
    ctx.log(`replay: ${n} events appended at ${Math.round(rate)}/s`);
    const rawRead = async (parse: boolean, limit = n): Promise<number> => {
      const t0 = nowMs();
      const consumer = await s.js.consumers.get(s.stream, { filter_subjects: `${s.ns}.journal.>`, deliver_policy: DeliverPolicy.All });
      const messages = await consumer.consume({ max_messages: BATCH });
      let count = 0;
      for await (const m of messages) {
        if (parse) JSON.parse(new TextDecoder().decode(m.data));
        count++;
        if (count >= limit || m.info.pending === 0) break;
      }
      messages.stop();
      await messages.close().catch(() => undefined);
      if (count !== limit) throw new Error(`raw replay read ${count} of ${limit}`);
      return (limit / (nowMs() - t0)) * 1000;
    };
    const contenders = {
      jetloop: async (): Promise<number> => {
        const t0 = nowMs();
        let count = 0;
        for await (const _d of s.bus.replay({ enduring: "all" }, { batch: BATCH })) count++;
        if (count !== n) throw new Error(`jetloop replay read ${count} of ${n}`);
        return (n / (nowMs() - t0)) * 1000;
      },
      raw: () => rawRead(false),
      parse: () => rawRead(true),
    };
    // Warm-up (JIT, the server's block cache): a tenth of the journal each.
    for await (const _d of s.bus.replay({ enduring: "all" }, { batch: BATCH, toSeq: Math.ceil(n / 10) })) void _d;
    await rawRead(false, Math.ceil(n / 10));
    samples = await rotatedRounds("replay", ctx.options.reps, (m) => ctx.log(m), contenders);
  } finally {
    await s.close();
  }
  const label = { bench: "5 replay", metric: `throughput, ${n / 1000}k events`, unit: "events/s" };
  return [
    compareRow({ ...label, raw: "ordered consumer, count only", target: ">= 0.9" }, samples.jetloop, samples.raw),
    compareRow({ ...label, raw: "ordered consumer + JSON.parse" }, samples.jetloop, samples.parse),
  ];
}
