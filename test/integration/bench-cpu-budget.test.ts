// The shards benchmark's CPU groups (bench/lib/cpu-budget.ts) on this machine's kernel: a
// busy process placed in a group of 0.1 cores uses no more than that and is seen throttled;
// close() moves it back and removes the group. Where cgroup v1's cpu controller is not
// writable, making a budget is refused with the reason.
import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { cpuBudget, cpuBudgetUnavailable, processCpuSeconds } from "../../bench/lib/cpu-budget.js";
import { sleep } from "../harness/async.js";

const ours = () => readdirSync("/sys/fs/cgroup/cpu").filter((d) => d.startsWith(`jetloop-bench-${process.pid}-`));

describe("bench CPU budget", () => {
  const why = cpuBudgetUnavailable();

  // Either branch runs wherever the suite does: the refusal where cgroups are not writable.
  const refusedHere = (): boolean => {
    if (why === undefined) return false;
    expect(() => cpuBudget()).toThrow(`CPU groups need writable cgroup v1 cpu control: ${why}`);
    return true;
  };

  it("caps a busy process at its quota and leaves no group behind (refused, saying why, without cgroups)", async () => {
    if (refusedHere()) return;
    const busy = spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" });
    const budget = cpuBudget();
    try {
      const pid = busy.pid!;
      budget.place("busy", pid, 0.1);
      expect(() => budget.place("busy", pid, 0.1)).toThrow(/already has a CPU group/);
      await sleep(300); // its first periods in the group
      const t0 = Date.now();
      const cpu0 = processCpuSeconds(pid);
      const thr0 = budget.throttling("busy");
      await sleep(1_500);
      const cores = (processCpuSeconds(pid) - cpu0) / ((Date.now() - t0) / 1000);
      const thr = budget.throttling("busy");
      // At most its 0.1 cores (one clock tick of slack either side of the window).
      expect(cores).toBeLessThanOrEqual(0.1 + 0.02 / 1.5);
      expect(thr.periods - thr0.periods).toBeGreaterThan(5);
      expect(thr.throttled - thr0.throttled).toBeGreaterThan(0);
    } finally {
      busy.kill("SIGKILL");
      budget.close();
    }
    expect(ours()).toEqual([]);
  });

  it("moves what is still in a group back to ours before removing it (refused without cgroups)", () => {
    if (refusedHere()) return;
    const sleeper = spawn("sleep", ["30"], { stdio: "ignore" });
    const budget = cpuBudget();
    try {
      budget.place("sleeper", sleeper.pid!, 0.1);
      expect(ours()).toHaveLength(1);
      budget.close();
      expect(ours()).toEqual([]);
      expect(existsSync(`/proc/${sleeper.pid!}`)).toBe(true);
    } finally {
      sleeper.kill("SIGKILL");
    }
  });
});
