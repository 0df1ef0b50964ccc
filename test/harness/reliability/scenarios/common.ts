// What every scenario shares: its run label, a namespace, an admin connection and the
// ScenarioRecord it returns beside the raw material the tests assert on.
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import type { Jetloop, Subscription, JetloopEvent } from "../../../../src/index.js";
import { type FigureRow, row, type ScenarioRecord, tally } from "../figures.js";
import { type AppendOutcome, type Collected, collect } from "../workload.js";
import { serverFlavor } from "../../server.js";
import { uniqueNamespace } from "../../namespace.js";

export interface ScenarioContext {
  /** "newest" | "oldest" in the suite, "soak-newest" … from the soak script. */
  readonly run: string;
  /** Progress lines (the soak script prints them; tests stay quiet). */
  readonly log?: (line: string) => void;
}

export function defaultContext(): ScenarioContext {
  return { run: serverFlavor() };
}

/** A short unique namespace (stream name and subject prefix). */
export const scenarioNamespace = (prefix = "r"): string => uniqueNamespace(prefix);

export function record(
  ctx: ScenarioContext,
  id: string,
  title: string,
  serverVersion: string,
  startedAt: number,
  rows: FigureRow[],
  facts: Record<string, number | string | boolean>,
): ScenarioRecord {
  return { id, title, run: ctx.run, serverVersion, finishedAt: new Date().toISOString(), durationMs: Date.now() - startedAt, rows, facts };
}

/** A plain NATS connection for setup and audits (no jetloop in the way). */
export function adminConnection(servers: string | string[], extra: Record<string, unknown> = {}): Promise<NatsConnection> {
  return natsConnect({ servers, name: "reliability-admin", maxReconnectAttempts: -1, reconnectTimeWait: 250, ...extra });
}

/** What every scenario that appends under a fault returns for its tests to assert on. */
export interface AppendScenarioResult {
  readonly record: ScenarioRecord;
  readonly outcomes: AppendOutcome[];
  readonly republished: AppendOutcome[];
  readonly published: string[];
  readonly journal: ReturnType<typeof tally> & { messages: number };
  readonly ordered: ReturnType<typeof tally>;
  /** The live subscriber in namespace feed mode (`feed: "namespace"`), where the scenario has one. */
  readonly namespaceFeed?: ReturnType<typeof tally> & { readonly outOfOrder: number };
}

/** Deliveries whose journal sequence is not above the one before. */
export function outOfOrder(seqs: readonly number[]): number {
  let n = 0;
  for (let i = 1; i < seqs.length; i++) if (seqs[i]! <= seqs[i - 1]!) n++;
  return n;
}

/** A live subscription of everything in namespace feed mode, beside a scenario's loop-mode one. */
export class NamespaceFollower {
  private constructor(
    readonly sub: Subscription<JetloopEvent>,
    readonly got: Collected,
    /** Its gap repairs by reason. */
    readonly repairs: string[],
  ) {}

  static async open(bus: Jetloop): Promise<NamespaceFollower> {
    const repairs: string[] = [];
    const sub = await bus.subscribeEvents({ enduring: "all" }, { start: "all", feed: "namespace", onReport: (r) => void (r.kind === "gap_closed" && repairs.push(r.reason)) });
    return new NamespaceFollower(sub, collect(sub), repairs);
  }

  figures(published: readonly string[]): ReturnType<typeof tally> & { outOfOrder: number } {
    return { ...tally(published, this.got.ids), outOfOrder: outOfOrder(this.got.seqs) };
  }

  row(published: readonly string[]): FigureRow {
    const f = this.figures(published);
    return row("live subscriber (namespace feed)", f, { "out of order": f.outOfOrder, "gaps closed from the journal": gapSummary(this.repairs) });
  }
}

/** "reconnect 2, leader_elected 1": a live subscription's gap repairs by reason, "0" for none. */
export function gapSummary(reasons: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const r of reasons) counts.set(r, (counts.get(r) ?? 0) + 1);
  return [...counts].map(([k, v]) => `${k} ${v}`).join(", ") || "0";
}
