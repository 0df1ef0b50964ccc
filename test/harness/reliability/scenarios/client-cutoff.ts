// Scenario 3: a client cut off. The server is frozen with SIGSTOP for longer than the
// client's ping interval × max outstanding pings, so the client declares the connection
// stale and reconnects; then the server is resumed (SIGCONT).
import { connect, type JetloopEvent } from "../../../../src/index.js";
import { row, tally } from "../figures.js";
import { startServer } from "../../server.js";
import { settledWithin, sleep } from "../../async.js";
import { auditStream, collect, countAttempts, enduring, eventIdOf, faultAfter, newCoords, produce, resumedAfter, summarize } from "../workload.js";
import { adminConnection, gapSummary, record, scenarioNamespace, type AppendScenarioResult, type ScenarioContext } from "./common.js";

export interface ClientCutoffOptions {
  readonly events: number;
  readonly ratePerSec: number;
  /** Freeze the server once this many appends have settled. */
  readonly pauseAfter: number;
  /** How long the server stays frozen. */
  readonly pauseMs: number;
  /** The client's ping interval and max outstanding pings. */
  readonly pingIntervalMs: number;
  readonly maxPingOut: number;
  /** The bus's publish deadline: appends in flight longer than this fail typed. */
  readonly publishDeadlineMs: number;
}

export interface ClientCutoffResult extends AppendScenarioResult {
  /** Appends that had not settled by their deadline plus slack (must be none). */
  readonly unsettledAtDeadline: number;
  /** Appends that failed typed but whose event the stream holds anyway (the ambiguity). */
  readonly failedButStored: number;
  /** Events appended after the resume, and how many of them the ordered subscriber got. */
  readonly appendedAfterResume: number;
  readonly orderedAfterResume: number;
  readonly disconnects: number;
  readonly reconnects: number;
  readonly orderedErr: Error | undefined;
}

export const CLIENT_CUTOFF = { id: "3-client-cutoff", title: "Client cut off (server frozen with SIGSTOP), then resumed" } as const;

