// Scenario 1: a single server stopped and started again on the same store directory
// while a producer appends and an ordered and a durable subscriber consume.
import { connect, type JetloopEvent } from "../../../../src/index.js";
import { row, tally } from "../figures.js";
import { startServer } from "../../server.js";
import { settledWithin, sleep } from "../../async.js";
import { auditStream, collect, enduring, eventIdOf, faultAfter, newCoords, produce, resumedAfter, summarize } from "../workload.js";
import { adminConnection, NamespaceFollower, type AppendScenarioResult, gapSummary, record, scenarioNamespace, type ScenarioContext } from "./common.js";

export interface ServerRestartOptions {
  readonly events: number;
  readonly ratePerSec: number;
  /** Stop the server once this many appends have settled. */
  readonly restartAfter: number;
  /** How long the server stays down. */
  readonly downMs: number;
}

export interface ServerRestartResult extends AppendScenarioResult {
  readonly durable: ReturnType<typeof tally>;
  readonly orderedErr: Error | undefined;
  readonly durableErr: Error | undefined;
}

export const SERVER_RESTART = { id: "1-server-restart", title: "Single server restarted under load" } as const;

export async function serverRestartScenario(ctx: ScenarioContext, o: ServerRestartOptions): Promise<ServerRestartResult> {
  const t0 = Date.now();
  const server = await startServer();
  const ns = scenarioNamespace();
  const admin = await adminConnection(server.url);
  const bus = await connect({
    servers: server.url,
    namespace: ns,
    ackTimeoutMs: 500,
    publishDeadlineMs: 30_000,
    natsOptions: { reconnectTimeWait: 200, name: "reliability-restart" },
  });
  try {
    await bus.provision();
    const coords = newCoords();
    const events: JetloopEvent[] = Array.from({ length: o.events }, () => enduring(coords));
    const published = events.map(eventIdOf);

    // A live subscription: it follows the stream's feed and repairs gaps from the journal.
    const repairs: string[] = [];
    const orderedSub = await bus.subscribeEvents({ enduring: "all" }, { start: "all", onReport: (rep) => void (rep.kind === "gap_closed" && repairs.push(rep.reason)) });
    const durableSub = await bus.subscribeEvents({ enduring: "all" }, { durable: "restart-svc", ackWaitMs: 2000, batch: 32 });
    const ordered = collect(orderedSub);
    const follower = await NamespaceFollower.open(bus);
    const durable = collect(durableSub);

    let downAt = 0;
    let upAt = 0;
    const restart = faultAfter(o.restartAfter, async () => {
      ctx.log?.(`  stopping the server after ${o.restartAfter} appends`);
      await server.stop();
      downAt = Date.now();
      await sleep(o.downMs);
      await server.restart();
      upAt = Date.now();
      ctx.log?.(`  server back after ${upAt - downAt} ms`);
    });
    const producer = produce({ bus, events, concurrency: 8, ratePerSec: o.ratePerSec, onSettled: restart.onSettled });
    const outcomes = await settledWithin("the producer", producer.done, 120_000);
    await restart.done();

    // A typed failure says a resend within the duplicate window stores at most once: resend now, then every event is acked.
    const failed = events.filter((_, i) => outcomes[i]!.status === "failed");
    const republished = failed.length > 0 ? await produce({ bus, events: failed, concurrency: 8 }).done : [];

    const acked = new Set([...outcomes, ...republished].filter((x) => x.status === "acked").map((x) => x.eventId));
    await Promise.allSettled([ordered.waitForAll(acked, 30_000), durable.waitForAll(acked, 30_000)]);
    await follower.got.waitForAll(acked, 30_000).catch(() => undefined);
    // Give late redeliveries a moment to show up in the duplicate count.
    await sleep(300);

    const audit = await auditStream(admin, bus.stream);
    const journal = { ...tally(published, audit.ids), messages: audit.messages };
    const orderedT = tally(published, ordered.ids);
    const durableT = tally(published, durable.ids);
    const s = summarize(outcomes);
    const r = record(
      ctx,
      SERVER_RESTART.id,
      SERVER_RESTART.title,
      server.version,
      t0,
      [
        row("appends (producer)", { published: published.length, delivered: s.acked, lost: 0, duplicated: s.duplicateAcks }, {
          "failed (typed)": s.failedTyped,
          "failed (untyped)": s.failedUntyped,
          "republished ok": summarize(republished).acked,
        }),
        row("journal (stream audit)", journal),
        row("live subscriber (feed)", orderedT, { "gaps closed from the journal": gapSummary(repairs) }),
        follower.row(published),
        row("durable subscriber", durableT),
      ],
      {
        "restart after appends": o.restartAfter,
        "server down (ms)": upAt - downAt,
        "slowest append (ms)": Math.max(...outcomes.map((x) => x.ms)),
        "ordered: first delivery after the server was back (ms)": resumedAfter(ordered, upAt),
        "durable: first delivery after the server was back (ms)": resumedAfter(durable, upAt),
        "ordered err": orderedSub.err()?.message ?? "none",
        "durable err": durableSub.err()?.message ?? "none",
      },
    );
    const result: ServerRestartResult = {
      record: r,
      outcomes,
      republished,
      published,
      journal,
      ordered: orderedT,
      namespaceFeed: follower.figures(published),
      durable: durableT,
      orderedErr: orderedSub.err(),
      durableErr: durableSub.err(),
    };
    await orderedSub.close();
    await follower.sub.close();
    await durableSub.close();
    return result;
  } finally {
    await bus.close();
    await admin.close().catch(() => undefined);
    await server.close();
  }
}
