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
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { DeliverPolicy, type ConsumerMessages } from "@nats-io/jetstream";
import { jetstream } from "@nats-io/jetstream";
import { connect as natsConnect, type NatsConnection, type Subscription as NatsSub } from "@nats-io/transport-node";
import { connect, type Jetloop, type Subscription } from "../src/index.js";
import { type BenchContext, type Row, type Setup, compareRow } from "./lib/context.js";
import { coordinates, enduringEvent, publishInChunks, type Coordinates } from "./lib/events.js";
import { pinning, type Pinning } from "./lib/pinning.js";
import { gc, nowMs, sleep } from "./lib/stats.js";
import { consumerCount } from "../test/harness/stream-state.js";
import type { FeedMode } from "../src/index.js";

const SESSIONS = 50;
const LOOPS_PER_SESSION = 20;
const EVENTS_PER_LOOP = 5;
const OPEN_CONCURRENCY = 32;
/** The scale trial: live loop subscriptions in one process (sessions × loops). */
const SCALE_SESSIONS = 50;
const SCALE_LOOPS_PER_SESSION = 200;
const SCALE_EVENTS_PER_LOOP = 2;
/** The child's rounds: long enough (50,000 events) that a round is not one scheduling accident. */
const CHILD_EVENTS_PER_LOOP = 5;

interface Trial {
  openMs: number;
  heapPerSubKiB: number;
  deliveriesPerSec: number;
  appendsPerSec: number;
  closeMs: number;
}

/**
 * Makes sure the stream has no consumers before a trial. Returns how many were still there
 * a second after the previous trial closed everything: NATS.js ordered consumers are not
 * deleted on close, they expire after their inactive threshold (5 minutes), and
 * nats-server 2.15 allows 1,000 consumers per stream by default. Leftovers are deleted.
 */
async function drain(s: Setup): Promise<number> {
  await sleep(1000);
  const names: string[] = [];
  for await (const c of s.jsm.consumers.list(s.stream)) names.push(c.name);
  await openAll(names.length, (i) => s.jsm.consumers.delete(s.stream, names[i]!).catch(() => false));
  return names.length;
}

async function settle(): Promise<void> {
  await sleep(200);
  gc();
  await sleep(50);
  gc();
}

/** Opens `count` things `concurrency` at a time. */
async function openAll<T>(count: number, open: (i: number) => Promise<T>, concurrency = OPEN_CONCURRENCY): Promise<T[]> {
  const out = new Array<T>(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        out[i] = await open(i);
      }
    }),
  );
  return out;
}

/** Per loop: deliveries seen and deliveries of a foreign loop (must stay 0). */
class Tally {
  readonly got: Int32Array;
  foreign = 0;
  total = 0;
  constructor(loops: number) {
    this.got = new Int32Array(loops);
  }
  hit(loop: number, ok: boolean): void {
    if (ok) this.got[loop]! += 1;
    else this.foreign++;
    this.total++;
  }
  /** Deliveries that did not come in journal order. */
  disorder = 0;
  verify(expected: number): void {
    if (this.foreign !== 0) throw new Error(`fan-out: ${this.foreign} deliveries reached the wrong loop`);
    if (this.disorder !== 0) throw new Error(`fan-out: ${this.disorder} deliveries out of journal order`);
    for (let i = 0; i < this.got.length; i++) {
      if (this.got[i] !== expected) throw new Error(`fan-out: loop ${i} received ${this.got[i]} of ${expected}`);
    }
  }
}

async function publishAllLoops(s: Setup, loops: Coordinates[], perLoop = EVENTS_PER_LOOP): Promise<number> {
  const events = [];
  for (let k = 0; k < perLoop; k++) for (const c of loops) events.push(enduringEvent(c));
  const t0 = nowMs();
  await publishInChunks(s.bus, events);
  return t0;
}

async function waitTotal(t: Tally, expected: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (t.total < expected) {
    if (Date.now() > deadline) throw new Error(`fan-out: ${t.total} of ${expected} deliveries`);
    await sleep(2);
  }
}

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

