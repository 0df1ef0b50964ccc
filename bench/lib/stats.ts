/** Small statistics helpers for the benchmarks: medians, percentiles, ratios. */

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Nearest-rank percentile (p in 0..100) of an unsorted sample. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = Float64Array.from(xs).sort();
  const rank = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[rank]!;
}

/** High-resolution clock in milliseconds. */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** High-resolution clock in microseconds (for latency samples). */
export function nowUs(): number {
  return Number(process.hrtime.bigint()) / 1e3;
}

// The benchmarks already run on the test harness (its servers): one sleep for both.
export { sleep } from "../../test/harness/async.js";

/** Runs `n` tasks keeping at most `window` in flight; resolves when all have settled. */
export async function windowed(n: number, window: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  let failed: unknown;
  const lane = async (): Promise<void> => {
    while (next < n && failed === undefined) {
      const i = next++;
      try {
        await task(i);
      } catch (e) {
        failed ??= e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(window, n) }, lane));
  if (failed !== undefined) throw asError(failed);
}

/** Forces a full garbage collection (the flag is set at start-up by run.ts). */
export function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** A thrown value as an Error. */
export function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(typeof e === "string" ? e : JSON.stringify(e));
}

/**
 * Each contender `reps` times, the order rotated every repetition so drift on a noisy
 * machine favours none; `before` runs ahead of each sample (a purge, say). Returns the
 * samples by name and logs each repetition's rates under `label`.
 */
export async function rotatedRounds<K extends string>(
  label: string,
  reps: number,
  log: (line: string) => void,
  contenders: Readonly<Record<K, () => Promise<number>>>,
  before: () => Promise<unknown> = () => Promise.resolve(),
): Promise<Record<K, number[]>> {
  const names = Object.keys(contenders) as K[];
  const samples = Object.fromEntries(names.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (let r = 0; r < reps; r++) {
    for (const name of names.map((_, i) => names[(i + r) % names.length]!)) {
      await before();
      samples[name].push(await contenders[name]());
    }
    log(`${label} rep ${r + 1}: ${names.map((k) => `${k} ${Math.round(samples[k].at(-1)!)}/s`).join(", ")}`);
  }
  return samples;
}
