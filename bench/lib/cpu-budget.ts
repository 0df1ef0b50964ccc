/**
 * Each server "its own machine" of a fixed size on one box: every process put in its own
 * cgroup (v1 cpu controller) with a CFS quota, so it can use at most that many cores however
 * idle the rest of the machine is, and a high weight (cpu.shares), so it gets them however
 * busy the machine is with other work (the first runs, with the quota alone, on a machine
 * at load 10–14: every server got a tenth of its quota and none was ever throttled; the
 * load, not the quota, set the rate). Only where cgroup v1's cpu controller is writable
 * (root, a v1 or hybrid mount); anywhere else `checkCpuBudget` refuses, saying why.
 */
import { execFileSync } from "node:child_process";
import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";

const CPU_ROOT = "/sys/fs/cgroup/cpu";
const PERIOD_US = 100_000;
/**
 * A group's weight against the other work on the machine (each of its processes' threads
 * 1024 at nice 0): a quarter of cgroup v1's maximum, so four groups outweigh about 250
 * busy threads; the quotas, not the weight, bound what the groups take.
 */
const SHARES = 65_536;

/** Why the quota mode cannot run here, or undefined when it can. */
export function cpuBudgetUnavailable(): string | undefined {
  if (process.platform !== "linux") return `cgroups are Linux's; this is ${process.platform}`;
  if (!existsSync(join(CPU_ROOT, "cpu.cfs_quota_us"))) {
    return `no cgroup v1 cpu controller at ${CPU_ROOT} (a cgroup v2-only machine, or none mounted)`;
  }
  try {
    accessSync(CPU_ROOT, constants.W_OK);
  } catch {
    return `${CPU_ROOT} is not writable (run as root, with the cgroup mount read-write)`;
  }
  return undefined;
}

/**
 * `--server-cpu`: cores per server, checked eagerly; refuses where cgroups cannot take it.
 * Three servers must leave the producers something: 3 × cores below the machine's.
 */
export function checkCpuBudget(cores: number, servers = 3): void {
  const machine = availableParallelism();
  if (!Number.isFinite(cores) || cores <= 0 || cores * servers >= machine) {
    throw new Error(`--server-cpu must be a number of cores above 0 and below ${(machine / servers).toFixed(2)} (${servers} servers on ${machine} cores, the producers beside them), not ${cores}`);
  }
  const why = cpuBudgetUnavailable();
  if (why !== undefined) throw new Error(`--server-cpu needs writable cgroup v1 cpu control: ${why}`);
}

export interface Throttling {
  /** CFS periods in which the group had work, and those in which it hit its quota. */
  readonly periods: number;
  readonly throttled: number;
}

export interface CpuBudget {
  /** Moves the process (all its threads, and the children it starts later) into its own group of `cores`. */
  place(name: string, pid: number, cores: number): void;
  throttling(name: string): Throttling;
  /** Moves whatever is still in the groups back to ours, and removes the groups. */
  close(): void;
}

export function cpuBudget(): CpuBudget {
  const why = cpuBudgetUnavailable();
  if (why !== undefined) throw new Error(`CPU groups need writable cgroup v1 cpu control: ${why}`);
  // Named for this process, so two benchmarks at once never share a group; a run killed
  // before close() leaves them behind: `rmdir /sys/fs/cgroup/cpu/jetloop-bench-*`.
  const groups = new Map<string, string>();
  const home = join(CPU_ROOT, ownCpuGroup(), "cgroup.procs");
  const group = (name: string): string => {
    const dir = groups.get(name);
    if (dir === undefined) throw new Error(`no CPU group for ${name}`);
    return dir;
  };
  return {
    place(name, pid, cores) {
      if (groups.has(name)) throw new Error(`${name} already has a CPU group`);
      const dir = join(CPU_ROOT, `jetloop-bench-${process.pid}-${name.replace(/[^A-Za-z0-9-]/g, "_")}`);
      mkdirSync(dir);
      groups.set(name, dir);
      writeFileSync(join(dir, "cpu.cfs_period_us"), String(PERIOD_US));
      writeFileSync(join(dir, "cpu.cfs_quota_us"), String(Math.round(cores * PERIOD_US)));
      writeFileSync(join(dir, "cpu.shares"), String(SHARES));
      writeFileSync(join(dir, "cgroup.procs"), String(pid));
    },
    throttling(name) {
      const stat = Object.fromEntries(
        readFileSync(join(group(name), "cpu.stat"), "utf8")
          .trim()
          .split("\n")
          .map((l) => l.split(" ") as [string, string]),
      );
      return { periods: Number(stat.nr_periods), throttled: Number(stat.nr_throttled) };
    },
    close() {
      const failures: string[] = [];
      for (const dir of groups.values()) {
        try {
          removeGroup(dir, home);
        } catch (e) {
          failures.push(`${dir}: ${(e as Error).message}`);
        }
      }
      groups.clear();
      if (failures.length > 0) throw new Error(`CPU groups not removed (rmdir them by hand): ${failures.join("; ")}`);
    },
  };
}

const code = (e: unknown) => (e as NodeJS.ErrnoException).code;

/**
 * Moves each process still in the group home, then removes it. A process killed a moment
 * ago may still be listed while it exits, which a group of 0.1 cores on a loaded machine
 * lets it do slowly: moving one already gone is ESRCH, and the group is EBUSY until the
 * exit is done, so both are tried again for up to 5 s.
 */
function removeGroup(dir: string, home: string): void {
  const deadline = Date.now() + 5_000;
  for (;;) {
    for (const pid of readFileSync(join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean)) {
      try {
        writeFileSync(home, pid);
      } catch (e) {
        if (code(e) !== "ESRCH") throw e;
      }
    }
    try {
      rmdirSync(dir);
      return;
    } catch (e) {
      if (code(e) !== "EBUSY" || Date.now() > deadline) throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
}

/** This process's own cpu cgroup (relative to the controller's root). */
function ownCpuGroup(): string {
  const line = readFileSync("/proc/self/cgroup", "utf8")
    .split("\n")
    .find((l) => l.split(":")[1]?.split(",").includes("cpu"));
  return line?.split(":").slice(2).join(":") ?? "/";
}

let ticksPerSecond: number | undefined;

/** CPU seconds (user + system, all threads) a live process has used, from /proc/<pid>/stat. */
export function processCpuSeconds(pid: number): number {
  ticksPerSecond ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());
  return cpuTicks(readFileSync(`/proc/${pid}/stat`, "utf8")) / ticksPerSecond;
}

/** utime + stime of a /proc/<pid>/stat line; the command name may hold spaces and parentheses. */
export function cpuTicks(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields 14 and 15 of proc(5); the slice starts at field 3 (state).
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isSafeInteger(utime) || !Number.isSafeInteger(stime)) throw new Error(`not a /proc/<pid>/stat line: ${stat.slice(0, 80)}`);
  return utime + stime;
}
