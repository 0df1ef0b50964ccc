/**
 * Batches: a turn of TURN enduring events, TURNS_AT_ONCE turns in flight, every event with
 * its message id. Contenders:
 *   - today:   `bus.publishAll(turn)` — each event its own append (pipelined);
 *   - atomic:  `bus.publishAll(turn, { atomic: true })` — one atomic batch per turn;
 *   - startBatch: raw NATS.js 3.3's own atomic batch (`js.startBatch`, `add`, `commit`)
 *              with pre-encoded payloads;
 *   - fast raw: nats-server 2.14's fast-ingest protocol driven by hand (pre-encoded, flow
 *              acks every FLOW messages, at most two flows unacknowledged): the ceiling a
 *              fast-ingest publishAll could reach (jetloop does not use it yet: docs/scale.md).
 * Newest server only (atomic batches need 2.12, fast ingest 2.14).
 */
import { headers, nuid, type NatsConnection } from "@nats-io/transport-node";
import { type BenchContext, compareRow, type Row } from "./lib/context.js";
import { enduringBatch, toWire, type WireEvent } from "./lib/events.js";
import { nowMs, rotatedRounds } from "./lib/stats.js";

const TURN = 1000;
const TURNS_AT_ONCE = 4;
const FLOW = 100;

/** Runs `turns` with TURNS_AT_ONCE in flight; events/s over all of them. */
async function rate(turns: number, one: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const t0 = nowMs();
  await Promise.all(
    Array.from({ length: TURNS_AT_ONCE }, async () => {
      while (next < turns) await one(next++);
    }),
  );
  return ((turns * TURN) / (nowMs() - t0)) * 1000;
}

/** One fast-ingest batch, by hand: the reply subject carries flow, gap mode, batch sequence and operation. */
function fastIngest(nc: NatsConnection, stream: string, wire: readonly WireEvent[]): Promise<void> {
  const inbox = `_INBOX.${nuid.next()}.${nuid.next()}`;
  let acked = 0;
  let wake: (() => void) | undefined;
  let done: (e?: Error) => void = () => undefined;
  const finished = new Promise<void>((resolve, reject) => (done = (e) => (e ? reject(e) : resolve())));
  const sub = nc.subscribe(`${inbox}.>`, {
    callback: (_e, m) => {
      const f = m.json<{ type?: string; seq?: number; count?: number; error?: { description?: string } }>();
      if (f.type === "ack") {
        acked = Math.max(acked, f.seq ?? 0);
        wake?.();
      } else if (f.type === undefined) {
        sub.unsubscribe();
        done(f.error ? new Error(f.error.description) : f.count === wire.length ? undefined : new Error(`fast batch counted ${f.count} of ${wire.length}`));
      } else {
        sub.unsubscribe();
        done(new Error(`fast batch: ${JSON.stringify(f)}`));
      }
    },
  });
  void (async () => {
    for (let i = 0; i < wire.length; i++) {
      while (i - acked >= 2 * FLOW) await new Promise<void>((r) => (wake = r));
      const h = headers();
      h.set("Nats-Msg-Id", wire[i]!.eventId);
      h.set("Nats-Expected-Stream", stream);
      const op = i === 0 ? 0 : i === wire.length - 1 ? 2 : 1;
      nc.publish(wire[i]!.subject, wire[i]!.data, { headers: h, reply: `${inbox}.${FLOW}.fail.${i + 1}.${op}.$FI` });
    }
  })();
  return finished;
}

export async function runBatch(ctx: BenchContext): Promise<Row[]> {
  const turns = ctx.options.quick ? 5 : 20;
  const s = await ctx.setup("batch");
  let samples: Record<"today" | "atomic" | "startBatch" | "fast", number[]>;
  const turnsOf = () => Array.from({ length: turns }, () => enduringBatch(TURN));
  const wireOf = () => turnsOf().map((t) => t.map((e) => toWire(s.ns, e)));
  try {
    const contenders: Record<keyof typeof samples, () => Promise<number>> = {
      today: async () => {
        const all = turnsOf();
        return rate(turns, (i) => s.bus.publishAll(all[i]!));
      },
      atomic: async () => {
        const all = turnsOf();
        return rate(turns, (i) => s.bus.publishAll(all[i]!, { atomic: true }));
      },
      startBatch: async () => {
        const all = wireOf();
        return rate(turns, async (i) => {
          const w = all[i]!;
          const id = (k: number) => {
            const h = headers();
            h.set("Nats-Msg-Id", w[k]!.eventId);
            return h;
          };
          const b = await s.js.startBatch(w[0]!.subject, w[0]!.data, { headers: id(0) });
          for (let k = 1; k < w.length - 1; k++) b.add(w[k]!.subject, w[k]!.data, { headers: id(k) });
          await b.commit(w.at(-1)!.subject, w.at(-1)!.data, { headers: id(w.length - 1), timeout: 10_000 });
        });
      },
      fast: async () => {
        const all = wireOf();
        return rate(turns, (i) => fastIngest(s.nc, s.stream, all[i]!));
      },
    };
    for (const run of Object.values(contenders)) await run();
    samples = await rotatedRounds("batch", ctx.options.reps, (m) => ctx.log(m), contenders, () => s.jsm.streams.purge(s.stream));
  } finally {
    await s.close();
  }
  const bench = `batches (${TURN}-event turns, ${TURNS_AT_ONCE} at once)`;
  return [
    compareRow({ bench, metric: "throughput", unit: "events/s", raw: "publishAll atomic vs today's publishAll" }, samples.atomic, samples.today),
    compareRow({ bench, metric: "throughput", unit: "events/s", raw: "publishAll atomic vs js.startBatch" }, samples.atomic, samples.startBatch),
    compareRow({ bench, metric: "throughput", unit: "events/s", raw: "today's publishAll vs raw fast ingest (hand-driven)" }, samples.today, samples.fast),
  ];
}
