// Generated inputs, reproducibly: the one place that says which seed a run's properties
// use and how many runs they make.
//
// JETLOOP_SEED fixes the seed (an integer, as fast-check takes it); without it each test
// process draws one at random. The setup file property-seed.ts gives it to fast-check's
// global configuration, so every fc.assert and fc.sample of the run uses it, and prints it
// beside a failing test: `JETLOOP_SEED=<seed> npx vitest run <file>` generates the same
// inputs again.
//
// JETLOOP_DEEP=1 (`npm run test:deep`) is the deep profile: the integration properties that
// run a few cases in CI (each case is seconds of servers and commits) run many more.
import { randomInt } from "node:crypto";

const KEY = Symbol.for("jetloop.property-seed");
const store = globalThis as { [KEY]?: number };

/** A seed as fast-check takes it: an integer in the 32-bit signed range. */
export function parseSeed(text: string): number {
  const n = Number(text);
  if (text.trim() === "" || !Number.isSafeInteger(n) || n < -(2 ** 31) || n >= 2 ** 31) {
    throw new Error(`JETLOOP_SEED must be an integer from -2^31 to 2^31-1, not ${JSON.stringify(text)}`);
  }
  return n;
}

/** This process's seed: JETLOOP_SEED, else one drawn once (not from the clock) and kept. */
export function propertySeed(): number {
  const asked = process.env.JETLOOP_SEED;
  if (asked !== undefined) return parseSeed(asked);
  return (store[KEY] ??= randomInt(0, 2 ** 31 - 1));
}

/** Whether the deep profile runs (JETLOOP_DEEP=1); anything but 0 or 1 is refused. */
export function deepProfile(): boolean {
  const asked = process.env.JETLOOP_DEEP;
  if (asked === undefined || asked === "0") return false;
  if (asked === "1") return true;
  throw new Error(`JETLOOP_DEEP must be 0 or 1, not ${JSON.stringify(asked)}`);
}

/** How many cases a property runs: `quick` in CI, `deep` in the deep profile. */
export function propertyRuns(quick: number, deep: number): number {
  return deepProfile() ? deep : quick;
}

/** A test's timeout scaled to the profile: `deep` runs take proportionally longer. */
export function propertyTimeout(quickMs: number, quick: number, deep: number): number {
  return deepProfile() ? Math.ceil((quickMs * deep) / quick) : quickMs;
}
