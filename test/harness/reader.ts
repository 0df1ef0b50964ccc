// Reading a subscription in tests: with timeouts, and without losing a delivery to a
// read that timed out.
export const TIMEOUT = Symbol("timeout");

/** Reads a subscription with timeouts, never losing a delivery to an abandoned read. */
export class Reader<D> {
  readonly #it: AsyncIterator<D>;
  #pending: Promise<IteratorResult<D>> | undefined;

  constructor(sub: AsyncIterable<D>) {
    this.#it = sub[Symbol.asyncIterator]();
  }

  async next(ms: number): Promise<IteratorResult<D> | typeof TIMEOUT> {
    this.#pending ??= this.#it.next();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<typeof TIMEOUT>((r) => (timer = setTimeout(() => r(TIMEOUT), ms)));
    const r = await Promise.race([this.#pending, timeout]);
    clearTimeout(timer);
    if (r !== TIMEOUT) this.#pending = undefined;
    return r;
  }

  async take(n: number, ms = 10_000): Promise<D[]> {
    const deadline = Date.now() + ms;
    const out: D[] = [];
    while (out.length < n) {
      const r = await this.next(Math.max(1, deadline - Date.now()));
      if (r === TIMEOUT) throw new Error(`timed out after ${out.length} of ${n} deliveries`);
      if (r.done) throw new Error(`the subscription ended after ${out.length} of ${n} deliveries`);
      out.push(r.value);
    }
    return out;
  }

  async one(ms = 10_000): Promise<D> {
    return (await this.take(1, ms))[0]!;
  }

  /**
   * Absence proven by order: what the subscription delivered before the sentinel, an event
   * the caller published after the thing that must not arrive (the subscription delivers in
   * journal order, so anything that could still come, comes first). Reads until a delivery
   * `isSentinel` recognises; fails if none comes within `ms` (the bound of a wait, not a
   * proof).
   */
  async before(isSentinel: (d: D) => boolean, ms = 10_000): Promise<D[]> {
    const deadline = Date.now() + ms;
    const out: D[] = [];
    for (;;) {
      const r = await this.next(Math.max(1, deadline - Date.now()));
      if (r === TIMEOUT) throw new Error(`the sentinel did not come within ${ms} ms (${out.length} deliveries before)`);
      if (r.done) throw new Error(`the subscription ended before the sentinel (${out.length} deliveries before)`);
      if (isSentinel(r.value)) return out;
      out.push(r.value);
    }
  }

  /** An unexpected extra delivery, or undefined when none came within `ms`. */
  async extra(ms: number): Promise<D | undefined> {
    const r = await this.next(ms);
    return r === TIMEOUT || r.done ? undefined : r.value;
  }
}
