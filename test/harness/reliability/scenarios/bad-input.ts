// Scenario 6: bad input at every boundary. Malformed messages injected raw into the
// stream and onto live subjects between valid ones; oversize messages; subject-injection
// attempts through ids and namespaces; invalid filters and options. Each gets a typed
// error or a report, nothing invalid is yielded, and the process never crashes.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import {
  connect,
  createEvent,
  eventSubject,
  filterSubject,
  isJetloopError,
  newId,
  type EventFilter,
  type JetloopEvent,
  type SubscribeOptions,
  type SubscriptionReport,
} from "../../../../src/index.js";
import { REPO_ROOT } from "../../server.js";
import { heldWithin, sleep } from "../../async.js";
import { badMessages, INJECTION_IDS, MUTATIONS, SECRET_ARGUMENT, SECRET_GRANT } from "../../bad-messages.js";
import { row, tally, type ScenarioRecord } from "../figures.js";
import { captureLogger, collect, enduring, ephemeral, eventIdOf, newCoords } from "../workload.js";
import { consumerCount } from "../../stream-state.js";
import { adminConnection, record, scenarioNamespace, type ScenarioContext } from "./common.js";

export interface BadInputOptions {
  readonly servers: string[];
  readonly serverVersion: string;
  /** Messages of every malformed kind (journal and live each). */
  readonly repeat: number;
  readonly validEvents: number;
  readonly seed: number;
  /** The reader's decode cap (the stream accepts more). */
  readonly capBytes: number;
}

/** How a boundary answered one bad call. */
export interface BoundaryOutcome {
  readonly boundary: string;
  readonly input: string;
  /** The JetloopError code, or "untyped: <name>", or "accepted" (a failure of the scenario). */
  readonly outcome: string;
}

export interface BadInputResult {
  readonly record: ScenarioRecord;
  /** Malformed messages (must be reported, never yielded). */
  readonly injectedJournal: number;
  readonly injectedLive: number;
  /** Valid events with an extra envelope key (yielded without it). */
  readonly strippedJournal: number;
  readonly strippedLive: number;
  /** Yielded deliveries whose event carries a secret or an unknown key (must be none). */
  readonly leakyDeliveries: number;
  /** Log lines written, and those holding a secret marker (must be none). */
  readonly logLines: number;
  readonly logSecretHits: number;
  readonly internalInjected: number;
  readonly ordered: { t: ReturnType<typeof tally>; poison: SubscriptionReport[]; err: Error | undefined };
  readonly durable: { t: ReturnType<typeof tally>; poison: SubscriptionReport[]; err: Error | undefined; ackPending: number; redelivered: number };
  readonly replay: { t: ReturnType<typeof tally>; poison: SubscriptionReport[] };
  readonly live: { t: ReturnType<typeof tally>; poison: SubscriptionReport[]; err: Error | undefined };
  readonly boundaries: BoundaryOutcome[];
  readonly consumersBefore: number;
  readonly consumersAfter: number;
  readonly crashes: { uncaught: number; unhandled: number };
  readonly unitFuzz: { total: number; targets: number } | undefined;
}

export const BAD_INPUT = { id: "6-bad-input", title: "Bad input at every boundary" } as const;

/** The fixed fuzz budget of test/unit/fuzz.test.ts (FUZZ_RUNS), read from its source. */
export function unitFuzzBudget(): { total: number; targets: number } | undefined {
  let text: string;
  try {
    text = readFileSync(join(REPO_ROOT, "test/unit/fuzz.test.ts"), "utf8");
  } catch {
    return undefined;
  }
  const block = /export const FUZZ_RUNS = \{([\s\S]*?)\}/.exec(text)?.[1];
  if (!block) return undefined;
  const runs = [...block.matchAll(/^\s*\w+:\s*([\d_]+),?\s*$/gm)].map((m) => Number(m[1]!.replaceAll("_", "")));
  return { total: runs.reduce((a, b) => a + b, 0), targets: runs.length };
}

const POISON_CODES = new Set(["EVENT_DECODE", "EVENT_INVALID", "EVENT_TYPE_UNKNOWN", "DELIVERY_INVALID", "REQUEST_INVALID"]);

export function isTypedPoison(r: SubscriptionReport): boolean {
  return r.kind === "poison" && isJetloopError(r.error) && POISON_CODES.has(r.error.code);
}

async function outcomeOf(boundary: string, input: string, f: () => unknown): Promise<BoundaryOutcome> {
  try {
    const v = await f();
    // A subscription that was created after all: close it so it does not linger.
    if (v && typeof v === "object" && "close" in v && typeof (v).close === "function") await (v as { close: () => Promise<void> }).close();
    return { boundary, input, outcome: "accepted" };
  } catch (e) {
    return { boundary, input, outcome: isJetloopError(e) ? e.code : `untyped: ${e instanceof Error ? e.name : typeof e}` };
  }
}

