/**
 * BENCHMARKS.md's current table (bench/lib/benchmarks-md.ts): `npm run bench` puts a run's
 * table on top and leaves the history below as it is; a second run replaces only the table.
 */
import { describe, expect, it } from "vitest";
import { currentSection, END, rewriteBenchmarks, START, type BenchResults } from "../../bench/lib/benchmarks-md.js";
import { compareRow } from "../../bench/lib/context.js";

const run = (date: string, jetloop: number[]): BenchResults => ({
  date,
  machine: { cores: 2, cpu: "Test CPU", node: "v20.19.0", natsServer: "2.12.1", commit: "0123456789abcdef" },
  options: { reps: 3 },
  loadAverage: { start: [0.5, 0.4, 0.3] },
  totalSeconds: 241.6,
  rows: [
    compareRow({ bench: "append", metric: "appends, 1 session", unit: "events/s", raw: "js.publish", target: ">= 0.8" }, jetloop, [1000, 1000, 1000]),
    compareRow({ bench: "replay", metric: "replay 10k", unit: "ms", raw: "ordered consumer" }, [12, 13, 14], [10, 10, 10]),
  ],
});

const notebook = `# Benchmarks

How to run them.

## Codec fast path, 2026-12-01

| old | table |

## Append, 2026-11-20

Notes kept as history.
`;

describe("BENCHMARKS.md's current table", () => {
  it("goes on top, from the run's rows, and the notebook below stays whole as the history", () => {
    const md = rewriteBenchmarks(notebook, currentSection(run("2026-12-04T10:00:00.000Z", [900, 950, 1000]), ".bench-out/bench-a.json"));
    const top = md.slice(md.indexOf(START), md.indexOf(END) + END.length);
    expect(md.indexOf(START)).toBeLessThan(md.indexOf("## Codec fast path"));
    expect(md.startsWith("# Benchmarks\n\nHow to run them.\n\n")).toBe(true);
    expect(top).toContain("## Current figures");
    expect(top).toContain("2026-12-04, medians of 3 repetitions");
    expect(top).toMatch(/\| append +\| appends, 1 session +\| events\/s +\| +950 \| +1,000 \|/);
    expect(top).toContain("0 target(s) missed");
    expect(top).toContain("`.bench-out/bench-a.json`");
    expect(md).toContain("# History");
    expect(md.slice(md.indexOf(END))).toContain(notebook.slice(notebook.indexOf("## Codec fast path")));
  });

  it("a later run replaces the table and nothing else", () => {
    const first = rewriteBenchmarks(notebook, currentSection(run("2026-12-04T10:00:00.000Z", [900, 950, 1000]), ".bench-out/bench-a.json"));
    const second = rewriteBenchmarks(first, currentSection(run("2026-12-05T10:00:00.000Z", [500, 600, 700]), ".bench-out/bench-b.json"));
    expect(second).toContain("2026-12-05");
    expect(second).not.toContain("2026-12-04, medians");
    expect(second).toMatch(/\| append +\| appends, 1 session +\| events\/s +\| +600 \|.*\| NO +\|/);
    expect(second.split(START).length).toBe(2);
    expect(second.slice(second.indexOf(END))).toBe(first.slice(first.indexOf(END)));
  });
});
