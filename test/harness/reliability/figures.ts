// The figures of the reliability scenarios (test/integration/reliability/, and
// scripts/reliability-soak.ts): what each run counted, written as one JSON file per
// scenario and run into the git-ignored .bench-out/reliability/<run>/, from which
// scripts/reliability-report.ts renders RELIABILITY.md.
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../server.js";

export const FIGURES_DIR = join(REPO_ROOT, ".bench-out/reliability");

/** One thing that was counted: events in, events out, and what went missing or came twice. */
export interface FigureRow {
  /** What was counted, e.g. "journal (stream audit)" or "durable subscriber". */
  readonly what: string;
  /** Events the producer handed in (distinct event ids). */
  readonly published: number;
  /** Deliveries (or stored messages) counted, duplicates included. */
  readonly delivered: number;
  /** Published events that never arrived (must be 0 where the scenario promises it); null where it does not apply. */
  readonly lost: number | null;
  /** Deliveries beyond the first of an event id. */
  readonly duplicated: number;
  /** Further counts for this row, e.g. `{ "failed (typed)": 3 }`. */
  readonly notes?: Readonly<Record<string, number | string>>;
  /** The row shows a loss on purpose (a setting that loses data); the summary leaves it out. */
  readonly expectedLoss?: boolean;
}

export interface ScenarioRecord {
  /** Stable id, sorts in report order: "1-server-restart". */
  readonly id: string;
  readonly title: string;
  /** "newest" | "oldest" | "external" for the suite, "soak-…" for the soak script. */
  readonly run: string;
  readonly serverVersion: string;
  readonly finishedAt: string;
  readonly durationMs: number;
  readonly rows: readonly FigureRow[];
  /** Scenario-specific facts: timings, settings, counts that are not event flows. */
  readonly facts?: Readonly<Record<string, number | string | boolean>>;
  /**
   * One part of a scenario whose faults run in several test files (the attach's): each part
   * is its own file, and the report joins the parts of a run into one table, in part order.
   */
  readonly part?: string;
}

/** Writes a scenario's figures (atomically: several test workers write at once). */
export function writeScenarioRecord(record: ScenarioRecord, dir: string = FIGURES_DIR): string {
  const runDir = join(dir, record.run);
  mkdirSync(runDir, { recursive: true });
  const file = join(runDir, `${record.id}${record.part === undefined ? "" : `.${record.part}`}.json`);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(record, null, 2)}\n`);
  renameSync(tmp, file);
  return file;
}

/** Every recorded scenario run under `dir`. */
export function readScenarioRecords(dir: string = FIGURES_DIR): ScenarioRecord[] {
  const out: ScenarioRecord[] = [];
  let runs: string[];
  try {
    runs = readdirSync(dir);
  } catch {
    return out;
  }
  for (const run of runs) {
    let files: string[];
    try {
      files = readdirSync(join(dir, run)).filter((f) => f.endsWith(".json"));
    } catch {
      continue;
    }
    for (const f of files) {
      try {
        out.push(JSON.parse(readFileSync(join(dir, run, f), "utf8")) as ScenarioRecord);
      } catch {
        // a half-written or foreign file: skip it
      }
    }
  }
  return out;
}

/**
 * Counts deliveries against what was published: `delivered` includes duplicates,
 * `lost` is published ids never received, `unexpected` received ids never published.
 */
export function tally(published: Iterable<string>, received: Iterable<string>): { published: number; delivered: number; lost: number; duplicated: number; unexpected: number; lostIds: string[] } {
  const pub = new Set(published);
  const seen = new Map<string, number>();
  let delivered = 0;
  for (const id of received) {
    delivered++;
    seen.set(id, (seen.get(id) ?? 0) + 1);
  }
  const lostIds = [...pub].filter((id) => !seen.has(id));
  let unexpected = 0;
  for (const id of seen.keys()) if (!pub.has(id)) unexpected++;
  return { published: pub.size, delivered, lost: lostIds.length, duplicated: delivered - seen.size, unexpected, lostIds };
}

/** A FigureRow from a tally. */
export function row(
  what: string,
  t: { published: number; delivered: number; lost: number | null; duplicated: number },
  notes?: Record<string, number | string>,
  expectedLoss?: boolean,
): FigureRow {
  return { what, published: t.published, delivered: t.delivered, lost: t.lost, duplicated: t.duplicated, ...(notes ? { notes } : {}), ...(expectedLoss ? { expectedLoss } : {}) };
}
