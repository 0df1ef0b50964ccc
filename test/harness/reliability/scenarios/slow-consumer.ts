// Scenario 5: a slow consumer under a burst. The reader stalls completely while a burst
// of previews (ephemeral) and journal events (enduring) arrives, then reads slowly.
// Previews beyond the ephemeral buffer are dropped and counted; journal events wait on
// the server (pull-based flow control) and all arrive; the heap stays bounded.
import { decodeEvent } from "../../../../src/codec/codec.js";
import { connect, encodeEvent, type Delivery, type JetloopEvent } from "../../../../src/index.js";
import { startServer } from "../../server.js";
import { sleep } from "../../async.js";
import { row, tally, type ScenarioRecord } from "../figures.js";
import { enduring, ephemeral, eventIdOf, MiB, newCoords, retainedHeap } from "../workload.js";
import { record, scenarioNamespace, type ScenarioContext } from "./common.js";

export interface SlowConsumerOptions {
  readonly previews: number;
  /** Approximate size of one preview's summary. */
  readonly previewBytes: number;
  readonly journalEvents: number;
  readonly ephemeralBuffer: number;
  /** Reader's pause per delivery once it reads again (ms; 0 = just yield). */
  readonly readDelayMs: number;
}

export interface SlowConsumerResult {
  readonly record: ScenarioRecord;
  readonly previews: { published: number; delivered: number; dropped: number; unaccounted: number; duplicated: number; unexpected: number };
  readonly journal: ReturnType<typeof tally>;
  /** Heap retained (after a full GC) while the reader stalled with the burst delivered, minus before. */
  readonly retainedDeltaBytes: number;
  readonly peakDeltaBytes: number;
  readonly burstBytes: number;
  readonly serverSlowConsumers: number;
  readonly err: Error | undefined;
}

export const SLOW_CONSUMER = { id: "5-slow-consumer", title: "Slow consumer under a burst" } as const;

export async function slowConsumerScenario(ctx: ScenarioContext, o: SlowConsumerOptions): Promise<SlowConsumerResult> {
  const t0 = Date.now();
  const server = await startServer();
  const ns = scenarioNamespace();
  const producer = await connect({ servers: server.url, namespace: ns, natsOptions: { name: "reliability-burst-producer" } });
  const reader = await connect({ servers: server.url, namespace: ns, natsOptions: { name: "reliability-slow-reader" } });
  let sampler: NodeJS.Timeout | undefined;
  try {
    await producer.provision();
    const coords = newCoords();
    const previewEvents: JetloopEvent[] = Array.from({ length: o.previews }, () => ephemeral(coords, o.previewBytes));
    const journalEvents: JetloopEvent[] = Array.from({ length: o.journalEvents }, () => enduring(coords));
    const sub = await reader.subscribeEvents({ enduring: "all", ephemeral: "all" }, { start: "new", ephemeralBuffer: o.ephemeralBuffer });

    // The codec builds its per-type reading tables once, on first use: read one event of
    // each kind first, so that the figure is what the burst itself keeps.
    for (const e of [previewEvents[0], journalEvents[0]]) if (e) decodeEvent(encodeEvent(e));
    const before = retainedHeap();
    let peak = process.memoryUsage().heapUsed;
    sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().heapUsed);
    }, 10);

    // The burst, with the reader stalled: previews and journal events interleaved.
    const burstBytes = [...previewEvents, ...journalEvents].reduce((n, e) => n + encodeEvent(e).length, 0);
    const appends: Promise<unknown>[] = [];
    const ratio = Math.max(1, Math.floor(o.previews / Math.max(1, o.journalEvents)));
    let j = 0;
    for (let i = 0; i < o.previews; i++) {
      await producer.publish(previewEvents[i]!);
      if (i % ratio === 0 && j < journalEvents.length) appends.push(producer.publish(journalEvents[j++]!));
      if (i % 1000 === 999) await producer.nc.flush(); // let the socket drain now and then
    }
    while (j < journalEvents.length) appends.push(producer.publish(journalEvents[j++]!));
    await Promise.all(appends);
    await producer.nc.flush();
    // Everything has reached the reader's connection (core NATS) or waits in the stream.
    await sleep(500);
    await reader.nc.flush();
    const stalled = retainedHeap();
    ctx.log?.(`  burst done; retained heap ${((stalled - before) / MiB).toFixed(1)} MiB above the baseline`);

    // Now read, slowly, until every journal event has arrived and the previews stop.
    const journalIds: string[] = [];
    const previewIds: string[] = [];
    const wantJournal = new Set(journalEvents.map(eventIdOf));
    let seenJournal = 0;
    const it = sub[Symbol.asyncIterator]();
    const deadline = Date.now() + 60_000;
    for (;;) {
      // A failure ends the read as the end does; err() below says why.
      const reading = it.next().catch((): IteratorResult<Delivery<JetloopEvent>> => ({ done: true, value: undefined }));
      const next = await Promise.race([reading, sleep(seenJournal >= wantJournal.size ? 300 : 10_000).then(() => "idle" as const)]);
      if (next === "idle") break;
      if (next.done) break;
      const d = next.value;
      const id = eventIdOf(d.event);
      if (d.journalSeq > 0) {
        journalIds.push(id);
        if (wantJournal.has(id)) seenJournal++;
      } else {
        previewIds.push(id);
      }
      if (o.readDelayMs > 0) await sleep(o.readDelayMs);
      else if (journalIds.length % 64 === 0) await new Promise((r) => setImmediate(r));
      if (Date.now() > deadline) break;
    }
    clearInterval(sampler);
    sampler = undefined;

    const stats = sub.stats();
    const err = sub.err();
    await sub.close();
    const varz = (await (await fetch(`${server.monitorUrl}/varz`)).json()) as { slow_consumers?: number };
    const prev = tally(previewEvents.map(eventIdOf), previewIds);
    const previews = {
      published: prev.published,
      delivered: prev.delivered,
      dropped: stats.dropped,
      unaccounted: prev.published - (prev.delivered - prev.duplicated) - stats.dropped,
      duplicated: prev.duplicated,
      unexpected: prev.unexpected,
    };
    const journal = tally(wantJournal, journalIds);
    const retainedDeltaBytes = stalled - before;
    const peakDeltaBytes = peak - before;
    const r = record(
      ctx,
      SLOW_CONSUMER.id,
      SLOW_CONSUMER.title,
      server.version,
      t0,
      [
        row("previews (ephemeral)", { published: previews.published, delivered: previews.delivered, lost: previews.unaccounted, duplicated: previews.duplicated }, {
          "dropped (counted)": previews.dropped,
          "ephemeral buffer": o.ephemeralBuffer,
        }),
        row("journal events (enduring)", journal),
      ],
      {
        "burst payload (MiB)": Number((burstBytes / MiB).toFixed(1)),
        "heap retained while stalled, above baseline (MiB)": Number((retainedDeltaBytes / MiB).toFixed(2)),
        "heap peak above baseline, garbage included (MiB)": Number((peakDeltaBytes / MiB).toFixed(2)),
        "server slow-consumer events": varz.slow_consumers ?? 0,
        "subscription err": err?.message ?? "none",
      },
    );
    return { record: r, previews, journal, retainedDeltaBytes, peakDeltaBytes, burstBytes, serverSlowConsumers: varz.slow_consumers ?? 0, err };
  } finally {
    if (sampler) clearInterval(sampler);
    await producer.close();
    await reader.close();
    await server.close();
  }
}
