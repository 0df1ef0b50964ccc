/**
 * The pauses of a journal read: a backoff between attempts (a leader election), or a poll
 * for the rest of a turn a message says is longer than what is stored (journal-range.ts).
 * While it pauses a read owes its connection nothing, so whoever runs reads under a budget
 * of bytes in flight (the gateway: gateway/read-budget.ts) gives its share back for the
 * pause and takes it again before the read goes on. Otherwise a message whose header claims
 * a long turn, which costs its own reader a few polls, would hold a share of the budget
 * every other viewer's reads need through those polls.
 *
 * Carried in the async context (AsyncLocalStorage), not through every read's options: the
 * reads are the public replay and subscription paths, which know nothing of a budget.
 */
import { AsyncLocalStorage } from "node:async_hooks";

/** What a budgeted caller does around a pause of its reads. */
export interface ReadPauses {
  /** The read pauses: nothing is owed until `resumed`. */
  paused(): void;
  /** The read goes on: resolves once it may pull again. */
  resumed(): Promise<void>;
}

const current = new AsyncLocalStorage<ReadPauses>();

/** Runs `fn` with `pauses` told of every pause of the journal reads it makes. */
export function withReadPauses<T>(pauses: ReadPauses, fn: () => Promise<T>): Promise<T> {
  return current.run(pauses, fn);
}

/** Waits for `wait` as a pause of the current read: its caller's share is given back meanwhile. */
export async function readPause(wait: () => Promise<void>): Promise<void> {
  const pauses = current.getStore();
  if (pauses === undefined) return wait();
  pauses.paused();
  try {
    await wait();
  } finally {
    await pauses.resumed();
  }
}

/** Runs `fn` outside any caller's pauses: work that outlives its caller (a background delete). */
export function detachedFromReadPauses<T>(fn: () => T): T {
  return current.exit(fn);
}
