// Scenario 9: gaps on the live feed. Live subscriptions follow the stream's republished
// feed over core NATS, where a message can be missed; each way is forced here while a
// producer appends, and every viewer must still get each of its events exactly once, in
// journal order:
//   - a test hook in the bus drops every Nth feed message before any viewer sees it;
//   - the server cuts the viewers' connection off as a slow consumer (a proxy stops
//     reading while previews flood the connection past the server's max_pending);
//   - the connection is cut (the proxy drops it) and the client reconnects.
// Every phase runs in both feed modes. A server restart and a stream leader kill are
// scenarios 1 and 2 (their ordered subscriber is a live feed subscription). In loop mode a
// drop without a reconnect (the hook; inside a cluster, a route between servers that
// flaps) is seen from Nats-Last-Sequence, which is per subject: a view over many subjects
// gets the missed event when its subject speaks again, exactly once but late; the phase
// counts it under "out of order". In namespace mode the feed's sequences are contiguous,
// so the bus sees the miss at the next message and delivers everything in order.
import { connect, createEvent, newId, type Jetloop, type JetloopEvent, type Subscription, type SubscriptionReport } from "../../../../src/index.js";
import { busContext } from "../../../../src/bus.js";
import type { FeedMode } from "../../../../src/sources/options.js";
import { startProxy } from "../../proxy.js";
import { startServer } from "../../server.js";
import { sleep } from "../../async.js";
import { consumerCount } from "../../stream-state.js";
import { row, tally, type FigureRow, type ScenarioRecord } from "../figures.js";
import { collect, eventIdOf, newCoords, type Collected, type Coords } from "../workload.js";
import { outOfOrder, record, scenarioNamespace, type ScenarioContext } from "./common.js";

export const FEED_GAPS = { id: "10-feed-gaps", title: "Gaps on the live feed" } as const;

export interface FeedGapsOptions {
  /** Events appended per phase (round robin over the loops). */
  readonly events: number;
  readonly loops: number;
  /** Live subscriptions per loop (they share the bus's feed subscription). */
  readonly viewersPerLoop: number;
  /** The hook drops every Nth feed message. */
  readonly dropEvery: number;
}

export interface PhaseResult {
  readonly mode: FeedMode;
  readonly what: string;
  readonly published: number;
  readonly delivered: number;
  readonly lost: number;
  readonly duplicated: number;
  readonly unexpected: number;
  /** Deliveries whose journal sequence was not above the previous one's. */
  readonly outOfOrder: number;
  readonly gapsClosed: Record<string, number>;
  readonly errors: number;
  readonly dropped?: number;
  readonly slowConsumers?: number;
}

export interface FeedGapsResult {
  readonly record: ScenarioRecord;
  readonly phases: PhaseResult[];
  readonly consumersWhileFollowing: Record<FeedMode, number>;
}

interface Viewer {
  readonly sub: Subscription<JetloopEvent>;
  readonly got: Collected;
  /** Which published events this viewer must get. */
  readonly wants: (c: Coords) => boolean;
  readonly reports: SubscriptionReport[];
}

function decided(c: Coords): JetloopEvent {
  return createEvent("PermissionDecided", { ...c, toolExecutionId: newId(), effect: "approve" });
}

