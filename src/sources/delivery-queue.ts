/**
 * The bounded buffer between a subscription's sources and its reader. Enduring
 * deliveries are never dropped: a full enduring buffer makes the source wait, and
 * the consumer's pull-based flow control holds the rest on the server. Ephemeral
 * deliveries drop the oldest when full (counted), so a slow UI sees fresh previews.
 * Arrival order is kept across both kinds. The reader's `next` is the queue's own promise,
 * with no wrapper: on the feed it is one per delivered event.
 */
interface Slot<D> {
  readonly stamp: number;
  readonly item: D;
}

export class DeliveryQueue<D> {
  // The buffers are made on first use: an idle subscription of ten thousand holds none.
  #enduring: Slot<D>[] | undefined;
  #ephemeral: Slot<D>[] | undefined;
  readonly #enduringLimit: number;
  readonly #ephemeralLimit: number;
  #stamp = 0;
  #dropped = 0;
  #taken = 0;
  #ended = false;
  /** Why the queue ended, for the reader once it has drained the buffers. */
  #error: Error | undefined;
  #reader: ((r: IteratorResult<D> | PromiseLike<IteratorResult<D>>) => void) | undefined;
  #space: (() => void)[] | undefined;
  /** Told of each item as the reader takes it (a subscription's positions). */
  readonly #onTaken: ((item: D) => void) | undefined;

  constructor(enduringLimit: number, ephemeralLimit: number, onTaken?: (item: D) => void) {
    this.#enduringLimit = enduringLimit;
    this.#ephemeralLimit = ephemeralLimit;
    this.#onTaken = onTaken;
  }

  get dropped(): number {
    return this.#dropped;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Items the reader has taken. */
  get taken(): number {
    return this.#taken;
  }

  /** Resolves once the item is buffered (waits while the enduring buffer is full). */
  async pushEnduring(item: D): Promise<void> {
    while (!this.hasRoom()) {
      await new Promise<void>((resolve) => (this.#space ??= []).push(resolve));
    }
    this.offerEnduring(item);
  }

  /** True when an enduring item can be taken without waiting. */
  hasRoom(): boolean {
    return (this.#enduring?.length ?? 0) < this.#enduringLimit || this.#ended;
  }

  /** Buffers an enduring item at once when there is room (see `hasRoom`); false otherwise. */
  offerEnduring(item: D): boolean {
    if (this.#ended) return true;
    if (this.#handOver(item)) return true;
    if (!this.hasRoom()) return false;
    (this.#enduring ??= []).push({ stamp: this.#stamp++, item });
    return true;
  }

  /** Buffers a preview; returns false when an older one had to be dropped for it. */
  pushEphemeral(item: D): boolean {
    if (this.#ended) return true;
    if (this.#handOver(item)) return true;
    const ephemeral = (this.#ephemeral ??= []);
    let kept = true;
    if (ephemeral.length >= this.#ephemeralLimit) {
      ephemeral.shift();
      this.#dropped++;
      kept = false;
    }
    ephemeral.push({ stamp: this.#stamp++, item });
    return kept;
  }

  next(): Promise<IteratorResult<D>> {
    const a = this.#enduring?.[0];
    const b = this.#ephemeral?.[0];
    if (a || b) {
      const fromEnduring = a !== undefined && (b === undefined || a.stamp < b.stamp);
      const slot = fromEnduring ? this.#enduring!.shift()! : this.#ephemeral!.shift()!;
      if (fromEnduring) this.#space?.shift()?.();
      this.#taken++;
      this.#onTaken?.(slot.item);
      return Promise.resolve({ done: false, value: slot.item });
    }
    if (this.#ended) return this.#error ? Promise.reject(this.#error) : Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve) => {
      this.#reader = resolve;
    });
  }

  /**
   * Ends the queue: the reader drains what is buffered, then sees `done`, or a rejection
   * with `error` (the first one given) if the queue ended because something failed.
   */
  end(error?: Error): void {
    this.#ended = true;
    this.#error ??= error;
    for (const s of this.#space?.splice(0) ?? []) s();
    if (this.#reader && !this.#enduring?.length && !this.#ephemeral?.length) {
      const r = this.#reader;
      this.#reader = undefined;
      // Resolving with a rejected promise rejects the reader's.
      r(this.#error ? Promise.reject(this.#error) : { done: true, value: undefined });
    }
  }

  /** Drops everything buffered and any error (an intentional close: the reader just ends). */
  clear(): void {
    this.#enduring = undefined;
    this.#ephemeral = undefined;
    this.#error = undefined;
  }

  #handOver(item: D): boolean {
    if (!this.#reader) return false;
    const r = this.#reader;
    this.#reader = undefined;
    this.#taken++;
    this.#onTaken?.(item);
    r({ done: false, value: item });
    return true;
  }
}
