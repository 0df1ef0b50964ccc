/**
 * The bytes the gateway's reads may owe its NATS connection at once. Every viewer shares
 * that connection, and nats-server cuts a connection that owes more than its `max_pending`
 * (64 MiB by default) as a slow consumer: every SSE stream and every request on it fails
 * at once. One pull is bounded (journal/pull-size.ts, 8 MiB), but 30 journal pages or 60
 * status reads of megabyte events at once owed it hundreds of MiB. So each read route
 * takes, before it pulls, the bytes its pull may ask for and not yet received (`pullBytes`),
 * from one budget per connection (half the server's max_pending; the other half is the
 * live feed's), and gives them back once the pull's messages have reached the client
 * library. In practice a request holds its share while it reads (its pulls are issued and
 * answered as it iterates), and a request that does not fit waits its turn (first come, first served) instead of
 * overrunning the connection. What counts is bytes the server still owes, not bytes waiting
 * for a slow HTTP client: a journal page or an SSE stream whose client stops reading gives
 * its share back while it waits for that client (what it already holds is at most one
 * pull's bytes, since it pulls no more until the client has taken them; a pull issued just
 * before the wait may still be arriving, at network speed, when the share goes back), and
 * takes a share again before it reads on. So a few clients that stop reading cannot stall every other
 * viewer's reads.
 *
 * A request holds at most one share at a time and never waits for another while it holds
 * one (it gives its share back before it waits for its client, and waits for a share only
 * while it holds none), so requests cannot wait on each other in a circle.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { OptionsError } from "../errors.js";
import type { ReadPauses } from "../journal/read-pauses.js";

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

/**
 * One request's share of a budget, held while it reads from the connection and given back
 * while it waits for its HTTP client: `hold` takes it unless already held, `give` returns
 * it (either may be called any number of times). A share is never held by a request that
 * waits for something other than its own reads.
 */
export class ReadShare {
  #release: (() => void) | undefined;
  #closed = false;

  constructor(
    readonly budget: ReadBudget,
    readonly bytes: number,
    readonly signal?: AbortSignal,
  ) {}

  get held(): boolean {
    return this.#release !== undefined;
  }

  /**
   * Resolves once the share is held; rejects with the signal's reason when the client left
   * while it waited. After `close`, holds nothing: a take still waiting then is given back
   * as soon as it is granted, so a read that outlives its request keeps no share.
   */
  async hold(): Promise<void> {
    if (this.#closed || this.#release !== undefined) return;
    const release = await this.budget.take(this.bytes, this.signal);
    if (this.#closed || this.#release !== undefined) release();
    else this.#release = release;
  }

  give(): void {
    const release = this.#release;
    this.#release = undefined;
    release?.();
  }

  /** Gives the share back for good: the request is done. */
  close(): void {
    this.#closed = true;
    this.give();
  }

  /** This share as a read's pauses (subscribe/read-pauses.ts): given back while the read pauses, held again before it goes on. */
  get pauses(): ReadPauses {
    return { paused: () => this.give(), resumed: () => this.hold() };
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
