/**
 * `npm run bench:md [results.json]`: rewrites BENCHMARKS.md's current table from a run's
 * results (default .bench-out/latest.json); `npm run bench` does it at the end of a full run.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { REPO_ROOT } from "../test/harness/server.js";
import { currentSection, rewriteBenchmarks, type BenchResults } from "./lib/benchmarks-md.js";

/** Rewrites BENCHMARKS.md from the results in `file`. */
export function writeBenchmarksMd(file: string): void {
  const results = JSON.parse(readFileSync(file, "utf8")) as BenchResults;
  const md = join(REPO_ROOT, "BENCHMARKS.md");
  writeFileSync(md, rewriteBenchmarks(readFileSync(md, "utf8"), currentSection(results, relative(REPO_ROOT, file))));
}

if (process.argv[1]?.endsWith("write-md.ts")) {
  const file = process.argv[2] ?? join(REPO_ROOT, ".bench-out", "latest.json");
  writeBenchmarksMd(file);
  process.stdout.write(`BENCHMARKS.md: current figures from ${file}\n`);
}
