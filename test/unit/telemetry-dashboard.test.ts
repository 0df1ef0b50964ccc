// The Grafana dashboard in deploy/ is built from the registry of metric names: every
// series a panel queries is one jetloop writes, and every metric has a panel.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { METRICS, prometheusSeries } from "../../src/telemetry/metrics.js";

interface Panel {
  readonly title: string;
  readonly targets: readonly { readonly expr: string }[];
}
const dashboard = JSON.parse(readFileSync(new URL("../../deploy/grafana/jetloop-dashboard.json", import.meta.url), "utf8")) as { panels: Panel[] };
const known = new Map(Object.values(METRICS).flatMap((d) => prometheusSeries(d).map((s) => [s, d] as const)));
/** PromQL function and keyword names, and label names inside by()/{}: not series. */
const NOT_SERIES = new Set(["sum", "by", "rate", "increase", "max", "histogram_quantile", "le", "route", "status", "outcome", "kind", "reason", "durable", "state", "role"]);

function seriesIn(expr: string): string[] {
  const withoutStrings = expr.replace(/"[^"]*"/g, '""').replace(/\[[^\]]*\]/g, "");
  return [...withoutStrings.matchAll(/[a-zA-Z_][a-zA-Z0-9_]*/g)].map((m) => m[0]).filter((w) => !NOT_SERIES.has(w));
}

describe("deploy/grafana/jetloop-dashboard.json", () => {
  it("queries only series jetloop writes, by attributes the metric has", () => {
    expect(dashboard.panels.length).toBeGreaterThan(0);
    for (const p of dashboard.panels) {
      expect(p.targets.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets) {
        const series = seriesIn(t.expr);
        expect(series.length, t.expr).toBeGreaterThan(0);
        for (const s of series) {
          expect(known.has(s), `${p.title}: ${s}`).toBe(true);
          // Every label it groups or filters by is one of the metric's attributes (le: a histogram's bucket).
          for (const [, labels] of t.expr.matchAll(/by \(([^)]*)\)/g)) {
            for (const l of labels!.split(",").map((x) => x.trim())) if (l !== "le") expect(known.get(s)!.attributes, `${p.title}: ${l}`).toContain(l);
          }
        }
      }
    }
  });

  it("has a panel for every metric", () => {
    const used = new Set(dashboard.panels.flatMap((p) => p.targets.flatMap((t) => seriesIn(t.expr))).map((s) => known.get(s)?.name));
    for (const d of Object.values(METRICS)) expect(used, d.name).toContain(d.name);
  });
});
