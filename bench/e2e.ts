/**
 * 4. End-to-end latency at a fixed rate: from the publish call to the delivery on a live
 * subscription in the same process (publisher and subscriber on separate connections).
 *   enduring:  jetloop bus.publish → subscribeEvents({ enduring: "all" }, { start: "new" })
 *              raw js.publish → an ordered consumer (deliver new), for await over consume()
 *   ephemeral: jetloop bus.publish → subscribeEvents({ ephemeral: "all" })
 *              raw nc.publish (same bytes and header) → a core subscription on {ns}.live.>
 */
import { DeliverPolicy, jetstream } from "@nats-io/jetstream";
import { connect as natsConnect, headers } from "@nats-io/transport-node";
import { connect, HEADER_LAST_JOURNAL_SEQ, type JetloopEvent } from "../src/index.js";
import { type BenchContext, type Row, type Setup, compareRow } from "./lib/context.js";
import { coordinates, enduringEvent, ephemeralEvent, toWire } from "./lib/events.js";
import { asError, gc, nowUs, percentile, sleep } from "./lib/stats.js";

const RATE = 1000;

type Kind = "enduring" | "ephemeral";

/** Sends `total` messages at RATE per second, catching up after a late timer. */
async function paced(total: number, send: (i: number) => void): Promise<void> {
  const t0 = nowUs();
  let i = 0;
  while (i < total) {
    const due = Math.min(total, Math.floor(((nowUs() - t0) * RATE) / 1e6) + 1);
    while (i < due) send(i++);
    await sleep(1);
  }
}

function waitAll(expected: number, got: () => number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const tick = () => {
      if (got() >= expected) resolve();
      else if (Date.now() > deadline) reject(new Error(`e2e: ${got()} of ${expected} delivered`));
      else setTimeout(tick, 5);
    };
    tick();
  });
}

async function jetloopTrial(ctx: BenchContext, s: Setup, kind: Kind, n: number): Promise<number[]> {
  const reader = await connect({ servers: ctx.server.url, namespace: s.ns, name: "jetloop-e2e-reader" });
  const c = Array.from({ length: 8 }, () => coordinates());
  const events: JetloopEvent[] = Array.from({ length: n }, (_, i) => (kind === "enduring" ? enduringEvent(c[i % 8]!) : ephemeralEvent(c[i % 8]!)));
  const index = new Map(events.map((e, i) => [e.eventId, i]));
  const sent = new Float64Array(n);
  const lat: number[] = [];
  const sub = await reader.subscribeEvents(kind === "enduring" ? { enduring: "all" } : { ephemeral: "all" }, { start: "new" });
  const reading = (async () => {
    for await (const d of sub) {
      const i = index.get(d.event.eventId);
      if (i !== undefined) lat.push(nowUs() - sent[i]!);
      if (lat.length >= n) break;
    }
  })();
  let failed: unknown;
  // The trial's own set-up (events, maps, the reader) is collected now, not during the run.
  gc();
  await paced(n, (i) => {
    sent[i] = nowUs();
    s.bus.publish(events[i]!).catch((e: unknown) => (failed ??= e));
  });
  await waitAll(n, () => lat.length);
  await reading;
  await sub.close();
  await reader.close();
  if (failed !== undefined) throw asError(failed);
  return lat;
}

async function rawTrial(ctx: BenchContext, s: Setup, kind: Kind, n: number): Promise<number[]> {
  const nc2 = await natsConnect({ servers: ctx.server.url, name: "raw-e2e-reader" });
  const c = Array.from({ length: 8 }, () => coordinates());
  const wire = Array.from({ length: n }, (_, i) => toWire(s.ns, kind === "enduring" ? enduringEvent(c[i % 8]!) : ephemeralEvent(c[i % 8]!)));
  const sent = new Float64Array(n);
  const lat: number[] = [];
  // One publisher connection: the server delivers in publish order, so arrival i is message i.
  let stop: () => Promise<void>;
  if (kind === "enduring") {
    const consumer = await jetstream(nc2).consumers.get(s.stream, { filter_subjects: `${s.ns}.journal.>`, deliver_policy: DeliverPolicy.New });
    const messages = await consumer.consume({ max_messages: 256 });
    const reading = (async () => {
      for await (const _m of messages) {
        lat.push(nowUs() - sent[lat.length]!);
        if (lat.length >= n) break;
      }
    })();
    stop = async () => {
      await reading;
      messages.stop();
      await messages.close().catch(() => undefined);
    };
  } else {
    const sub = nc2.subscribe(`${s.ns}.live.>`, {
      callback: () => {
        lat.push(nowUs() - sent[lat.length]!);
      },
    });
    await nc2.flush();
    stop = () => {
      sub.unsubscribe();
      return Promise.resolve();
    };
  }
  const h = headers();
  h.set(HEADER_LAST_JOURNAL_SEQ, "0");
  let failed: unknown;
  gc();
  await paced(n, (i) => {
    const w = wire[i]!;
    sent[i] = nowUs();
    if (kind === "enduring") s.js.publish(w.subject, w.data, { msgID: w.eventId }).catch((e: unknown) => (failed ??= e));
    else s.nc.publish(w.subject, w.data, { headers: h });
  });
  await waitAll(n, () => lat.length);
  await stop();
  await nc2.close();
  if (failed !== undefined) throw asError(failed);
  return lat;
}

export async function runE2e(ctx: BenchContext): Promise<Row[]> {
  const n = ctx.options.quick ? 300 : 1500;
  const s = await ctx.setup("e2e");
  const rows: Row[] = [];
  try {
    for (const kind of ["enduring", "ephemeral"] as const) {
      const p50 = { jetloop: [] as number[], raw: [] as number[] };
      const p99 = { jetloop: [] as number[], raw: [] as number[] };
      const trial = { jetloop: () => jetloopTrial(ctx, s, kind, n), raw: () => rawTrial(ctx, s, kind, n) };
      await trial.jetloop();
      await trial.raw();
      for (let r = 0; r < ctx.options.reps; r++) {
        const order = r % 2 === 0 ? (["jetloop", "raw"] as const) : (["raw", "jetloop"] as const);
        for (const name of order) {
          const lat = await trial[name]();
          p50[name].push(percentile(lat, 50));
          p99[name].push(percentile(lat, 99));
        }
        ctx.log(`e2e ${kind} rep ${r + 1}: p50 jetloop ${p50.jetloop.at(-1)!.toFixed(0)} raw ${p50.raw.at(-1)!.toFixed(0)} µs; p99 jetloop ${p99.jetloop.at(-1)!.toFixed(0)} raw ${p99.raw.at(-1)!.toFixed(0)} µs`);
      }
      for (const metric of ["p50", "p99"] as const) {
        const samples = metric === "p50" ? p50 : p99;
        const raw = kind === "enduring" ? "js.publish → ordered consumer" : "nc.publish → core subscription";
        const target = metric === "p99" ? "<= 1.5" : "";
        rows.push(compareRow({ bench: `4 end-to-end ${kind}`, metric: `latency ${metric} at ${RATE}/s`, unit: "µs", raw, target }, samples.jetloop, samples.raw));
      }
    }
  } finally {
    await s.close();
  }
  return rows;
}
