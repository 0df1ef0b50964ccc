/**
 * The API report's path and the names it exports, apart from scripts/api-report.ts so that
 * a reader of the report (test/unit/api-report.test.ts) does not load api-extractor.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const REPORT_PATH = join(dirname(fileURLToPath(import.meta.url)), "..", "etc", "jetloop.api.md");

/** The names the report lists as exported at the top level (`export function x`, `export class X`, …). */
export function exportedNames(report: string): string[] {
  const names = new Set<string>();
  for (const m of report.matchAll(/^export (?:declare )?(?:abstract )?(?:function|class|interface|type|const|let|var|enum|namespace) ([A-Za-z_$][\w$]*)/gm)) names.add(m[1]!);
  // Re-exports the report writes as `export { x }`.
  for (const m of report.matchAll(/^export \{\s*([^}]+)\}/gm)) for (const n of m[1]!.split(",")) names.add(n.trim().split(/\s+as\s+/).pop()!);
  return [...names].filter(Boolean).sort();
}
