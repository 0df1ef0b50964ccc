/**
 * How many sessions read their ledger at once: a thousand sessions appearing together
 * catch up a bounded number at a time, each in order, instead of a thousand reads racing
 * on one connection. A caught-up session holds no slot while it waits.
 */
export class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  constructor(size: number) {
    this.#free = size;
  }

  /** Resolves with the release once a slot is free. */
  async take(): Promise<() => void> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    };
  }
}
