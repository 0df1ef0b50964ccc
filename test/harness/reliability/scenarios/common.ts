// What every scenario shares: its run label, a namespace, an admin connection and the
// ScenarioRecord it returns beside the raw material the tests assert on.
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import type { FigureRow, ScenarioRecord, tally } from "../figures.js";
import type { AppendOutcome } from "../workload.js";
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
}

/** "reconnect 2, leader_elected 1": a live subscription's gap repairs by reason, "0" for none. */
export function gapSummary(reasons: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const r of reasons) counts.set(r, (counts.get(r) ?? 0) + 1);
  return [...counts].map(([k, v]) => `${k} ${v}`).join(", ") || "0";
}