export async function badInputScenario(ctx: ScenarioContext, o: BadInputOptions): Promise<BadInputResult> {
  const t0 = Date.now();
  const crashes = { uncaught: 0, unhandled: 0 };
  const onUncaught = (): void => void crashes.uncaught++;
  const onUnhandled = (): void => void crashes.unhandled++;
  process.on("uncaughtExceptionMonitor", onUncaught);
  process.on("unhandledRejection", onUnhandled);

  const ns = scenarioNamespace();
  // Both buses log into memory (debug level): quiet, and scanned for the secrets below.
  const log = captureLogger("debug");
  const writer = await connect({ servers: o.servers, namespace: ns, logger: log.logger });
  const reader = await connect({ servers: o.servers, namespace: ns, maxEventBytes: o.capBytes, logger: log.logger });
  const raw = await adminConnection(o.servers);
  try {
    await writer.provision();
    const jsm = await jetstreamManager(raw, { checkAPI: false });
    const js = jetstream(raw);
    const c = newCoords();

    const poison = { ordered: [] as SubscriptionReport[], durable: [] as SubscriptionReport[], live: [] as SubscriptionReport[], replay: [] as SubscriptionReport[] };
    const onReport = (into: SubscriptionReport[]) => (r: SubscriptionReport) => void (r.kind === "poison" && into.push(r));
    const orderedSub = await reader.subscribeEvents({ enduring: "all" }, { start: "all", onReport: onReport(poison.ordered) });
    const durableSub = await reader.subscribeEvents({ enduring: "all" }, { durable: "bad-input-svc", onReport: onReport(poison.durable) });
    const liveSub = await reader.subscribeEvents({ ephemeral: "all" }, { onReport: onReport(poison.live) });
    const ordered = collect(orderedSub, { keep: true });
    const durable = collect(durableSub, { keep: true });
    const live = collect(liveSub, { keep: true });

    // Valid events and malformed ones, interleaved; an internal event in the journal too
    // (valid, but never yielded to an ordinary subscriber, and not reported).
    const bad = badMessages(ns, c, o.repeat, o.seed, o.capBytes);
    const validJournal: JetloopEvent[] = Array.from({ length: o.validEvents }, () => enduring(c));
    const validLive: JetloopEvent[] = Array.from({ length: o.validEvents }, () => ephemeral(c));
    const internal = createEvent("LoopIdle", { sessionId: c.sessionId, loopId: c.loopId, visibility: "internal" });
    const total = Math.max(bad.length, o.validEvents);
    let internalInjected = 0;
    for (let i = 0; i < total; i++) {
      if (i < o.validEvents) {
        await writer.publish(validJournal[i]!);
        await writer.publish(validLive[i]!);
      }
      const b = bad[i];
      if (b?.channel === "journal") await js.publish(b.subject, b.data);
      else if (b) raw.publish(b.subject, b.data);
      if (i === Math.floor(total / 2)) {
        await writer.publish(internal);
        internalInjected++;
      }
    }
    await raw.flush();
    const count = (channel: string) => bad.filter((b) => b.channel === channel && b.expect !== "stripped").length;
    const injectedJournal = count("journal");
    const injectedLive = count("live");
    const strippedIds = (channel: string) =>
      bad.filter((b) => b.channel === channel && b.expect === "stripped").map((b) => b.eventId);

    const journalIds = [...validJournal.map(eventIdOf), ...strippedIds("journal")];
    const liveIds = [...validLive.map(eventIdOf), ...strippedIds("live")];
    await Promise.allSettled([ordered.waitForAll(journalIds, 20_000), durable.waitForAll(journalIds, 20_000), live.waitForAll(liveIds, 20_000)]);
    // Poison after the last valid message is reported shortly after it.
    const wait = (list: SubscriptionReport[], n: number) => heldWithin(() => list.length >= n, 10_000, 50);
    await Promise.all([wait(poison.ordered, injectedJournal), wait(poison.durable, injectedJournal), wait(poison.live, injectedLive)]);
    await sleep(300);

    const replayIds: string[] = [];
    const replayed: JetloopEvent[] = [];
    for await (const d of reader.replay({ enduring: "all" }, { onReport: onReport(poison.replay) })) {
      replayIds.push(eventIdOf(d.event));
      replayed.push(d.event);
    }
    const yielded = [...ordered.deliveries, ...durable.deliveries, ...live.deliveries].map((d) => d.event).concat(replayed);
    const leakyDeliveries = yielded.filter((e) => {
      const text = JSON.stringify(e);
      return text.includes(SECRET_ARGUMENT) || text.includes(SECRET_GRANT) || /"(arguments|grant_?token|raw_?arguments|extra_\d+|secret)"/i.test(text);
    }).length;

    const ci = await jsm.consumers.info(reader.stream, "bad-input-svc");
    const consumersBefore = await consumerCount(jsm, reader.stream);

    // --- boundaries: ids, namespaces, filters, options, oversize appends -----------------
    const boundaries: BoundaryOutcome[] = [];
    const session = c.sessionId;
    for (const id of INJECTION_IDS) {
      const shown = JSON.stringify(id);
      boundaries.push(await outcomeOf("createEvent sessionId", shown, () => createEvent("SessionStarted", { sessionId: id })));
      boundaries.push(await outcomeOf("createEvent loopId", shown, () => createEvent("LoopIdle", { sessionId: session, loopId: id })));
      boundaries.push(
        await outcomeOf("publish (hand-built event)", shown, () => writer.publish({ ...createEvent("SessionStarted", { sessionId: session }), sessionId: id })),
      );
      boundaries.push(await outcomeOf("bus.session", shown, () => writer.session(id)));
      boundaries.push(await outcomeOf("subscribe sessions", shown, () => reader.subscribeEvents({ enduring: "all", sessions: [id] })));
      boundaries.push(await outcomeOf("subscribe loops", shown, () => reader.subscribeEvents({ enduring: { loops: [id] }, ephemeral: { loops: [id] } })));
      boundaries.push(await outcomeOf("replay sessionId", shown, async () => {
        for await (const _ of reader.replay({ enduring: "all", sessions: [id] })) break;
      }));
      boundaries.push(await outcomeOf("eventSubject", shown, () => eventSubject(ns, "journal", { sessionId: id, family: "session", type: "SessionStarted" })));
      // "_" is the documented no-loop selector of filterSubject, not an injection.
      if (id !== "_") boundaries.push(await outcomeOf("filterSubject", shown, () => filterSubject(ns, "journal", { sessionId: session, loopId: id })));
    }
    for (const bad of ["a.>", "*", "a b", "", "x.y.z.w.v", "ns\n", "$JS"]) {
      boundaries.push(await outcomeOf("connect namespace", JSON.stringify(bad), () => connect({ servers: o.servers, namespace: bad })));
    }
    const badFilters: [string, unknown][] = [
      ["{}", {}],
      ['{enduring:"some"}', { enduring: "some" }],
      ["{enduring:{}}", { enduring: {} }],
      ["{ephemeral:42}", { ephemeral: 42 }],
      ["{enduring:null}", { enduring: null }],
      ["{sessions:[]}", { enduring: "all", sessions: [] }],
      ['{sessions:"everything"}', { enduring: "all", sessions: "everything" }],
      ['{types:["Nope"]}', { enduring: "all", types: ["Nope"] }],
      ["{types:[]}", { enduring: "all", types: [] }],
      ['{families:["nope"]}', { enduring: "all", families: ["nope"] }],
      ['{families:["Tool"]}', { enduring: "all", families: ["Tool"] }],
      ['{types:["tool.>"]}', { enduring: "all", types: ["tool.>"] }],
    ];
    for (const [shown, f] of badFilters) boundaries.push(await outcomeOf("subscribe filter", shown, () => reader.subscribeEvents(f as EventFilter)));
    const badOptions: [string, unknown][] = [
      ["start {seq:0}", { start: { seq: 0 } }],
      ['start "middle"', { start: "middle" }],
      ['durable "a.b"', { durable: "a.b" }],
      ['durable "*"', { durable: "*" }],
      ['durable ">"', { durable: ">" }],
      ["ackWaitMs without durable", { ackWaitMs: 1000 }],
      ["batch 0", { batch: 0 }],
      ["enduringBuffer -1", { enduringBuffer: -1 }],
    ];
    for (const [shown, opts] of badOptions) {
      boundaries.push(await outcomeOf("subscribe options", shown, () => reader.subscribeEvents({ enduring: "all" }, opts as SubscribeOptions)));
    }
    for (const [shown, req] of [
      ["fromSeq 0", { fromSeq: 0 }],
      ["toSeq -1", { toSeq: -1 }],
      ["fromSeq 1.5", { fromSeq: 1.5 }],
    ] as const) {
      boundaries.push(await outcomeOf("replay range", shown, async () => {
        for await (const _ of reader.replay({ enduring: "all" }, req)) break;
      }));
    }
    // Oversize appends: over the bus's cap, and over the server's max_payload.
    const big = (n: number) => createEvent("StepDone", { ...c, messages: [{ role: "assistant", blocks: [{ type: "text", text: "z".repeat(n) }] }] });
    boundaries.push(await outcomeOf("publish oversize", "1.5 MiB StepDone", () => writer.publish(big(1_500_000))));
    // createEvent caps a preview at construction; a hand-built one is refused by publish.
    const preview = createEvent("ToolCallCompleted", { ...c, toolExecutionId: newId() });
    boundaries.push(await outcomeOf("publish oversize", "hand-built 2 MiB preview", () => writer.publish({ ...preview, resultPreview: "p".repeat(2 << 20) })));
    const small = await connect({ servers: o.servers, namespace: ns, maxEventBytes: 2048 });
    boundaries.push(await outcomeOf("publish oversize", "3 KiB event, bus cap 2 KiB", () => small.publish(big(3000))));
    await small.close();

    const consumersAfter = await consumerCount(jsm, reader.stream);

    const result: BadInputResult = {
      record: undefined as unknown as ScenarioRecord,
      injectedJournal,
      injectedLive,
      strippedJournal: strippedIds("journal").length,
      strippedLive: strippedIds("live").length,
      leakyDeliveries,
      logLines: log.lines.length,
      logSecretHits: log.lines.filter((l) => l.includes(SECRET_ARGUMENT) || l.includes(SECRET_GRANT)).length,
      internalInjected,
      ordered: { t: tally(journalIds, ordered.ids), poison: poison.ordered, err: orderedSub.err() },
      durable: { t: tally(journalIds, durable.ids), poison: poison.durable, err: durableSub.err(), ackPending: ci.num_ack_pending, redelivered: ci.num_redelivered },
      replay: { t: tally(journalIds, replayIds), poison: poison.replay },
      live: { t: tally(liveIds, live.ids), poison: poison.live, err: liveSub.err() },
      boundaries,
      consumersBefore,
      consumersAfter,
      crashes,
      unitFuzz: unitFuzzBudget(),
    };
    await Promise.all([orderedSub.close(), durableSub.close(), liveSub.close()]);

    const typed = (list: SubscriptionReport[]) => list.filter(isTypedPoison).length;
    const refused = boundaries.filter((b) => b.outcome !== "accepted" && !b.outcome.startsWith("untyped")).length;
    const codes: Record<string, number> = {};
    for (const b of boundaries) codes[b.outcome] = (codes[b.outcome] ?? 0) + 1;
    const r = record(
      ctx,
      BAD_INPUT.id,
      BAD_INPUT.title,
      o.serverVersion,
      t0,
      [
        row("ordered subscriber (valid journal events)", result.ordered.t, {
          "malformed injected": injectedJournal,
          "reported (typed)": typed(poison.ordered),
          "extra key stripped": result.strippedJournal,
          "internal skipped": internalInjected,
        }),
        row("durable subscriber (valid journal events)", result.durable.t, {
          "malformed injected": injectedJournal,
          "reported (typed) and terminated": typed(poison.durable),
          "redelivered afterwards": ci.num_redelivered,
        }),
        row("replay (valid journal events)", result.replay.t, { "malformed in range": injectedJournal, "reported (typed)": typed(poison.replay) }),
        row("live subscriber (valid previews)", result.live.t, { "malformed injected": injectedLive, "reported (typed)": typed(poison.live), "extra key stripped": result.strippedLive }),
      ],
      {
        "malformed kinds (each on the journal and on live)": MUTATIONS.filter((m) => m.expect !== "stripped").length,
        "yielded events carrying a secret or an unknown key": leakyDeliveries,
        "log lines (debug) / holding a secret": `${result.logLines} / ${result.logSecretHits}`,
        "seed": o.seed,
        "reader decode cap (bytes)": o.capBytes,
        "bad calls at the API boundaries": boundaries.length,
        "refused with a typed error": refused,
        "accepted (must be 0)": boundaries.filter((b) => b.outcome === "accepted").length,
        "untyped errors (must be 0)": boundaries.filter((b) => b.outcome.startsWith("untyped")).length,
        "error codes": Object.entries(codes).sort().map(([k, v]) => `${k}: ${v}`).join(", "),
        "consumers left by refused subscriptions": consumersAfter - consumersBefore,
        "uncaught exceptions / unhandled rejections": `${crashes.uncaught} / ${crashes.unhandled}`,
        "unit fuzz budget (test/unit/fuzz.test.ts)": result.unitFuzz ? `${result.unitFuzz.total} inputs over ${result.unitFuzz.targets} targets` : "not found",
      },
    );
    return { ...result, record: r };
  } finally {
    process.off("uncaughtExceptionMonitor", onUncaught);
    process.off("unhandledRejection", onUnhandled);
    await writer.close();
    await reader.close();
    await raw.close();
  }
}
