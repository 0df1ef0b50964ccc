// Load and bookkeeping for the reliability scenarios: a paced, pipelined producer that
// records how every append ended, a collector that counts what a subscription yields,
// and an audit that reads the stream directly (not through jetloop) to count what it holds.
import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { pino, type Logger } from "pino";
import { createEvent, isJetloopError, newId, type Delivery, type Jetloop, type JetloopEvent, type Subscription } from "../../../src/index.js";
import { sleep } from "../async.js";

export interface Coords {
  readonly sessionId: string;
  readonly loopId: string;
  readonly turnId: string;
  readonly stepId: string;
}

export function newCoords(sessionId: string = newId()): Coords {
  return { sessionId, loopId: newId(), turnId: newId(), stepId: newId() };
}

/** An enduring event (a decision on one tool execution). */
export function enduring(c: Coords): JetloopEvent {
  return createEvent("PermissionDecided", { ...c, toolExecutionId: newId(), effect: "approve" });
}

/** An ephemeral event (a preview); `summary` pads it to roughly `size` bytes. */
export function ephemeral(c: Coords, size = 0): JetloopEvent {
  return createEvent("ToolCallStarted", { ...c, toolExecutionId: newId(), toolName: "bash", ...(size > 0 ? { summary: "s".repeat(Math.min(size, 400)) } : {}) });
}

export function eventIdOf(e: JetloopEvent): string {
  return (e as { eventId: string }).eventId;
}

// ---------------------------------------------------------------------------------------
// Producer

export type AppendOutcome =
  | { readonly eventId: string; readonly status: "acked"; readonly seq: number; readonly duplicate: boolean; readonly at: number; readonly ms: number }
  | { readonly eventId: string; readonly status: "failed"; readonly code: string; readonly typed: boolean; readonly message: string; readonly at: number; readonly ms: number };

export interface ProduceOptions {
  readonly bus: Jetloop;
  readonly events: readonly JetloopEvent[];
  /** Appends in flight at once. Default 16. */
  readonly concurrency?: number;
  /** Appends started per second (paced); default unpaced. */
  readonly ratePerSec?: number;
  /** Called after each settled append with the number settled so far. */
  readonly onSettled?: (settled: number, outcome: AppendOutcome) => void;
}

/** A running producer: `done` resolves with one outcome per event, in input order. */
export interface Producer {
  readonly done: Promise<AppendOutcome[]>;
  /** Appends started and not yet settled. */
  readonly inFlight: () => number;
  readonly started: () => number;
  readonly settled: () => number;
}

/**
 * A fault injected mid-run: `run` starts once `after` appends have settled (pass
 * `onSettled` to the producer); `done` resolves when it has finished (at once if it never
 * started).
 */
export function faultAfter(after: number, run: () => Promise<void>): { readonly onSettled: (settled: number) => void; done(): Promise<void> } {
  let started: Promise<void> | undefined;
  return {
    onSettled: (settled) => {
      if (settled === after && !started) started = run();
    },
    done: () => started ?? Promise.resolve(),
  };
}

/** Publishes the events through `bus.publish`, recording how each append ended. */
export function produce(opts: ProduceOptions): Producer {
  const concurrency = opts.concurrency ?? 16;
  const outcomes: AppendOutcome[] = new Array<AppendOutcome>(opts.events.length);
  let next = 0;
  let started = 0;
  let settled = 0;
  const t0 = Date.now();
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= opts.events.length) return;
      if (opts.ratePerSec !== undefined) {
        const due = t0 + (i * 1000) / opts.ratePerSec;
        if (due > Date.now()) await sleep(due - Date.now());
      }
      const event = opts.events[i]!;
      const begun = Date.now();
      started++;
      let o: AppendOutcome;
      try {
        const r = await opts.bus.publish(event);
        o = { eventId: eventIdOf(event), status: "acked", seq: r.journalSeq, duplicate: r.duplicate, at: begun, ms: Date.now() - begun };
      } catch (e) {
        o = {
          eventId: eventIdOf(event),
          status: "failed",
          code: isJetloopError(e) ? e.code : e instanceof Error ? e.name : "unknown",
          typed: isJetloopError(e),
          message: e instanceof Error ? e.message : String(e),
          at: begun,
          ms: Date.now() - begun,
        };
      }
      outcomes[i] = o;
      settled++;
      opts.onSettled?.(settled, o);
    }
  };
  const done = Promise.all(Array.from({ length: Math.min(concurrency, opts.events.length) }, worker)).then(() => outcomes);
  return { done, inFlight: () => started - settled, started: () => started, settled: () => settled };
}

