// The Go runtime's own bytes and verdicts (test/conformance/data/) against jetloop's
// codec: every Go-written event reads and writes back byte for byte; on every mutated input jetloop agrees with Go's verdict and meaning,
// or refuses under one of the stricter rules CONFORMANCE.md lists, exactly as often as it
// says.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  type GoVerdict,
  type GoWritten,
  jetloopReads,
  judge,
  readJsonl,
  type StricterRule,
} from "./go-oracle.js";

/** Rule → [event cases, request cases], as the table in CONFORMANCE.md states them. */
function documentedRules(): Map<string, [number, number]> {
  const page = readFileSync(join(import.meta.dirname, "../../CONFORMANCE.md"), "utf8");
  const rules = new Map<string, [number, number]>();
  for (const m of page.matchAll(/^\| `([a-z0-9-]+)` \|.*\| (\d+) \| (\d+) \|$/gm)) rules.set(m[1]!, [Number(m[2]), Number(m[3])]);
  return rules;
}

describe("the Go runtime's wire", () => {
  it("reads and writes back every Go-written event byte for byte", () => {
    const written = readJsonl<GoWritten>("go-written-events.jsonl");
    const identical = written.filter((w) => {
      const r = jetloopReads("event", Buffer.from(w.json));
      return r.ok && r.reencoded === w.json;
    });
    expect(written.length).toBe(59);
    expect(written.filter((w) => !identical.includes(w)).map((w) => w.id)).toEqual([]);
  });

  it("agrees with every Go verdict, or is stricter only by a documented rule", () => {
    const cases = readJsonl<GoVerdict>("go-verdicts.jsonl");
    const stricter = new Map<StricterRule, [number, number]>();
    const disagreements: string[] = [];
    let agree = 0;
    for (const c of cases) {
      const o = judge(c);
      if (o.kind === "agree") agree++;
      else if (o.kind === "stricter") {
        const counts = stricter.get(o.rule) ?? [0, 0];
        counts[c.kind === "event" ? 0 : 1]++;
        stricter.set(o.rule, counts);
      } else disagreements.push(`${o.kind}: ${c.id}`);
    }
    const total = [...stricter.values()].reduce((n, [e, r]) => n + e + r, 0);
    // The counts are CONFORMANCE.md's (`npx tsx test/conformance/go-oracle.ts` prints them).
    expect(disagreements).toEqual([]);
    expect(agree + total).toBe(cases.length);
    expect(new Map([...stricter].sort())).toEqual(new Map([...documentedRules()].filter(([, [e, r]]) => e + r > 0).sort()));
  });

  it("documents only rules that exist", () => {
    const rules: StricterRule[] = ["letter-case-keys", "null-values", "inexact-numbers", "uppercase-uuids", "decision-effect", "unwritable-times", "byte-cap", "invalid-utf8", "model-facing-detail", "model-facing-bound"];
    expect([...documentedRules().keys()].sort()).toEqual([...rules].sort());
  });
});
