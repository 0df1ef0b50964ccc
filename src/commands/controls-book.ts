/**
 * Idempotency of the session controls, apart from NATS: a command id is bound to its
 * request (the fingerprint) and to its outcome from the moment it is accepted, so a
 * repeat — concurrent or later — gets the first outcome, and another request under the
 * same id is IDEMPOTENCY_CONFLICT. An outcome that did not take effect (the handler
 * refused or failed) is forgotten once known: retrying it is safe and runs it again.
 */

/** How many command ids are remembered (oldest forgotten first). */
export const CONTROL_MEMORY = 10_000;

type Settled<R> = { readonly effect: boolean; readonly reply: R };

interface Entry<R> {
  readonly fingerprint: string;
  readonly outcome: Promise<Settled<R>>;
}

/** What to do with a command: run it (first time), reuse its outcome, or refuse it. */
export type Admission<R> = { readonly kind: "first"; readonly outcome: Promise<Settled<R>> } | { readonly kind: "repeat"; readonly outcome: Promise<Settled<R>> } | { readonly kind: "conflict" };

export class ControlBook<R> {
  readonly #entries = new Map<string, Entry<R>>();

  /**
   * Admits a command. `run` is called only for a command id not in flight or remembered;
   * it resolves with the reply and whether the command took effect (only those are kept).
   */
  admit(commandId: string, fingerprint: string, run: () => Promise<Settled<R>>): Admission<R> {
    const earlier = this.#entries.get(commandId);
    if (earlier !== undefined) return earlier.fingerprint === fingerprint ? { kind: "repeat", outcome: earlier.outcome } : { kind: "conflict" };
    const outcome = run();
    const entry: Entry<R> = { fingerprint, outcome };
    this.#entries.set(commandId, entry);
    if (this.#entries.size > CONTROL_MEMORY) this.#entries.delete(this.#entries.keys().next().value!);
    const forget = () => {
      if (this.#entries.get(commandId) === entry) this.#entries.delete(commandId);
    };
    outcome.then((s) => (s.effect ? undefined : forget()), forget);
    return { kind: "first", outcome };
  }

  get size(): number {
    return this.#entries.size;
  }
}
