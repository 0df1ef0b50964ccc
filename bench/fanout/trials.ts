/** The 1,000-subscription trial: jetloop against raw ordered consumers and the raw republish floor, in one process. */

import { DeliverPolicy, type ConsumerMessages } from "@nats-io/jetstream";
import { jetstream } from "@nats-io/jetstream";
import { connect as natsConnect, type NatsConnection, type Subscription as NatsSub } from "@nats-io/transport-node";
import { connect, type Jetloop, type Subscription } from "../../src/index.js";
import { type BenchContext, type Setup } from "../lib/context.js";
import { type Coordinates } from "../lib/events.js";
import { nowMs, sleep } from "../lib/stats.js";
import { EVENTS_PER_LOOP, type Trial, settle, openAll, Tally, publishAllLoops, waitTotal } from "./common.js";

/**
 * One contender's subscriptions, one per loop, counting into `tally`. A trial times
 * `open` and `close`; `read` starts the readers after the heap is measured, and `release`
 * (untimed) waits for them and closes the contender's connection.
 */
interface Contender {
  readonly tally: Tally;
  open(): Promise<void>;
  read(): void;
  close(): Promise<void>;
  release(): Promise<void>;
}

async function trial(s: Setup, loops: Coordinates[], c: Contender): Promise<Trial> {
  await settle();
  const heap0 = process.memoryUsage().heapUsed;
  const t0 = nowMs();
  await c.open();
  const openMs = nowMs() - t0;
  await settle();
  const heap1 = process.memoryUsage().heapUsed;
  c.read();
  const expected = loops.length * EVENTS_PER_LOOP;
  const p0 = await publishAllLoops(s, loops);
  const published = nowMs() - p0;
  await waitTotal(c.tally, expected);
  const rate = (expected / (nowMs() - p0)) * 1000;
  const appendsPerSec = (expected / published) * 1000;
  await sleep(100); // anything extra would show up now
  c.tally.verify(EVENTS_PER_LOOP);
  const c0 = nowMs();
  await c.close();
  const closeMs = nowMs() - c0;
  await c.release();
  return {
    openMs,
    heapPerSubKiB: (heap1 - heap0) / loops.length / 1024,
    deliveriesPerSec: rate,
    appendsPerSec,
    closeMs,
  };
}

export async function jetloopTrial(ctx: BenchContext, s: Setup, loops: Coordinates[]): Promise<Trial> {
  const reader: Jetloop = await connect({ servers: ctx.server.url, namespace: s.ns, name: "jetloop-fanout" });
  const tally = new Tally(loops.length);
  let subs: Subscription<unknown>[] = [];
  let readers: Promise<void>[] = [];
  return trial(s, loops, {
    tally,
    async open() {
      subs = (await openAll(loops.length, (i) =>
        reader.subscribeEvents({ enduring: { loops: [loops[i]!.loopId] } }, { start: "new" }),
      ));
    },
    read() {
      readers = subs.map(async (sub, i) => {
        for await (const d of sub) tally.hit(i, (d.event as { loopId?: string }).loopId === loops[i]!.loopId);
      });
    },
    async close() {
      await Promise.all(subs.map((sub) => sub.close()));
    },
    async release() {
      await Promise.all(readers);
      await reader.close();
    },
  });
}

export async function rawTrial(ctx: BenchContext, s: Setup, loops: Coordinates[]): Promise<Trial> {
  const nc: NatsConnection = await natsConnect({ servers: ctx.server.url, name: "raw-fanout" });
  const js = jetstream(nc);
  const tally = new Tally(loops.length);
  const decoder = new TextDecoder();
  let streams: ConsumerMessages[] = [];
  let readers: Promise<void>[] = [];
  return trial(s, loops, {
    tally,
    async open() {
      streams = await openAll(loops.length, async (i) => {
        const loop = loops[i]!.loopId;
        const consumer = await js.consumers.get(s.stream, {
          filter_subjects: [`${s.ns}.journal.*.${loop}.>`, `${s.ns}.journal.*._.>`],
          deliver_policy: DeliverPolicy.New,
        });
        return consumer.consume({ max_messages: 256 });
      });
    },
    read() {
      readers = streams.map(async (messages, i) => {
        const needle = `"loop_id":"${loops[i]!.loopId}"`;
        for await (const m of messages) tally.hit(i, decoder.decode(m.data).includes(needle));
      });
    },
    async close() {
      for (const m of streams) m.stop();
      await Promise.all(streams.map((m) => m.close().catch(() => undefined)));
    },
    async release() {
      await Promise.all(readers);
      await nc.close();
    },
  });
}

/**
 * Raw core subscriptions on the feed, one per loop, each reading the sequence header and
 * searching the payload's text for its loop (the feed's floor: no seam, no gap checks, no
 * decoding). Core subscriptions read in their callbacks, from the moment they exist.
 */
export function rawFeedSubscriptions(nc: NatsConnection, s: Setup, loops: Coordinates[], tally: Tally): NatsSub[] {
  const decoder = new TextDecoder();
  return loops.map((c, i) => {
    const needle = `"loop_id":"${c.loopId}"`;
    return nc.subscribe(`${s.ns}.feed.*.${c.loopId}.>`, {
      callback: (_err, m) => tally.hit(i, m.headers?.get("Nats-Sequence") !== "" && decoder.decode(m.data).includes(needle)),
    });
  });
}

/** The floor of the feed: the stream republishes to {ns}.feed.> (provisioned), one raw core subscription per loop. */
export async function republishTrial(ctx: BenchContext, s: Setup, loops: Coordinates[]): Promise<Trial> {
  const nc: NatsConnection = await natsConnect({ servers: ctx.server.url, name: "raw-republish" });
  const tally = new Tally(loops.length);
  let subs: NatsSub[] = [];
  return trial(s, loops, {
    tally,
    async open() {
      subs = rawFeedSubscriptions(nc, s, loops, tally);
      await nc.flush();
    },
    read() {},
    async close() {
      for (const sub of subs) sub.unsubscribe();
      await nc.flush();
    },
    release: () => nc.close(),
  });
}
