/**
 * The bytes the gateway's reads may owe its NATS connection at once. Every viewer shares
 * that connection, and nats-server cuts a connection that owes more than its `max_pending`
 * (64 MiB by default) as a slow consumer: every SSE stream and every request on it fails
 * at once. One pull is bounded (subscribe/pull-size.ts, 8 MiB), but 30 journal pages or 60
 * status reads of megabyte events at once owed it hundreds of MiB. So each read route
 * takes, before it reads, the bytes its reads may have asked for and not yet received
 * (`pullBytes`), from one budget per connection (half the server's max_pending; the other
 * half is the live feed's and the SSE streams'), and gives them back when it has read: a
 * request that does not fit waits its turn (first come, first served) instead of
 * overrunning the connection. A request held back by a slow client (a journal page waits
 * for its client, at most `slowClientMs`) holds its share as long.
 *
 * One request takes one share, once, and never waits for another while it holds one, so
 * requests cannot wait on each other in a circle.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { OptionsError } from "../errors.js";

interface Waiter {
  readonly bytes: number;
  readonly resolve: (release: () => void) => void;
}

export class ReadBudget {
  #free: number;
  readonly #waiting: Waiter[] = [];

  constructor(readonly capacity: number) {
    this.#free = capacity;
  }

  /** Bytes not taken now. */
  get free(): number {
    return this.#free;
  }

  /**
   * Resolves with the function that gives `bytes` back, once they are free (a share larger
   * than the budget takes it all: such a read runs alone). Waits behind those already
   * waiting. Aborted by `signal` (the client left): the wait ends, rejected with its reason.
   */
  take(bytes: number, signal?: AbortSignal): Promise<() => void> {
    const want = Math.min(Math.max(1, bytes), this.capacity);
    if (this.#waiting.length === 0 && want <= this.#free) return Promise.resolve(this.#grant(want));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        bytes: want,
        resolve: (release) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(release);
        },
      };
      const onAbort = () => {
        const at = this.#waiting.indexOf(waiter);
        if (at >= 0) this.#waiting.splice(at, 1);
        // A large waiter leaving may let smaller ones behind it go.
        this.#wake();
        reject(signal!.reason as Error);
      };
      if (signal?.aborted) return reject(signal.reason as Error);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(waiter);
    });
  }

  #grant(bytes: number): () => void {
    this.#free -= bytes;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.#free += bytes;
      this.#wake();
    };
  }

  #wake(): void {
    while (this.#waiting.length > 0 && this.#waiting[0]!.bytes <= this.#free) {
      const w = this.#waiting.shift()!;
      w.resolve(this.#grant(w.bytes));
    }
  }
}

/** One budget per connection, whichever handlers read on it. */
const budgets = new WeakMap<NatsConnection, ReadBudget>();

/**
 * The budget of `nc`'s reads: half of `maxPendingBytes`, the server's max_pending for it.
 * The first handler on a connection sizes it; another stating a different max_pending for
 * the same connection is refused (the server has one limit for it).
 */
export function readBudgetOf(nc: NatsConnection, maxPendingBytes: number): ReadBudget {
  const capacity = Math.floor(maxPendingBytes / 2);
  const had = budgets.get(nc);
  if (had !== undefined) {
    if (had.capacity !== capacity) throw new OptionsError("natsMaxPendingBytes", `this connection's reads are already budgeted for a max_pending of ${had.capacity * 2} bytes`);
    return had;
  }
  const budget = new ReadBudget(capacity);
  budgets.set(nc, budget);
  return budget;
}
