/**
 * What a durable's journal consumer has delivered to this process and what of it is settled
 * for good, by stream sequence: the position a consumer an operator deleted is recreated
 * from (durable-source.ts). The server's ack floor is gone with the consumer, so it is kept
 * here. A delivery nak'd, failed, left to expire or whose parking failed is still owed (the
 * server would have delivered it again): the recreated consumer starts at the lowest owed
 * sequence, and what was settled above it is acknowledged again as seen, not handed over a
 * second time.
 */

/** Settled sequences above the floor kept to tell a repeat: past this, the oldest go (a repeat of one is handed again: at least once, never lost). */
export const LEDGER_SETTLED_LIMIT = 65_536;

/** Settled sequences kept before the ledger looks for ones it may forget. */
const SETTLED_PRUNE_AT = 1024;

export class DeliveryLedger {
  /** Delivered and not settled for good: the server owes them again. */
  readonly #owed = new Set<number>();
  /** Settled for good (acknowledged, terminated) and above the floor. */
  readonly #settled = new Set<number>();
  /** The consumer's ack floor + 1 as last read from the server (its creation or adoption). */
  #base = 1;
  #last = 0;
  /** The highest sequence delivered since the consumer was last (re)created: settled ones below it will not come again in order. */
  #mark = 0;

  /** The server's ack floor for the consumer, as a reply reported it: nothing at or below it is owed. */
  serverFloor(ackFloor: number): void {
    this.#base = Math.max(this.#base, ackFloor + 1);
    for (const s of this.#owed) if (s <= ackFloor) this.#owed.delete(s);
  }

  /** A delivery of `seq` came; true when it was settled for good before (a repeat after a recreation). */
  received(seq: number): boolean {
    this.#last = Math.max(this.#last, seq);
    this.#mark = Math.max(this.#mark, seq);
    if (this.#settled.has(seq)) return true;
    this.#owed.add(seq);
    return false;
  }

  /** `seq` is acknowledged or terminated: the server will not deliver it again. */
  settled(seq: number): void {
    if (!this.#owed.delete(seq)) return;
    this.#settled.add(seq);
    if (this.#settled.size > LEDGER_SETTLED_LIMIT) {
      for (const s of this.#settled) {
        if (this.#settled.size <= LEDGER_SETTLED_LIMIT / 2) break;
        this.#settled.delete(s);
      }
    }
    // Below the lowest owed a recreated consumer never reads, and below the mark the
    // consumer has passed: forgotten as both move (in batches, not on every settlement).
    if (this.#settled.size >= SETTLED_PRUNE_AT) this.#prune();
  }

  /** The consumer was created again at `from`: it delivers everything from there again. */
  restarted(): void {
    this.#mark = 0;
  }

  #prune(): void {
    let below = this.#mark;
    for (const s of this.#owed) if (s < below) below = s;
    for (const s of this.#settled) if (s < below) this.#settled.delete(s);
  }

  /** Where a recreated consumer starts: the lowest sequence owed, else after the last delivered (never before the server's floor). */
  floor(): number {
    let low = Number.POSITIVE_INFINITY;
    for (const s of this.#owed) if (s < low) low = s;
    return low === Number.POSITIVE_INFINITY ? Math.max(this.#base, this.#last + 1) : low;
  }

  /** The highest sequence delivered to this process (0: none). */
  get last(): number {
    return this.#last;
  }

  /** How many deliveries are owed (for tests and figures). */
  get owed(): number {
    return this.#owed.size;
  }
}
