/**
 * 6. Selective replay: one session's 100 events out of a stream of 10k events and out of
 * one of BENCH_BIG events (default 1M), many sessions of 100 events each. Two layouts in
 * the same stream:
 *   - spread: sessions interleaved round robin, so the chosen session's events are
 *     spread evenly over the whole stream (the worst case: every part of the stream holds
 *     one of them);
 *   - burst:  one session whose 100 events were appended back to back in the middle of
 *     the stream (how a real session looks: its events are close in time).
 * The time of `bus.session(id).replay({ enduring: "all" })` must not grow with the stream. Raw reference:
 * an ordered consumer filtered on the session's subjects, counting to 100.
 */
import { DeliverPolicy } from "@nats-io/jetstream";
import { type BenchContext, type Row, targetMet, compareRow } from "./lib/context.js";
import { fillStream, syntheticId, WireFactory } from "./lib/fill.js";
import { median, nowMs } from "./lib/stats.js";

const PER_SESSION = 100;

type Layout = "spread" | "burst";
type Samples = Record<Layout, { jetloop: number[]; raw: number[] }>;

async function measure(ctx: BenchContext, size: number): Promise<Samples> {
  const s = await ctx.setup(`selective${size}`);
  const out: Samples = { spread: { jetloop: [], raw: [] }, burst: { jetloop: [], raw: [] } };
  try {
    const sessions = Math.max(1, Math.floor((size - PER_SESSION) / PER_SESSION));
    const mid = Math.floor(size / 2);
    const f = new WireFactory(s.ns);
    const t0 = nowMs();
    const rate = await fillStream(s.nc, s.jsm, s.stream, size, (i) => {
      if (i >= mid && i < mid + PER_SESSION) return f.make(sessions, 0, i); // the burst session
      const j = i < mid ? i : i - PER_SESSION;
      return f.make(j % sessions, Math.floor(j / sessions) % 4, i);
    });
    ctx.log(`selective: ${size} events in ${sessions + 1} sessions appended in ${((nowMs() - t0) / 1000).toFixed(1)} s (${Math.round(rate)}/s)`);
    const sessionOf: Record<Layout, string> = { spread: syntheticId(1, Math.floor(sessions / 2)), burst: syntheticId(1, sessions) };
    const run = {
      jetloop: async (sessionId: string): Promise<number> => {
        const t = nowMs();
        let count = 0;
        for await (const _d of s.bus.session(sessionId).replay({ enduring: "all" })) count++;
        if (count !== PER_SESSION) throw new Error(`jetloop selective replay read ${count} of ${PER_SESSION}`);
        return nowMs() - t;
      },
      raw: async (sessionId: string): Promise<number> => {
        const t = nowMs();
        const consumer = await s.js.consumers.get(s.stream, { filter_subjects: `${s.ns}.journal.${sessionId}.>`, deliver_policy: DeliverPolicy.All });
        const messages = await consumer.consume({ max_messages: 512 });
        let count = 0;
        for await (const _m of messages) if (++count >= PER_SESSION) break;
        messages.stop();
        await messages.close().catch(() => undefined);
        return nowMs() - t;
      },
    };
    for (const layout of ["spread", "burst"] as const) {
      await run.jetloop(sessionOf[layout]);
      await run.raw(sessionOf[layout]);
      // A burst replay takes a few milliseconds, where one scheduling hiccup is a large
      // share: four times the repetitions, at no cost to the budget.
      const reps = layout === "burst" ? ctx.options.reps * 4 : ctx.options.reps;
      for (let r = 0; r < reps; r++) {
        const order = r % 2 === 0 ? (["jetloop", "raw"] as const) : (["raw", "jetloop"] as const);
        for (const name of order) out[layout][name].push(await run[name](sessionOf[layout]));
      }
      ctx.log(`selective ${size} ${layout}: jetloop ${median(out[layout].jetloop).toFixed(1)} ms, raw ${median(out[layout].raw).toFixed(1)} ms`);
    }
  } finally {
    await s.close();
  }
  return out;
}

const label = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`);

export async function runSelective(ctx: BenchContext): Promise<Row[]> {
  const sizes = [10_000, ctx.options.bigStream] as const;
  const small = await measure(ctx, sizes[0]);
  const big = await measure(ctx, sizes[1]);
  const rows: Row[] = [];
  for (const layout of ["spread", "burst"] as const) {
    for (const [size, m] of [
      [sizes[0], small],
      [sizes[1], big],
    ] as const) {
      const row = { bench: "6 selective replay", metric: `${layout}: 100 of ${label(size)}`, unit: "ms", raw: "ordered consumer on the session" };
      rows.push(compareRow(row, m[layout].jetloop, m[layout].raw));
    }
    const growth = median(big[layout].jetloop) / median(small[layout].jetloop);
    const rawGrowth = median(big[layout].raw) / median(small[layout].raw);
    rows.push({
      bench: "6 selective replay",
      metric: `${layout}: growth ${label(sizes[1])} / 10k`,
      unit: "×",
      raw: "raw growth (raw column)",
      jetloopMedian: growth,
      rawMedian: rawGrowth,
      ratio: growth / rawGrowth,
      target: "<= 1.5",
      targetOn: "jetloop",
      met: targetMet(growth, "<= 1.5"),
      jetloopSamples: [],
      rawSamples: [],
    });
  }
  return rows;
}