export async function clientCutoffScenario(ctx: ScenarioContext, o: ClientCutoffOptions): Promise<ClientCutoffResult> {
  const t0 = Date.now();
  const server = await startServer();
  const ns = scenarioNamespace();
  const bus = await connect({
    servers: server.url,
    namespace: ns,
    ackTimeoutMs: 500,
    publishDeadlineMs: o.publishDeadlineMs,
    natsOptions: { pingInterval: o.pingIntervalMs, maxPingOut: o.maxPingOut, reconnectTimeWait: 200, timeout: 2000, name: "reliability-cutoff" },
  });
  let disconnects = 0;
  let reconnects = 0;
  void (async () => {
    for await (const s of bus.nc.status()) {
      if (s.type === "disconnect") disconnects++;
      if (s.type === "reconnect") reconnects++;
    }
  })();
  try {
    await bus.provision();
    const sends = countAttempts(bus);
    const coords = newCoords();
    const events: JetloopEvent[] = Array.from({ length: o.events }, () => enduring(coords));
    const published = events.map(eventIdOf);
    // A live subscription: it follows the stream's feed and repairs gaps from the journal.
    const repairs: string[] = [];
    const orderedSub = await bus.subscribeEvents({ enduring: "all" }, { start: "all", onReport: (rep) => void (rep.kind === "gap_closed" && repairs.push(rep.reason)) });
    const ordered = collect(orderedSub);

    let resumedAt = Number.POSITIVE_INFINITY;
    let pausedAt = Number.POSITIVE_INFINITY;
    const fault = faultAfter(o.pauseAfter, async () => {
      server.pause();
      pausedAt = Date.now();
      ctx.log?.(`  server frozen after ${o.pauseAfter} appends`);
      await sleep(o.pauseMs);
      server.resume();
      resumedAt = Date.now();
      ctx.log?.("  server resumed");
    });
    const producer = produce({
      bus,
      events,
      // Enough room that appends keep starting while the server is frozen: the ones begun
      // early in the freeze outlive their deadline, the later ones are acked after it.
      concurrency: 512,
      ratePerSec: o.ratePerSec,
      onSettled: fault.onSettled,
    });
    // Every append settles (ack or typed error) by its deadline, plus slack for timers
    // and the paced start of the later ones.
    const pacing = (o.events * 1000) / o.ratePerSec;
    const outcomesOrTimeout = await settledWithin("the producer", producer.done, pacing + o.pauseMs + o.publishDeadlineMs + 10_000).catch(() => undefined);
    const unsettledAtDeadline = outcomesOrTimeout === undefined ? producer.inFlight() : 0;
    const outcomes = outcomesOrTimeout ?? (await producer.done);
    await fault.done();

    // Which failed appends were stored anyway? Look before republishing them.
    const admin = await adminConnection(server.url);
    const before = await auditStream(admin, bus.stream);
    const storedIds = new Set(before.ids);
    const failedIdx = outcomes.map((x, i) => (x.status === "failed" ? i : -1)).filter((i) => i >= 0);
    const failedButStored = failedIdx.filter((i) => storedIds.has(outcomes[i]!.eventId)).length;
    const republished = failedIdx.length > 0 ? await produce({ bus, events: failedIdx.map((i) => events[i]!), concurrency: 8 }).done : [];

    // The subscriber resumes: it gets everything, including what was appended after the resume.
    const acked = new Set([...outcomes, ...republished].filter((x) => x.status === "acked").map((x) => x.eventId));
    await ordered.waitForAll(acked, 30_000).catch(() => undefined);
    const audit = await auditStream(admin, bus.stream);
    await admin.close();
    const journal = { ...tally(published, audit.ids), messages: audit.messages };
    const orderedT = tally(published, ordered.ids);
    // Appends begun after the resume, and how many of them the subscriber got.
    const afterResume = outcomes.filter((x) => x.status === "acked" && x.at >= resumedAt).map((x) => x.eventId);
    const seen = ordered.distinct();
    const orderedAfterResume = afterResume.filter((id) => seen.has(id)).length;
    const duringFreeze = outcomes.filter((x) => x.at < resumedAt && x.at + x.ms > pausedAt);
    const s = summarize(outcomes);
    const r = record(
      ctx,
      CLIENT_CUTOFF.id,
      CLIENT_CUTOFF.title,
      server.version,
      t0,
      [
        row("appends (producer)", { published: published.length, delivered: s.acked, lost: 0, duplicated: s.duplicateAcks }, {
          "failed (typed)": s.failedTyped,
          "failed (untyped)": s.failedUntyped,
          "failed but stored": failedButStored,
          "unsettled at deadline": unsettledAtDeadline,
          "republished ok": summarize(republished).acked,
        }),
        row("journal (stream audit)", journal),
        row("live subscriber (feed)", orderedT, { "gaps closed from the journal": gapSummary(repairs) }),
      ],
      {
        "frozen for (ms)": o.pauseMs,
        "ping interval (ms) × max pings out": `${o.pingIntervalMs} × ${o.maxPingOut}`,
        "publish deadline (ms)": o.publishDeadlineMs,
        "appends in flight during the freeze": duringFreeze.length,
        "of them acked after the resume": duringFreeze.filter((x) => x.status === "acked").length,
        "of them failed typed": duringFreeze.filter((x) => x.status === "failed").length,
        "failure codes": Object.entries(s.byCode).map(([k, v]) => `${k}: ${v}`).join(", ") || "none",
        "appends resent with the same msg id": sends.resent(),
        "client disconnects / reconnects": `${disconnects} / ${reconnects}`,
        "appends begun after the resume": afterResume.length,
        "of them delivered to the ordered subscriber": orderedAfterResume,
        "ordered: first delivery after the resume (ms)": resumedAfter(ordered, resumedAt),
        "ordered err": orderedSub.err()?.message ?? "none",
      },
    );
    const result: ClientCutoffResult = {
      record: r,
      outcomes,
      republished,
      published,
      unsettledAtDeadline,
      failedButStored,
      journal,
      ordered: orderedT,
      appendedAfterResume: afterResume.length,
      orderedAfterResume,
      disconnects,
      reconnects,
      orderedErr: orderedSub.err(),
    };
    await orderedSub.close();
    return result;
  } finally {
    await bus.close();
    await server.close();
  }
}
