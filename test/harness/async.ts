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

/** What `p` rejects with; fails the test if it resolves. */
export async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected a rejection, but the promise resolved");
}
