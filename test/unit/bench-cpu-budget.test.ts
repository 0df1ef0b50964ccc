// The shards benchmark's CPU budget (bench/lib/cpu-budget.ts): the /proc/<pid>/stat reading
// its CPU figures rest on, and `--server-cpu`'s eager refusals.
import { availableParallelism } from "node:os";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkCpuBudget, cpuBudgetUnavailable, cpuTicks } from "../../bench/lib/cpu-budget.js";

/** A /proc/<pid>/stat line as proc(5) lays it out: pid (comm) state, then fields 4–52. */
function statLine(pid: number, comm: string, utime: number, stime: number): string {
  const rest = Array.from({ length: 52 - 3 }, (_, i) => (i === 14 - 4 ? utime : i === 15 - 4 ? stime : i + 7));
  return `${pid} (${comm}) S ${rest.join(" ")}\n`;
}

describe("cpuTicks", () => {
  it("reads utime + stime whatever the command name holds (spaces, parentheses, digits)", () => {
    const comm = fc.string({ unit: fc.constantFrom("a", " ", "(", ")", "1", "-", "S"), maxLength: 15 });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4_194_304 }), comm, fc.nat(), fc.nat(), (pid, c, u, s) => {
        expect(cpuTicks(statLine(pid, c, u, s))).toBe(u + s);
      }),
    );
  });

  it("refuses what is not a stat line, never reads it as zero", () => {
    for (const bad of ["", "12 (x)", "12 (x) S 1 2 3", "garbage"]) expect(() => cpuTicks(bad), bad).toThrow(/not a \/proc/);
  });
});

describe("--server-cpu", () => {
  const machine = availableParallelism();
  it("refuses a budget that is not a positive number of cores leaving the producers some", () => {
    for (const bad of [0, -0.1, Number.NaN, Number.POSITIVE_INFINITY, machine / 3, machine]) {
      expect(() => checkCpuBudget(bad), String(bad)).toThrow(/--server-cpu must be a number of cores above 0 and below/);
    }
  });

  it("takes one that fits where cgroups are writable, and says why not where they are not", () => {
    const why = cpuBudgetUnavailable();
    if (why === undefined) expect(() => checkCpuBudget(machine / 3 - 0.01)).not.toThrow();
    else expect(() => checkCpuBudget(machine / 3 - 0.01)).toThrow(`--server-cpu needs writable cgroup v1 cpu control: ${why}`);
  });
});
