/**
 * The API report (etc/jetloop.api.md, written by scripts/api-report.ts with
 * @microsoft/api-extractor; `npm run api:check` in npm test's static checks compares the
 * whole surface, signatures included). Here, fast and without a compiler run: the values
 * the package exports at run time are exactly the values the report lists, so a name
 * added to or dropped from src/index.ts without the report fails at once.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as jetloop from "../../src/index.js";
import { exportedNames, REPORT_PATH } from "../../scripts/api-report-names.js";

const report = readFileSync(REPORT_PATH, "utf8");

/** The report's exported values: functions, classes, constants (types have no run-time name). */
function reportedValues(): string[] {
  const names = new Set<string>();
  for (const m of report.matchAll(/^export (?:declare )?(?:abstract )?(?:function|class|const|let|var|enum) ([A-Za-z_$][\w$]*)/gm)) names.add(m[1]!);
  return [...names].sort();
}

describe("the API report", () => {
  it("lists exactly the values the package exports", () => {
    expect(reportedValues()).toEqual(Object.keys(jetloop).sort());
  });

  it("is api-extractor's, and every exported name in it is counted", () => {
    expect(report.startsWith('## API Report File for "jetloop"')).toBe(true);
    const names = exportedNames(report);
    expect(names).toEqual(expect.arrayContaining(reportedValues()));
    // Types and interfaces beyond the values: the surface a user's compiler sees.
    expect(names.length).toBeGreaterThan(reportedValues().length);
  });
});
