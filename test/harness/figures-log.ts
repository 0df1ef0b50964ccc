// Figures a test reports (case counts per rule, memory and time under a flood): written to
// one file of the run, .bench-out/test-figures.log (git-ignored), and printed by
// scripts/test.sh after the tests pass. Not to the console: a passing run's output carries
// no test output (scripts/clean-run.sh), so what a test prints there is noise or a failure.
import { appendFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";

export const FIGURES_LOG = join(import.meta.dirname, "../../.bench-out/test-figures.log");

/** Records one line of figures for the run's summary. */
export function reportFigure(line: string): void {
  mkdirSync(dirname(FIGURES_LOG), { recursive: true });
  appendFileSync(FIGURES_LOG, `${line}\n`);
}
