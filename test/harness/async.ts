// Waiting in tests: sleep, polling until a condition holds, a race against a timer, and
// what a promise rejects with. The one place for these.
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Resolves to the promise's value, or to `onTimeout` after ms; the timer never holds the process open. */
export function within<T, U>(p: Promise<T>, ms: number, onTimeout: U): Promise<T | U> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<U>((r) => {
    timer = setTimeout(() => r(onTimeout), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** Resolves to the promise's value, or throws after ms naming `what`. */
export async function settledWithin<T>(what: string, p: Promise<T>, ms: number): Promise<T> {
  const late = Symbol("late");
  const r = await within(p, ms, late);
  if (r === late) throw new Error(`${what} did not finish within ${ms} ms`);
  return r;
}

/** Polls `check` until it returns true (or a non-false value); throws the last error on timeout. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | false> | T | false,
  timeoutMs = 30_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const r = await check();
      if (r !== false) return r;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const why = last instanceof Error ? `: ${last.message}` : "";
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await sleep(intervalMs);
  }
}

/**
 * Polls `holds` until it is true or ms have passed; says which. For a scenario that
 * records what it saw instead of failing (a test wants waitFor).
 */
export async function heldWithin(holds: () => boolean, ms: number, intervalMs = 20): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!holds()) {
    if (Date.now() > deadline) return false;
    await sleep(intervalMs);
  }
  return true;
}

/** What `p` rejects with; fails the test if it resolves. */
export async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected a rejection, but the promise resolved");
}
