// The Go runtime's own bytes and verdicts (test/conformance/data/) against jetloop's
// codec: every Go-written event reads and writes back byte for byte; on every mutated input jetloop agrees with Go's verdict and meaning,
// or refuses under one of the stricter rules CONFORMANCE.md lists, exactly as often as it
// says.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  allVerdicts,
  type Column,
  COLUMNS,
  type GoWritten,
  inputOf,
  jetloopReads,
  judge,
  readJsonl,
  type StricterRule,
} from "./go-oracle.js";

type Counts = Record<Column, number>;

/** Rule → its counts per column, as the table in CONFORMANCE.md states them. */
function documentedRules(): Map<string, Counts> {
  const page = readFileSync(join(import.meta.dirname, "../../CONFORMANCE.md"), "utf8");
  const rules = new Map<string, Counts>();
  for (const m of page.matchAll(/^\| `([a-z0-9-]+)` \|.*\| (\d+) \| (\d+) \| (\d+) \|$/gm)) {
    rules.set(m[1]!, { events: Number(m[2]), requests: Number(m[3]), extra: Number(m[4]) });
  }
  return rules;
}

describe("the Go runtime's wire", () => {
  it("reads and writes back every Go-written event byte for byte", () => {
    const written = readJsonl<GoWritten>("go-written-events.jsonl");
    const differ = written.filter((w) => {
      const r = jetloopReads("event", Buffer.from(w.json));
      return !(r.ok && r.reencoded === w.json);
    });
    expect(written.length).toBe(59);
    expect(differ.map((w) => w.id)).toEqual([]);
  });

  it("reads and writes back byte for byte every verdict input that is Go's own output", () => {
    const canonical = allVerdicts().filter(({ c }) => c.canonical);
    expect(canonical.length).toBeGreaterThan(300);
    const differ = canonical.filter(({ c }) => {
      const r = jetloopReads("event", inputOf(c));
      return !(r.ok && r.reencoded === c.json);
    });
    expect(differ.map(({ c }) => c.id)).toEqual([]);
  });

  it("agrees with every Go verdict of every file, or is stricter only by a documented rule", () => {
    const cases = allVerdicts();
    const stricter = new Map<StricterRule, Counts>();
    const disagreements: string[] = [];
    let agree = 0;
    for (const { c, column } of cases) {
      const o = judge(c);
      if (o.kind === "agree") agree++;
      else if (o.kind === "stricter") {
        const counts = stricter.get(o.rule) ?? { events: 0, requests: 0, extra: 0 };
        counts[column]++;
        stricter.set(o.rule, counts);
      } else disagreements.push(`${o.kind}: ${c.id}`);
    }
    const total = [...stricter.values()].reduce((n, k) => n + COLUMNS.reduce((m, col) => m + k[col], 0), 0);
    // The counts are CONFORMANCE.md's (`npx tsx test/conformance/go-oracle.ts` prints them).
    expect(disagreements).toEqual([]);
    expect(agree + total).toBe(cases.length);
    const documented = [...documentedRules()].filter(([, k]) => COLUMNS.some((col) => k[col] > 0));
    expect(new Map([...stricter].sort())).toEqual(new Map(documented.sort()));
  });

  it("documents only rules that exist", () => {
    const rules: StricterRule[] = ["letter-case-keys", "null-values", "inexact-numbers", "uppercase-uuids", "decision-effect", "unwritable-times", "byte-cap", "invalid-utf8", "model-facing-detail", "model-facing-bound"];
    expect([...documentedRules().keys()].sort()).toEqual([...rules].sort());
  });
});
