// The Go runtime's own bytes and verdicts (test/conformance/data/) against jetloop's
// codec: every Go-written event reads and writes back byte for byte; on every mutated input
// jetloop agrees with Go's verdict and meaning, refusing for the rule Go refuses for, or
// refuses under one of the stricter rules CONFORMANCE.md lists where Go's data shows the
// input falls under it (refusal-rules.ts reads that off the data, not off jetloop's codec),
// exactly as often as it says.
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
  dataStricterRules,
  readJsonl,
  type StricterRule,
} from "./go-oracle.js";
import { goRuleOf, OTHER_RULE_EXPLAINED } from "./refusal-rules.js";

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

/** CONFORMANCE.md's sentence on the inputs both refuse, read back. */
function documentedRefusals(): { both: number; same: number; first: number; other: number } {
  const page = readFileSync(join(import.meta.dirname, "../../CONFORMANCE.md"), "utf8");
  const m = /Of the ([\d,]+) inputs both refuse, ([\d,]+) are refused for Go's rule, ([\d,]+) first for a stricter rule the input also falls under, and ([\d,]+) for another rule/.exec(page);
  const n = (s: string | undefined) => Number((s ?? "").replaceAll(",", ""));
  return { both: n(m?.[1]), same: n(m?.[2]), first: n(m?.[3]), other: n(m?.[4]) };
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

  it("every error text of Go's refusals falls under a rule of the table (refusal-rules.ts)", () => {
    const refused = allVerdicts().filter(({ c }) => !c.go_ok);
    expect(refused.length).toBeGreaterThan(800);
    const unmatched = refused.flatMap(({ c }) => (c.go_error_variants ?? [c.go_error ?? ""]).filter((text) => goRuleOf(text) === undefined));
    expect(unmatched).toEqual([]);
  });

  it("each input Go accepts falls under at most one stricter rule, by Go's data alone", () => {
    const several = allVerdicts().filter(({ c }) => c.go_ok && dataStricterRules(c).size > 1);
    expect(several.map(({ c }) => c.id)).toEqual([]);
  }, 60_000);

  it("agrees with every Go verdict of every file, refuses for Go's rule, or is stricter only where Go's data shows a documented rule", () => {
    const cases = allVerdicts();
    // The stricter cases from Go's data alone: Go accepts, and the input falls under a rule.
    const fromData = new Map<StricterRule, Counts>();
    for (const { c, column } of cases) {
      if (!c.go_ok) continue;
      for (const rule of dataStricterRules(c)) {
        const counts = fromData.get(rule) ?? { events: 0, requests: 0, extra: 0 };
        counts[column]++;
        fromData.set(rule, counts);
      }
    }
    const tally = new Map<string, number>();
    const disagreements: string[] = [];
    const otherRule: string[] = [];
    const stricter = new Map<StricterRule, Counts>();
    for (const { c, column } of cases) {
      const o = judge(c);
      tally.set(o.kind, (tally.get(o.kind) ?? 0) + 1);
      if (o.kind === "stricter") {
        const counts = stricter.get(o.rule) ?? { events: 0, requests: 0, extra: 0 };
        counts[column]++;
        stricter.set(o.rule, counts);
      } else if (o.kind === "other-rule") otherRule.push(c.id);
      else if (o.kind !== "agree" && o.kind !== "agree-refused" && o.kind !== "refused-first") disagreements.push(`${o.kind}: ${c.id}`);
    }
    // `npx tsx test/conformance/go-oracle.ts` prints every case and the counts.
    expect(disagreements).toEqual([]);
    // jetloop refuses each of the data's stricter cases under its rule, and no other input.
    expect(new Map([...stricter].sort())).toEqual(new Map([...fromData].sort()));
    const documented = [...documentedRules()].filter(([, k]) => COLUMNS.some((col) => k[col] > 0));
    expect(new Map([...fromData].sort())).toEqual(new Map(documented.sort()));
    // Both refuse: for Go's rule, or first for a stricter rule the input also falls under,
    // or for another rule, each case of which is explained.
    expect(otherRule.sort()).toEqual(Object.keys(OTHER_RULE_EXPLAINED).sort());
    const bothRefuse = cases.filter(({ c }) => !c.go_ok).length - (tally.get("accepts") ?? 0);
    expect(documentedRefusals()).toEqual({ both: bothRefuse, same: tally.get("agree-refused") ?? 0, first: tally.get("refused-first") ?? 0, other: otherRule.length });
    // Two readings of 2,039 inputs: seconds of CPU, more on a loaded machine.
  }, 60_000);

  it("documents only rules that exist", () => {
    const rules: StricterRule[] = ["letter-case-keys", "null-values", "inexact-numbers", "uppercase-uuids", "decision-effect", "unwritable-times", "byte-cap", "invalid-utf8", "model-facing-detail", "model-facing-bound"];
    expect([...documentedRules().keys()].sort()).toEqual([...rules].sort());
  });
});
