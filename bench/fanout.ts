/**
 * 7. Fan-out: 1,000 loop-filtered live subscriptions in one process while events for all
 * loops flow (then 10,000 of them: see `scaleTrial`). Each subscription must receive exactly its own loop's events. Reported:
 * the time to open the subscriptions, client heap per subscription, the delivery rate
 * (deliveries per second, first publish to last delivery) and the append rate of the
 * publisher meanwhile (the server's work per stored message grows with its consumers).
 * Server memory is not reported: the server's RSS does not shrink between trials, so
 * its deltas were noise.
 *
 *   jetloop: bus.subscribeEvents({ enduring: { loops: [loop] } }) per loop — a live
 *            subscription on the stream's republished feed: core subscriptions on the
 *            loop's feed subject and the session's `_` subject, shared within the bus;
 *   raw:     one raw ordered consumer per loop with the same two filter subjects (what a
 *            jetloop live subscription was before the feed: a consumer per viewer);
 *   republish: the stream's feed with one raw core subscription per loop, no seam, no
 *            gap checks, no decoding — the floor of the feed design.
 */
import { type BenchContext, compareRow, type Row } from "./lib/context.js";
import { coordinates, type Coordinates } from "./lib/events.js";
import { drain, LOOPS_PER_SESSION, SESSIONS, type Trial } from "./fanout/common.js";
import { runScale } from "./fanout/scale.js";
import { jetloopTrial, rawTrial, republishTrial } from "./fanout/trials.js";

export { runScale };

export async function runFanout(ctx: BenchContext): Promise<Row[]> {
  const s = await ctx.setup("fanout");
  const loops: Coordinates[] = [];
  for (let i = 0; i < SESSIONS; i++) {
    const sessionId = coordinates().sessionId;
    for (let l = 0; l < LOOPS_PER_SESSION; l++) loops.push(coordinates(sessionId));
  }
  // Fewer repetitions: one trial opens a thousand consumers.
  const reps = Math.max(1, Math.min(ctx.options.reps, ctx.options.quick ? 1 : 3));
  const trials = { jetloop: [] as Trial[], raw: [] as Trial[], republish: [] as Trial[] };
  const leftovers = { jetloop: [] as number[], raw: [] as number[], republish: [] as number[] };
  try {
    for (let r = 0; r < reps; r++) {
      const order = r % 2 === 0 ? (["jetloop", "raw", "republish"] as const) : (["raw", "jetloop", "republish"] as const);
      for (const name of order) {
        const t = await { jetloop: jetloopTrial, raw: rawTrial, republish: republishTrial }[name](ctx, s, loops);
        trials[name].push(t);
        leftovers[name].push(await drain(s));
        ctx.log(
          `fanout ${name} rep ${r + 1}: ${leftovers[name].at(-1)} consumers left 1 s after close; open ${t.openMs.toFixed(0)} ms, heap ${t.heapPerSubKiB.toFixed(1)} KiB/sub, ${Math.round(t.deliveriesPerSec)} deliveries/s, appends ${Math.round(t.appendsPerSec)}/s, close ${t.closeMs.toFixed(0)} ms`,
        );
      }
    }
  } finally {
    await s.close();
  }
  const n = loops.length;
  const metrics: [keyof Trial, string, string, string][] = [
    ["deliveriesPerSec", `delivery rate, ${n} subs`, "deliveries/s", ""],
    ["appendsPerSec", "append rate meanwhile", "events/s", ""],
    ["openMs", `open ${n} subs`, "ms", ""],
    ["heapPerSubKiB", "client heap per sub", "KiB", ""],
    ["closeMs", `close ${n} subs`, "ms", ""],
  ];
  const rows: Row[] = [];
  rows.push(...(await runScale(ctx)));
  for (const [key, metric, unit, target] of metrics) {
    const j = trials.jetloop.map((t) => t[key]);
    for (const other of ["raw", "republish"] as const) {
      const o = trials[other].map((t) => t[key]);
      const raw = other === "raw" ? `${n} raw ordered consumers` : "republish + core subs";
      rows.push(compareRow({ bench: "7 fan-out", metric, unit, raw, target }, j, o));
    }
  }
  return rows;
}

