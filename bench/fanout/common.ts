/** What the fan-out trials share: the sizes, the tally of deliveries per loop, opening many at once, draining the stream between trials. */

import { type Setup } from "../lib/context.js";
import { enduringEvent, publishInChunks, type Coordinates } from "../lib/events.js";
import { gc, nowMs, sleep } from "../lib/stats.js";

export const SESSIONS = 50;
export const LOOPS_PER_SESSION = 20;
export const EVENTS_PER_LOOP = 5;
export const OPEN_CONCURRENCY = 32;
/** The scale trial: live loop subscriptions in one process (sessions × loops). */
export const SCALE_SESSIONS = 50;
export const SCALE_LOOPS_PER_SESSION = 200;
export const SCALE_EVENTS_PER_LOOP = 2;
/** The child's rounds: long enough (50,000 events) that a round is not one scheduling accident. */
export const CHILD_EVENTS_PER_LOOP = 5;

export interface Trial {
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
export async function drain(s: Setup): Promise<number> {
  await sleep(1000);
  const names: string[] = [];
  for await (const c of s.jsm.consumers.list(s.stream)) names.push(c.name);
  await openAll(names.length, (i) => s.jsm.consumers.delete(s.stream, names[i]!).catch(() => false));
  return names.length;
}

export async function settle(): Promise<void> {
  await sleep(200);
  gc();
  await sleep(50);
  gc();
}

/** Opens `count` things `concurrency` at a time. */
export async function openAll<T>(count: number, open: (i: number) => Promise<T>, concurrency = OPEN_CONCURRENCY): Promise<T[]> {
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
export class Tally {
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

export async function publishAllLoops(s: Setup, loops: Coordinates[], perLoop = EVENTS_PER_LOOP): Promise<number> {
  const events = [];
  for (let k = 0; k < perLoop; k++) for (const c of loops) events.push(enduringEvent(c));
  const t0 = nowMs();
  await publishInChunks(s.bus, events);
  return t0;
}

export async function waitTotal(t: Tally, expected: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (t.total < expected) {
    if (Date.now() > deadline) throw new Error(`fan-out: ${t.total} of ${expected} deliveries`);
    await sleep(2);
  }
}

/** Each loop's tally slot, by loop id. */
export function loopIndex(loops: readonly Coordinates[]): ReadonlyMap<string, number> {
  return new Map(loops.map((c, i) => [c.loopId, i]));
}

/**
 * Reads `sub` into `tally` (the slot of each delivery's loop in `index`), counting
 * deliveries out of journal order; with `expected`, a delivery of another loop is foreign.
 */
export async function readInto(sub: AsyncIterable<{ readonly journalSeq: number; readonly event: unknown }>, tally: Tally, index: ReadonlyMap<string, number>, expected?: number): Promise<void> {
  let last = 0;
  for await (const d of sub) {
    if (d.journalSeq <= last) tally.disorder++;
    last = d.journalSeq;
    const i = index.get((d.event as { loopId?: string }).loopId ?? "");
    if (i === undefined) tally.foreign++;
    else tally.hit(i, expected === undefined || i === expected);
  }
}