/** Counts of a producer's outcomes. */
export function summarize(outcomes: readonly AppendOutcome[]): { acked: number; failed: number; failedTyped: number; failedUntyped: number; duplicateAcks: number; byCode: Record<string, number> } {
  const byCode: Record<string, number> = {};
  let acked = 0;
  let failedTyped = 0;
  let failedUntyped = 0;
  let duplicateAcks = 0;
  for (const o of outcomes) {
    if (o.status === "acked") {
      acked++;
      if (o.duplicate) duplicateAcks++;
    } else {
      byCode[o.code] = (byCode[o.code] ?? 0) + 1;
      if (o.typed) failedTyped++;
      else failedUntyped++;
    }
  }
  return { acked, failed: failedTyped + failedUntyped, failedTyped, failedUntyped, duplicateAcks, byCode };
}

// ---------------------------------------------------------------------------------------
// Stream audit (raw NATS, not jetloop)

export interface StreamAudit {
  readonly messages: number;
  readonly firstSeq: number;
  readonly lastSeq: number;
  /** Nats-Msg-Id of every stored message, in stream order. */
  readonly ids: string[];
  /** The raw payloads, when asked for. */
  readonly payloads: Uint8Array[];
}

/** Reads every message of `stream` with an ordered consumer and returns their message ids. */
export async function auditStream(nc: NatsConnection, stream: string, opts: { payloads?: boolean; timeoutMs?: number } = {}): Promise<StreamAudit> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const info = await jsm.streams.info(stream);
  const { messages, first_seq: firstSeq, last_seq: lastSeq } = info.state;
  const ids: string[] = [];
  const payloads: Uint8Array[] = [];
  // Read by ordered consumers, each from the sequence after the last one read. After a
  // leader kill an ordered consumer can sit on a node that is catching up, or be lost with
  // it, and NATS.js's own reset may not come: a read that stalls for `stallMs` is stopped
  // and goes on under a fresh consumer, so the audit is bounded by progress, not luck.
  const stallMs = 10_000;
  const deadline = Date.now() + (opts.timeoutMs ?? 90_000);
  let next = firstSeq;
  while (messages > 0 && next <= lastSeq) {
    if (Date.now() > deadline) throw new Error(`reading ${messages} messages of ${stream} did not finish within ${opts.timeoutMs ?? 90_000} ms (read up to ${next - 1} of ${lastSeq})`);
    const consumer = await jetstream(nc).consumers.get(stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: next });
    const iter = await consumer.consume({ max_messages: 1024 });
    let progress = Date.now();
    const watch = setInterval(() => {
      if (Date.now() - progress > stallMs) iter.stop();
    }, 500);
    try {
      for await (const m of iter) {
        if (m.seq < next) continue;
        progress = Date.now();
        ids.push(m.headers?.get("Nats-Msg-Id") ?? "");
        if (opts.payloads) payloads.push(m.data);
        next = m.seq + 1;
        if (m.seq >= lastSeq) break;
      }
    } catch {
      // Stopped or failed mid-read: go on from `next` under a fresh consumer.
    } finally {
      clearInterval(watch);
      iter.stop();
    }
  }
  return { messages, firstSeq, lastSeq, ids, payloads };
}

// ---------------------------------------------------------------------------------------
// Subscription collector

export interface Collected {
  /** Event ids in delivery order (duplicates included). */
  readonly ids: string[];
  readonly seqs: number[];
  /** When each delivery arrived (ms since the epoch). */
  readonly times: number[];
  readonly deliveries: Delivery<JetloopEvent>[];
  /**
   * Resolves when the subscription's iteration ends: with the error it failed with (the
   * scenarios read it from `sub.err()`), or undefined after a close.
   */
  readonly ended: Promise<Error | undefined>;
  /** Distinct ids seen. */
  distinct(): Set<string>;
  /** Waits until every id in `want` has been seen. */
  waitForAll(want: Iterable<string>, timeoutMs: number): Promise<void>;
}

export interface CollectOptions {
  /** Durable deliveries: acknowledge each (default true for durable subscriptions). */
  readonly ack?: boolean;
  /** Called for each delivery before it is acknowledged. */
  readonly onDelivery?: (d: Delivery<JetloopEvent>) => Promise<void> | void;
  /** Keep the deliveries themselves (default false). */
  readonly keep?: boolean;
}

