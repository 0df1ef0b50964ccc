/**
 * BENCHMARKS.md's top table: the current figures, rewritten from a run's results
 * (.bench-out/latest.json) by `npm run bench` at the end of every full run, and by
 * `npm run bench:md` from the latest results. Everything outside the markers is the
 * history, written by hand, and left as it is.
 */
import type { Row } from "./context.js";
import { formatTable } from "./report.js";

export const START = "<!-- bench:current:start (written by npm run bench from .bench-out/latest.json; edit below the end marker) -->";
export const END = "<!-- bench:current:end -->";

/** What the current section needs of a run's results file (bench/run.ts writes it). */
export interface BenchResults {
  readonly date: string;
  readonly machine: { readonly cores?: number; readonly cpu?: string; readonly node?: string; readonly natsServer?: string; readonly commit?: string };
  readonly options: { readonly reps: number; readonly quick?: boolean };
  readonly loadAverage: Readonly<Record<string, readonly number[]>>;
  readonly totalSeconds: number;
  readonly rows: readonly Row[];
}

/** The current section: how the run was made, then its table. */
export function currentSection(r: BenchResults, file: string): string {
  const m = r.machine;
  const load = r.loadAverage.start?.[0];
  const missed = r.rows.filter((row) => row.met === false).length;
  const benches = [...new Set(r.rows.map((row) => row.bench))];
  return [
    START,
    "## Current figures",
    "",
    `\`npm run bench\`, ${r.date.slice(0, 10)}, medians of ${r.options.reps} repetitions; ${m.cores ?? "?"} × ${m.cpu ?? "?"}, node ${m.node ?? "?"}, nats-server ${m.natsServer ?? "?"}` +
      `${m.commit ? `, commit ${m.commit.slice(0, 12)}` : ""}; load average ${load === undefined ? "?" : load.toFixed(1)} at the start` +
      ` (figures under load move from minute to minute: compare ratios within a row). Benchmarks: ${benches.join(", ")}; ${missed} target(s) missed; ${Math.round(r.totalSeconds)} s. Every sample: \`${file}\`.`,
    "",
    formatTable(r.rows),
    END,
  ].join("\n");
}

/**
 * BENCHMARKS.md with its current section replaced by `section`. Without markers (the first
 * rewrite), the section goes above the first `## ` heading, which with everything after it
 * becomes the history.
 */
export function rewriteBenchmarks(markdown: string, section: string): string {
  const start = markdown.indexOf(START);
  const end = markdown.indexOf(END);
  if (start !== -1 && end > start) return markdown.slice(0, start) + section + markdown.slice(end + END.length);
  const first = markdown.search(/^## /m);
  const at = first === -1 ? markdown.length : first;
  const history = first === -1 ? "" : "# History\n\nEarlier runs and what was learnt from them, as they were written.\n\n";
  return `${markdown.slice(0, at)}${section}\n\n${history}${markdown.slice(at)}`;
}
