/** The 10,000-subscription trial: both feed modes against the floor, with the appends from this process and from a pinned child. */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { connect, type Jetloop, type Subscription } from "../../src/index.js";
import { type BenchContext, type Row, type Setup, compareRow } from "../lib/context.js";
import { coordinates, type Coordinates } from "../lib/events.js";
import { pinning, type Pinning } from "../lib/pinning.js";
import { nowMs, sleep } from "../lib/stats.js";
import { consumerCount } from "../../test/harness/stream-state.js";
import type { FeedMode } from "../../src/index.js";
import { rawFeedSubscriptions, republishTrial } from "./trials.js";
import { SCALE_SESSIONS, SCALE_LOOPS_PER_SESSION, SCALE_EVENTS_PER_LOOP, CHILD_EVENTS_PER_LOOP, type Trial, settle, openAll, Tally, publishAllLoops, waitTotal, loopIndex, readInto } from "./common.js";

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
  const script = fileURLToPath(new URL("../lib/appender.ts", import.meta.url));
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
  const dist = new URL("../../dist/index.js", import.meta.url);
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

