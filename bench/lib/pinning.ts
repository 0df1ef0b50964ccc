/**
 * CPU pinning for the fan-out benchmark: the server and the appending process on one half
 * of the machine's CPUs, the viewers' process (this one) on the other, as if the viewers
 * ran on a host of their own. On the same CPUs, the viewers' decoding of every event
 * competes with the server and the appender for the same cores, so the append rate
 * measures both that decoding and the server's own cost of the fan-out; pinned, it
 * measures the server's. The benchmark reports both.
 *
 * Needs `taskset` (util-linux) and two CPUs or more; `pinning()` says why not otherwise.
 */
import { execFileSync } from "node:child_process";
import { availableParallelism } from "node:os";

export interface Pinning {
  /** Runs `fn` with `servers` (pids) on the first half of the CPUs and this process on the rest; restores all CPUs after. */
  run<T>(servers: readonly number[], fn: () => Promise<T>): Promise<T>;
  /** e.g. "server + appender on CPU 0, viewers on CPU 1" */
  readonly describe: string;
}

function taskset(cpus: string, pid: number): void {
  // -a: every thread of the process (Go's and libuv's too).
  execFileSync("taskset", ["-a", "-p", "-c", cpus, String(pid)], { stdio: "ignore" });
}

/** The split, or the reason there is none. */
export function pinning(): Pinning | string {
  const n = availableParallelism();
  if (n < 2) return "one CPU: nothing to pin apart";
  try {
    execFileSync("taskset", ["-p", String(process.pid)], { stdio: "ignore" });
  } catch {
    return "no taskset (util-linux)";
  }
  const half = Math.floor(n / 2);
  const range = (from: number, to: number) => (from === to ? String(from) : `${from}-${to}`);
  const servers = range(0, half - 1);
  const viewers = range(half, n - 1);
  const all = range(0, n - 1);
  return {
    describe: `server + appender on CPU ${servers}, viewers on CPU ${viewers}`,
    async run(pids, fn) {
      for (const pid of pids) taskset(servers, pid);
      taskset(viewers, process.pid);
      try {
        return await fn();
      } finally {
        for (const pid of [...pids, process.pid]) {
          try {
            taskset(all, pid);
          } catch {
            // a process that ended has no affinity to restore
          }
        }
      }
    },
  };
}
