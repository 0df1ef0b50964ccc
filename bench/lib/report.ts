/** The results table printed at the end of a run. */
import type { Row } from "./context.js";

function fmt(v: number, unit: string): string {
  if (!Number.isFinite(v)) return "—";
  if (unit === "µs/event") return v.toFixed(2);
  if (unit === "µs" || unit === "ms") return v >= 100 ? v.toFixed(0) : v.toFixed(1);
  if (unit === "events/s" || unit === "deliveries/s") return Math.round(v).toLocaleString("en-US");
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString("en-US");
  return v.toFixed(2);
}

export function formatTable(rows: readonly Row[]): string {
  const header = ["benchmark", "metric", "unit", "jetloop", "raw", "raw client", "jetloop/raw", "target", "met"];
  const body = rows.map((r) => [
    r.bench,
    r.metric,
    r.unit,
    fmt(r.jetloopMedian, r.unit),
    fmt(r.rawMedian, r.unit),
    r.raw,
    Number.isFinite(r.ratio) ? r.ratio.toFixed(2) : "—",
    r.target || "—",
    r.met === undefined ? "" : r.met ? "yes" : "NO",
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const numeric = new Set([3, 4, 6]);
  const line = (cells: string[]) => `| ${cells.map((c, i) => (numeric.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(" | ")} |`;
  const rule = `|${widths.map((w, i) => (numeric.has(i) ? `${"-".repeat(w + 1)}:` : "-".repeat(w + 2))).join("|")}|`;
  const notes = rows.filter((r) => r.note).map((r) => `- ${r.bench}, ${r.metric}: ${r.note}`);
  return [line(header), rule, ...body.map(line), ...(notes.length ? ["", ...notes] : [])].join("\n");
}