export async function feedGapsScenario(ctx: ScenarioContext, o: FeedGapsOptions): Promise<FeedGapsResult> {
  const t0 = Date.now();
  // A small outbound allowance per client, so a viewer connection that stops reading is cut off quickly.
  const server = await startServer({ configText: "max_pending: 2MB\nwrite_deadline: \"2s\"" });
  const proxy = await startProxy(server.port);
  const ns = scenarioNamespace("f");
  const producer = await connect({ servers: server.url, namespace: ns, natsOptions: { name: "feed-gaps-producer" } });
  try {
    await producer.provision();
    const sessionId = newId();
    const loops = Array.from({ length: o.loops }, () => newCoords(sessionId));
    const other = newCoords();
    const phases: PhaseResult[] = [];
    const consumersWhileFollowing: Record<FeedMode, number> = { loop: -1, namespace: -1 };
    for (const mode of ["loop", "namespace"] as const) {
      const viewerBus: Jetloop = await connect({
        servers: proxy.url,
        namespace: ns,
        feed: mode,
        natsOptions: { name: `feed-gaps-viewers-${mode}`, maxReconnectAttempts: -1, reconnectTimeWait: 200 },
      });
      try {
        consumersWhileFollowing[mode] = await runPhases(mode, viewerBus);
      } finally {
        await viewerBus.close();
      }
    }

    async function runPhases(mode: FeedMode, viewerBus: Jetloop): Promise<number> {
      const openViewers = async (): Promise<Viewer[]> => {
        const viewers: Viewer[] = [];
        const open = async (filter: Parameters<Jetloop["subscribeEvents"]>[0], wants: (c: Coords) => boolean) => {
          const reports: SubscriptionReport[] = [];
          const sub = await viewerBus.subscribeEvents(filter, { onReport: (r) => reports.push(r) });
          viewers.push({ sub, got: collect(sub), wants, reports });
        };
        for (const c of loops) {
          for (let v = 0; v < o.viewersPerLoop; v++) await open({ sessions: [sessionId], enduring: { loops: [c.loopId] } }, (x) => x.loopId === c.loopId);
        }
        await open({ sessions: [sessionId], enduring: "all" }, (x) => x.sessionId === sessionId);
        await open({ enduring: "all" }, () => true);
        return viewers;
      };

      const publishRound = async (n: number, sent: { c: Coords; id: string }[]) => {
        const all = [...loops, other];
        for (let i = 0; i < n; i += 50) {
          const batch = Array.from({ length: Math.min(50, n - i) }, (_, k) => all[(i + k) % all.length]!);
          const events = batch.map(decided);
          await producer.publishAll(events);
          events.forEach((e, k) => sent.push({ c: batch[k]!, id: eventIdOf(e) }));
        }
      };

      const finish = async (what: string, viewers: Viewer[], sent: { c: Coords; id: string }[], extra: Partial<PhaseResult> = {}): Promise<PhaseResult> => {
        let published = 0;
        let delivered = 0;
        let lost = 0;
        let duplicated = 0;
        let unexpected = 0;
        let disorder = 0;
        let errors = 0;
        const gapsClosed: Record<string, number> = {};
        const wants = viewers.map((v) => sent.filter((s) => v.wants(s.c)).map((s) => s.id));
        for (const [i, v] of viewers.entries()) await v.got.waitForAll(wants[i]!, 30_000).catch(() => undefined);
        // Once for all the viewers, after each has had what it wants: room for a duplicate or
        // an unasked event to arrive before the tally.
        await sleep(100);
        for (const [i, v] of viewers.entries()) {
          const want = wants[i]!;
          const t = tally(want, v.got.ids);
          published += t.published;
          delivered += t.delivered;
          lost += t.lost;
          duplicated += t.duplicated;
          unexpected += t.unexpected;
          disorder += outOfOrder(v.got.seqs);
          if (v.sub.err()) errors++;
          for (const r of v.reports) if (r.kind === "gap_closed") gapsClosed[r.reason] = (gapsClosed[r.reason] ?? 0) + 1;
          await v.sub.close();
        }
        return { mode, what: `feed: ${mode} — ${what}`, published, delivered, lost, duplicated, unexpected, outOfOrder: disorder, gapsClosed, errors, ...extra };
      };

      const third = Math.ceil(o.events / 3);

      // 1. The hook drops every Nth feed message; the last round goes through untouched, so
      // every loop's subject speaks once more after its last drop.
      {
        const viewers = await openViewers();
        const sent: { c: Coords; id: string }[] = [];
        let seen = 0;
        let dropped = 0;
        busContext(viewerBus).feeds.testHooks.drop = () => {
          if (++seen % o.dropEvery !== 0) return false;
          dropped++;
          return true;
        };
        await publishRound(o.events, sent);
        await sleep(200);
        busContext(viewerBus).feeds.testHooks.drop = undefined;
        await publishRound(loops.length + 1, sent);
        // A loop's viewers follow one subject each; the session and all-sessions views span
        // many, where a drop shows only when the same subject speaks again (see RELIABILITY.md).
        const perLoop = o.loops * o.viewersPerLoop;
        phases.push(await finish(`hook drops every ${o.dropEvery}th feed message: loop viewers`, viewers.slice(0, perLoop), sent, { dropped }));
        phases.push(await finish("the same drops: session and all-sessions viewers", viewers.slice(perLoop), sent, { dropped }));
      }
      const consumers = await (async () => {
        const viewers = await openViewers();
        await sleep(100);
        const n = await consumerCount(await producer.jetstreamManager(), producer.stream);
        for (const v of viewers) await v.sub.close();
        return n;
      })();

      // 2. The server cuts the viewers' connection off as a slow consumer.
      {
        const viewers = await openViewers();
        const sent: { c: Coords; id: string }[] = [];
        const noise = viewerBus.nc.subscribe(`${ns}.noise`, { callback: () => undefined });
        await viewerBus.nc.flush();
        const varz = async () => ((await (await fetch(`${server.monitorUrl}/varz`)).json()) as { slow_consumers?: number }).slow_consumers ?? 0;
        const slowBefore = await varz();
        await publishRound(third, sent);
        proxy.pause();
        const blob = new Uint8Array(32 * 1024);
        for (let i = 0; i < 512 && (await varz()) === slowBefore; i++) {
          for (let k = 0; k < 16; k++) producer.nc.publish(`${ns}.noise`, blob);
          await producer.nc.flush();
          if (i % 4 === 3) await publishRound(loops.length + 1, sent);
        }
        const slowConsumers = (await varz()) - slowBefore;
        await publishRound(third, sent);
        proxy.resume();
        await publishRound(third, sent);
        noise.unsubscribe();
        phases.push(await finish("connection cut off by the server as a slow consumer", viewers, sent, { slowConsumers }));
      }

      // 3. The connection is cut; the client reconnects.
      {
        const viewers = await openViewers();
        const sent: { c: Coords; id: string }[] = [];
        await publishRound(third, sent);
        const cutting = (async () => {
          await sleep(20);
          proxy.cut();
        })();
        await publishRound(third, sent);
        await cutting;
        await publishRound(third, sent);
        phases.push(await finish("connection cut (reconnect)", viewers, sent));
      }
      return consumers;
    }

    const rows: FigureRow[] = phases.map((p) =>
      row(p.what, p, {
        "out of order": p.outOfOrder,
        "gaps closed from the journal": Object.entries(p.gapsClosed).map(([k, v]) => `${k} ${v}`).join(", ") || "0",
        ...(p.dropped !== undefined ? { "feed messages dropped": p.dropped } : {}),
        ...(p.slowConsumers !== undefined ? { "server slow-consumer events": p.slowConsumers } : {}),
      }),
    );
    const r = record(ctx, FEED_GAPS.id, FEED_GAPS.title, server.version, t0, rows, {
      loops: o.loops,
      "viewers per loop": o.viewersPerLoop,
      "viewers per phase": o.loops * o.viewersPerLoop + 2,
      "consumers on the stream while they follow (loop mode)": consumersWhileFollowing.loop,
      "consumers on the stream while they follow (namespace mode)": consumersWhileFollowing.namespace,
    });
    return { record: r, phases, consumersWhileFollowing };
  } finally {
    await producer.close();
    await proxy.close();
    await server.close();
  }
}