/** Reads a subscription in the background and records what it yields. */
export function collect(sub: Subscription<JetloopEvent>, opts: CollectOptions = {}): Collected {
  const ids: string[] = [];
  const seqs: number[] = [];
  const times: number[] = [];
  const deliveries: Delivery<JetloopEvent>[] = [];
  const seen = new Set<string>();
  const read = async (): Promise<void> => {
    for await (const d of sub) {
      await opts.onDelivery?.(d);
      const id = eventIdOf(d.event);
      ids.push(id);
      seqs.push(d.journalSeq);
      times.push(Date.now());
      seen.add(id);
      if (opts.keep) deliveries.push(d);
      const ack = (d as { ack?: () => Promise<void> }).ack;
      if (opts.ack !== false && ack) {
        // An ack that fails (server gone) leaves the message unacknowledged: it will be
        // redelivered, which the duplicate count shows.
        await ack.call(d).catch(() => undefined);
      }
    }
  };
  // A failed subscription rejects its iteration: kept here, never an unhandled rejection.
  const ended = read().then(() => undefined, (e: unknown) => e as Error);
  return {
    ids,
    seqs,
    times,
    deliveries,
    ended,
    distinct: () => new Set(seen),
    async waitForAll(want: Iterable<string>, timeoutMs: number): Promise<void> {
      const need = [...want];
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const missing = need.filter((id) => !seen.has(id)).length;
        if (missing === 0) return;
        if (Date.now() > deadline) throw new Error(`${missing} of ${need.length} events not delivered within ${timeoutMs} ms (subscription err: ${sub.err()?.message ?? "none"})`);
        await sleep(50);
      }
    },
  };
}

/** Milliseconds from `since` to the first delivery after it (-1: none came). */
export function resumedAfter(c: Collected, since: number): number {
  const t = c.times.find((x) => x >= since);
  return t === undefined ? -1 : t - since;
}

// ---------------------------------------------------------------------------------------
// Memory

let gcFn: (() => void) | undefined;

/** A full garbage collection (exposes V8's gc at runtime the first time). */
export function forceGc(): void {
  if (!gcFn) {
    setFlagsFromString("--expose_gc");
    gcFn = runInNewContext("gc") as () => void;
  }
  gcFn();
}

/** heapUsed after a full collection, in bytes. */
export function retainedHeap(): number {
  forceGc();
  return process.memoryUsage().heapUsed;
}

export const MiB = 1024 * 1024;

// ---------------------------------------------------------------------------------------
// Logs

export interface CapturedLog {
  readonly logger: Logger;
  /** Every line written, raw (JSON). */
  readonly lines: string[];
  /** Lines whose msg equals `msg`. */
  count(msg: string): number;
  text(): string;
}

/** A pino logger at `level` whose output is kept in memory, for counting and scanning. */
export function captureLogger(level: pino.Level = "debug"): CapturedLog {
  const lines: string[] = [];
  const logger = pino({ level }, { write: (s: string) => void lines.push(s) });
  return {
    logger,
    lines,
    count: (msg) => lines.filter((l) => (JSON.parse(l) as { msg?: string }).msg === msg).length,
    text: () => lines.join(""),
  };
}

// ---------------------------------------------------------------------------------------
// Append attempts

export interface AttemptCounter {
  /** Sends per event id (Nats-Msg-Id) on journal subjects: 1 = first try only. */
  readonly attempts: Map<string, number>;
  /** Events sent more than once (an ack that did not come, or came as 503). */
  resent(): number;
  /** Sends beyond the first, summed. */
  resends(): number;
}

/**
 * Counts every send of a journal append on the bus's connection, by message id, by
 * wrapping `nc.publish` (the journal writer sends each attempt with it).
 */
export function countAttempts(bus: Jetloop): AttemptCounter {
  const attempts = new Map<string, number>();
  const nc = bus.nc as NatsConnection & { publish: NatsConnection["publish"] };
  const original = nc.publish.bind(nc);
  nc.publish = (subject, payload, options) => {
    const id = options?.headers?.get("Nats-Msg-Id");
    if (id) attempts.set(id, (attempts.get(id) ?? 0) + 1);
    original(subject, payload, options);
  };
  return {
    attempts,
    resent: () => [...attempts.values()].filter((n) => n > 1).length,
    resends: () => [...attempts.values()].reduce((a, n) => a + n - 1, 0),
  };
}
