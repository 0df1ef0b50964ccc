/** What every benchmark gets: the server, connections, a fresh namespace, and its results. */
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { connect, type Jetloop } from "../../src/index.js";
import { median } from "./stats.js";
import { uniqueNamespace } from "../../test/harness/namespace.js";
import type { NatsServer } from "../../test/harness/server.js";

export interface BenchOptions {
  /** Repetitions of every measurement (medians are taken over them). */
  readonly reps: number;
  /** Events in the large stream of the selective replay. */
  readonly bigStream: number;
  /** Shorter runs everywhere (a smoke test of the harness, not figures to quote). */
  readonly quick: boolean;
  /**
   * `--server-cpu`: cores each server of the shards benchmark's cluster may use (its own
   * cgroup quota, bench/lib/cpu-budget.ts); undefined (the default) leaves them unconstrained.
   */
  readonly serverCpu?: number;
}

export interface BenchContext {
  readonly server: NatsServer;
  readonly options: BenchOptions;
  log(message: string): void;
  /** A bus on a fresh namespace with its stream provisioned, and raw clients beside it. */
  setup(name: string, busOptions?: { maxInFlight?: number }): Promise<Setup>;
}

export interface Setup {
  readonly ns: string;
  readonly stream: string;
  readonly bus: Jetloop;
  /** The raw side's own connection (jetloop and raw never share a socket). */
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  close(): Promise<void>;
}

export async function makeSetup(server: NatsServer, name: string, busOptions: { maxInFlight?: number } = {}): Promise<Setup> {
  const ns = uniqueNamespace(`bench${name.replace(/[^A-Za-z0-9]/g, "")}`);
  const bus = await connect({ servers: server.url, namespace: ns, ...busOptions, name: `jetloop-${name}` });
  await bus.provision();
  const nc = await natsConnect({ servers: server.url, name: `raw-${name}` });
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  return {
    ns,
    stream: bus.stream,
    bus,
    nc,
    js,
    jsm,
    async close() {
      // The stream goes too: the next benchmark starts from an empty server.
      await jsm.streams.delete(bus.stream).catch(() => undefined);
      await bus.close();
      await nc.close();
    },
  };
}

/** One row of the results table. */
export interface Row {
  readonly bench: string;
  readonly metric: string;
  readonly unit: string;
  /** Which raw client the row compares against. */
  readonly raw: string;
  readonly jetloopMedian: number;
  readonly rawMedian: number;
  /** jetloop / raw, of the medians. */
  readonly ratio: number;
  /** e.g. ">= 3", "<= 1.2"; empty when the row is informative only. */
  readonly target: string;
  readonly met: boolean | undefined;
  /** What the target applies to: the ratio (default) or the jetloop figure itself. */
  readonly targetOn?: "ratio" | "jetloop";
  readonly jetloopSamples: readonly number[];
  readonly rawSamples: readonly number[];
  readonly note?: string;
}

/** What a comparison row says before its figures: the samples fill in the rest. */
export interface RowLabel {
  readonly bench: string;
  readonly metric: string;
  readonly unit: string;
  readonly raw: string;
  /** On the ratio of the medians; empty (the default) for an informative row. */
  readonly target?: string;
}

/** A row comparing jetloop's samples with a raw client's: medians, their ratio, the target. */
export function compareRow(label: RowLabel, jetloopSamples: readonly number[], rawSamples: readonly number[]): Row {
  const jetloopMedian = median(jetloopSamples);
  const rawMedian = median(rawSamples);
  const ratio = jetloopMedian / rawMedian;
  const target = label.target ?? "";
  return { ...label, jetloopMedian, rawMedian, ratio, target, met: targetMet(ratio, target), jetloopSamples, rawSamples };
}

export function targetMet(ratio: number, target: string): boolean | undefined {
  const m = /^(>=|<=)\s*([\d.]+)$/.exec(target.trim());
  if (!m) return undefined;
  const v = Number(m[2]);
  return m[1] === ">=" ? ratio >= v : ratio <= v;
}