async function jetloopTrial(ctx: BenchContext, s: Setup, loops: Coordinates[]): Promise<Trial> {
  const reader: Jetloop = await connect({ servers: ctx.server.url, namespace: s.ns, name: "jetloop-fanout" });
  const tally = new Tally(loops.length);
  let subs: Subscription<unknown>[] = [];
  let readers: Promise<void>[] = [];
  return trial(s, loops, {
    tally,
    async open() {
      subs = (await openAll(loops.length, (i) =>
        reader.subscribeEvents({ enduring: { loops: [loops[i]!.loopId] } }, { start: "new" }),
      )) as Subscription<unknown>[];
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

async function rawTrial(ctx: BenchContext, s: Setup, loops: Coordinates[]): Promise<Trial> {
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
function rawFeedSubscriptions(nc: NatsConnection, s: Setup, loops: Coordinates[], tally: Tally): NatsSub[] {
  const decoder = new TextDecoder();
  return loops.map((c, i) => {
    const needle = `"loop_id":"${c.loopId}"`;
    return nc.subscribe(`${s.ns}.feed.*.${c.loopId}.>`, {
      callback: (_err, m) => tally.hit(i, m.headers?.get("Nats-Sequence") !== "" && decoder.decode(m.data).includes(needle)),
    });
  });
}

/** The floor of the feed: the stream republishes to {ns}.feed.> (provisioned), one raw core subscription per loop. */
async function republishTrial(ctx: BenchContext, s: Setup, loops: Coordinates[]): Promise<Trial> {
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


interface ScaleTrial extends ChildRates {
  mode: FeedMode;
  subs: number;
  openMs: number;
  heapPerSubKiB: number;
  /** Appends from this process, without and then with the subscriptions (same trial). */
  appendsWithout: number;
  appendsWith: number;
  /** Core subscriptions on the viewers' connection (the server's count; includes jetloop's inbox and advisory ones). */
  coreSubs: number;
  consumers: number;
  replayed: number;
  closeMs: number;
}

/** The appending child process: one round of `perLoop` events to every loop per call. */
interface Appender {
  readonly pid: number;
  round(perLoop: number): Promise<number>;
  close(): Promise<void>;
}

function startAppender(ctx: BenchContext, s: Setup, loops: Coordinates[]): Appender {
  const dir = mkdtempSync(join(tmpdir(), "jetloop-fanout-"));
  const file = join(dir, "loops.json");
  writeFileSync(file, JSON.stringify(loops));
  const script = fileURLToPath(new URL("./lib/appender.ts", import.meta.url));
  const child = spawn(process.execPath, ["--import", "tsx", script, ctx.server.url, s.ns, file], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    pid: child.pid!,
    async round(perLoop) {
      child.stdin.write(`${JSON.stringify({ perLoop })}\n`);
      const r = await lines.next();
      if (r.done) throw new Error("fan-out: the appender process ended");
      return (JSON.parse(r.value) as { ms: number }).ms;
    },
    async close() {
      child.stdin.end();
      await new Promise((resolve) => child.once("exit", resolve));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function coreSubscriptions(ctx: BenchContext, nc: NatsConnection): Promise<number> {
  const r = (await (await fetch(`${ctx.server.monitorUrl}/connz?cid=${nc.info!.client_id}`)).json()) as { connections: { subscriptions: number }[] };
  return r.connections[0]!.subscriptions;
}

/** A child round's append rate without and with the viewers, on the same CPUs and pinned apart (NaN when they cannot be). */
interface ChildRates {
  childWithout: number;
  childWith: number;
  pinnedWithout: number;
  pinnedWith: number;
}

/** Viewers opened for `childRates`: their tally and how to close them. */
interface Viewers {
  readonly tally: Tally;
  /** Deliveries the tally expects before the child's rounds (rounds the caller appended itself). */
  readonly before: number;
  close(): Promise<void>;
}

/**
 * The child's appends without, with and again without `open`'s viewers in this process:
 * one round on the same CPUs as the viewers and, where possible, one with them pinned
 * apart. The rate without is the mean of the rounds before and after, so a drift over
 * the trial (a growing store, the machine's other work) weighs on both sides alike.
 */
async function childRates(ctx: BenchContext, loops: Coordinates[], appender: Appender, pin: Pinning | undefined, open: () => Promise<Viewers>): Promise<ChildRates> {
  const perRound = loops.length * CHILD_EVENTS_PER_LOOP;
  const rate = (ms: number) => (perRound / ms) * 1000;
  const round = async () => {
    await settle();
    const shared = rate(await appender.round(CHILD_EVENTS_PER_LOOP));
    if (pin === undefined) return { shared, pinned: NaN };
    await settle();
    return { shared, pinned: rate(await pin.run([ctx.server.pid!, appender.pid], () => appender.round(CHILD_EVENTS_PER_LOOP))) };
  };
  const before = await round();
  const viewers = await open();
  let during: { shared: number; pinned: number };
  try {
    during = await round();
    const rounds = pin ? 2 : 1;
    await waitTotal(viewers.tally, viewers.before + rounds * perRound);
    await sleep(200);
    viewers.tally.verify(viewers.before / loops.length + rounds * CHILD_EVENTS_PER_LOOP);
  } finally {
    await viewers.close();
  }
  const after = await round();
  return {
    childWithout: (before.shared + after.shared) / 2,
    childWith: during.shared,
    pinnedWithout: (before.pinned + after.pinned) / 2,
    pinnedWith: during.pinned,
  };
}

/** Each loop's tally slot, by loop id. */
function loopIndex(loops: readonly Coordinates[]): ReadonlyMap<string, number> {
  return new Map(loops.map((c, i) => [c.loopId, i]));
}

/**
 * Reads `sub` into `tally` (the slot of each delivery's loop in `index`), counting
 * deliveries out of journal order; with `expected`, a delivery of another loop is foreign.
 */
async function readInto(sub: AsyncIterable<{ readonly journalSeq: number; readonly event: unknown }>, tally: Tally, index: ReadonlyMap<string, number>, expected?: number): Promise<void> {
  let last = 0;
  for await (const d of sub) {
    if (d.journalSeq <= last) tally.disorder++;
    last = d.journalSeq;
    const i = index.get((d.event as { loopId?: string }).loopId ?? "");
    if (i === undefined) tally.foreign++;
    else tally.hit(i, expected === undefined || i === expected);
  }
}

/**
 * 10,000 live loop subscriptions in one process, in one feed mode: the time to open them,
 * client heap per subscription, the append rate while they exist against the rate with
 * none (same trial, same events; appended from this process, and from a child process
 * with the viewers on the same CPUs and pinned apart), each subscription receiving exactly
 * its loop's events in order, and a replay while they watch — on nats-server 2.15 a
 * consumer per viewer would stop at 1,000.
 */
async function scaleTrial(ctx: BenchContext, s: Setup, loops: Coordinates[], sdk: Sdk, appender: Appender, mode: FeedMode, pin: Pinning | undefined): Promise<ScaleTrial> {
  const reader: Jetloop = await sdk.connect({ servers: ctx.server.url, namespace: s.ns, name: "jetloop-fanout-scale", feed: mode });
  try {
    const perRound = loops.length * SCALE_EVENTS_PER_LOOP;
    const rate = (ms: number) => (perRound / ms) * 1000;
    const firstSeq = (await s.jsm.streams.info(s.stream)).state.last_seq + 1;
    // A warm-up round each, so neither "without" figure pays for compiling the append path.
    await publishAllLoops(s, loops, SCALE_EVENTS_PER_LOOP);
    await appender.round(CHILD_EVENTS_PER_LOOP);
    await settle();
    let p0 = await publishAllLoops(s, loops, SCALE_EVENTS_PER_LOOP);
    const appendsWithout = rate(nowMs() - p0);

    const measured = { openMs: 0, heapPerSubKiB: 0, appendsWith: 0, consumers: 0, replayed: 0, coreSubs: 0, closeMs: 0 };
    const child = await childRates(ctx, loops, appender, pin, async () => {
      await settle();
      const heap0 = process.memoryUsage().heapUsed;
      const t0 = nowMs();
      const subs = (await openAll(loops.length, (i) => reader.subscribeEvents({ sessions: [loops[i]!.sessionId], enduring: { loops: [loops[i]!.loopId] } }), 1000)) as Subscription<unknown>[];
      measured.openMs = nowMs() - t0;
      await settle();
      measured.heapPerSubKiB = (process.memoryUsage().heapUsed - heap0) / loops.length / 1024;
      const tally = new Tally(loops.length);
      const index = loopIndex(loops);
      const readers = subs.map((sub, i) => readInto(sub, tally, index, i));
      p0 = await publishAllLoops(s, loops, SCALE_EVENTS_PER_LOOP);
      measured.appendsWith = rate(nowMs() - p0);
      await waitTotal(tally, perRound);
      return {
        tally,
        before: perRound,
        async close() {
          measured.consumers = await consumerCount(s.jsm, s.stream);
          // A replay needs a consumer: with a consumer per viewer, 2.15 would refuse it here.
          for await (const _ of reader.replay({ enduring: "all", sessions: [loops[0]!.sessionId] }, { fromSeq: firstSeq })) measured.replayed++;
          // Every round so far (here: warm-up, without and with; the child's: warm-up, two without, one or two with) of the session's loops.
          const sessionLoops = loops.filter((c) => c.sessionId === loops[0]!.sessionId).length;
          const expected = sessionLoops * (3 * SCALE_EVENTS_PER_LOOP + (pin ? 5 : 3) * CHILD_EVENTS_PER_LOOP);
          if (measured.replayed !== expected) throw new Error(`fan-out: the replay read ${measured.replayed} of ${expected} events`);
          measured.coreSubs = await coreSubscriptions(ctx, reader.nc);
          const c0 = nowMs();
          await Promise.all(subs.map((sub) => sub.close()));
          measured.closeMs = nowMs() - c0;
          await Promise.all(readers);
        },
      };
    });
    return { mode, subs: loops.length, appendsWithout, ...measured, ...child };
  } finally {
    await reader.close();
  }
}

/**
 * The feed's own cost to the appends, without jetloop: 10,000 raw core subscriptions on
 * the feed (`rawFeedSubscriptions`) in this process.
 */
async function floorAppendTrial(ctx: BenchContext, s: Setup, loops: Coordinates[], appender: Appender, pin: Pinning | undefined): Promise<ChildRates> {
  const nc: NatsConnection = await natsConnect({ servers: ctx.server.url, name: "raw-republish-appends" });
  try {
    return await childRates(ctx, loops, appender, pin, async () => {
      const tally = new Tally(loops.length);
      const subs = rawFeedSubscriptions(nc, s, loops, tally);
      await nc.flush();
      return {
        tally,
        before: 0,
        async close() {
          for (const sub of subs) sub.unsubscribe();
          await nc.flush();
        },
      };
    });
  } finally {
    await nc.close();
  }
}

/**
 * One jetloop viewer of the whole namespace receiving the same events as the 10,000: what
 * decoding and validating every event costs the appends with no fan-out at all.
 */
async function wholeViewTrial(ctx: BenchContext, s: Setup, loops: Coordinates[], sdk: Sdk, appender: Appender, pin: Pinning | undefined): Promise<ChildRates> {
  const reader: Jetloop = await sdk.connect({ servers: ctx.server.url, namespace: s.ns, name: "jetloop-fanout-whole", feed: "namespace" });
  const index = loopIndex(loops);
  try {
    return await childRates(ctx, loops, appender, pin, async () => {
      const tally = new Tally(loops.length);
      const sub = await reader.subscribeEvents({ enduring: "all" });
      const reading = readInto(sub, tally, index);
      return {
        tally,
        before: 0,
        async close() {
          await sub.close();
          await reading;
        },
      };
    });
  } finally {
    await reader.close();
  }
}

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

interface Sdk {
  readonly connect: typeof connect;
}

/**
 * The SDK the scale trial measures: the compiled package (dist/, after `npm run build`),
 * what an application runs. The benchmarks otherwise run the TypeScript through tsx, whose
 * esbuild transform names every arrow function with a property of its own: about
 * 1.5 KiB more per subscription here, which no user pays.
 */
async function compiledSdk(ctx: BenchContext): Promise<Sdk> {
  const dist = new URL("../dist/index.js", import.meta.url);
  if (existsSync(dist)) return (await import(dist.href)) as Sdk;
  ctx.log("fanout scale: no dist/ (run `npm run build`); measuring the TypeScript sources through tsx");
  return { connect };
}

/** The 10,000-subscription rows: jetloop in both feed modes against the raw republish floor and against no subscriptions. */
export async function runScale(ctx: BenchContext): Promise<Row[]> {
  const sdk = await compiledSdk(ctx);
  const s = await ctx.setup("fanout-scale");
  const loopsPerSession = ctx.options.quick ? 20 : SCALE_LOOPS_PER_SESSION;
  const trials: Record<FeedMode, ScaleTrial[]> = { loop: [], namespace: [] };
  const floor: Trial[] = [];
  const floorAppends: ChildRates[] = [];
  const whole: ChildRates[] = [];
  const loops: Coordinates[] = [];
  for (let i = 0; i < SCALE_SESSIONS; i++) {
    const sessionId = coordinates().sessionId;
    for (let l = 0; l < loopsPerSession; l++) loops.push(coordinates(sessionId));
  }
  const split = pinning();
  const pin = typeof split === "string" ? undefined : split;
  ctx.log(`fanout scale: ${pin ? pin.describe : `no pinned rounds (${split as string})`}`);
  const rates = (r: ChildRates) =>
    `appends from a child ${Math.round(r.childWith)}/s with vs ${Math.round(r.childWithout)}/s without` +
    (pin ? `, pinned apart ${Math.round(r.pinnedWith)}/s vs ${Math.round(r.pinnedWithout)}/s` : "");
  const appender = startAppender(ctx, s, loops);
  try {
    const reps = Math.max(1, Math.min(ctx.options.reps, ctx.options.quick ? 1 : 3));
    for (let r = 0; r < reps; r++) {
      const modes: FeedMode[] = r % 2 === 0 ? ["loop", "namespace"] : ["namespace", "loop"];
      for (const mode of modes) {
        const t = await scaleTrial(ctx, s, loops, sdk, appender, mode, pin);
        trials[mode].push(t);
        ctx.log(
          `fanout scale ${mode} rep ${r + 1}: ${t.subs} live subs open ${t.openMs.toFixed(0)} ms, heap ${t.heapPerSubKiB.toFixed(2)} KiB/sub, appends here ${Math.round(t.appendsWith)}/s with them vs ${Math.round(t.appendsWithout)}/s without, ${rates(t)}, ${t.coreSubs} core subscriptions, ${t.consumers} consumers, replay read ${t.replayed}, close ${t.closeMs.toFixed(0)} ms`,
        );
      }
      whole.push(await wholeViewTrial(ctx, s, loops, sdk, appender, pin));
      ctx.log(`fanout scale whole view rep ${r + 1}: one viewer of every loop, ${rates(whole.at(-1)!)}`);
      floor.push(await republishTrial(ctx, s, loops));
      floorAppends.push(await floorAppendTrial(ctx, s, loops, appender, pin));
      ctx.log(`fanout scale floor rep ${r + 1}: raw core subs, ${rates(floorAppends.at(-1)!)}`);
      ctx.log(`fanout scale floor rep ${r + 1}: ${loops.length} raw core subs open ${floor.at(-1)!.openMs.toFixed(0)} ms, heap ${floor.at(-1)!.heapPerSubKiB.toFixed(2)} KiB/sub`);
    }
  } finally {
    await appender.close();
    await s.close();
  }
  const n = loops.length.toLocaleString("en-US");
  const bench = "7 fan-out";
  const floorLabel = `${n} raw core subs on the feed`;
  const without = "no subscriptions (same run)";
  /**
   * The child's appends on the same CPUs as the viewers and, where possible, pinned apart
   * from them. A target is judged pinned apart: what the viewers cost the server and the
   * appender. On the same CPUs the viewers' own work on every event they receive weighs in
   * too, whatever their number (the one-viewer and raw rows beside it show how much).
   */
  const childRows = (what: string, r: ChildRates[], target = "") => [
    compareRow({ bench, metric: `appends from a child process with ${what}, same CPUs`, unit: "events/s", raw: without, target: pin ? "" : target }, r.map((x) => x.childWith), r.map((x) => x.childWithout)),
    ...(pin ? [compareRow({ bench, metric: `appends from a child process with ${what}, pinned apart`, unit: "events/s", raw: without, target }, r.map((x) => x.pinnedWith), r.map((x) => x.pinnedWithout))] : []),
  ];
  const rows: Row[] = [];
  for (const mode of ["loop", "namespace"] as const) {
    const t = trials[mode];
    const m = (metric: string) => `${metric} (feed: ${mode})`;
    rows.push(
      compareRow({ bench, metric: m(`open ${n} live subs`), unit: "ms", raw: floorLabel }, t.map((x) => x.openMs), floor.map((x) => x.openMs)),
      compareRow({ bench, metric: m(`client heap per sub, ${n}`), unit: "KiB", raw: floorLabel }, t.map((x) => x.heapPerSubKiB), floor.map((x) => x.heapPerSubKiB)),
      ...childRows(`${n} live subs (feed: ${mode})`, t, ">= 0.8"),
      compareRow({ bench, metric: m(`appends from the viewers' process with ${n} live subs`), unit: "events/s", raw: without }, t.map((x) => x.appendsWith), t.map((x) => x.appendsWithout)),
      compareRow({ bench, metric: m(`close ${n} live subs`), unit: "ms", raw: floorLabel }, t.map((x) => x.closeMs), floor.map((x) => x.closeMs)),
    );
  }
  rows.push(...childRows("one jetloop viewer of every loop (the same events, no fan-out)", whole), ...childRows(`${n} raw core subs on the feed (no jetloop: the floor)`, floorAppends));
  return rows;
}
