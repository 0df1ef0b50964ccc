/**
 * Learning whether the server refused a preview. Core NATS does not answer a publish; a
 * publish the permissions refuse comes back only as an asynchronous error naming the
 * subject. The server handles a connection's messages in order, so once a PING sent after
 * the preview has its PONG, any refusal of it has arrived too: previews wait for that round
 * trip (one shared by all previews sent in the same tick) and fail with the refusal.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { ConnectionClosedError } from "../errors.js";

interface Waiter {
  error?: Error;
}

export class PreviewConfirmation {
  readonly #nc: NatsConnection;
  readonly #waiting = new Map<string, Set<Waiter>>();
  #roundTrip: Promise<void> | undefined;

  constructor(nc: NatsConnection) {
    this.#nc = nc;
  }

  /** The server refused a publish on `subject`: fail the previews waiting on it. */
  denied(subject: string, error: Error): void {
    for (const w of this.#waiting.get(subject) ?? []) w.error ??= error;
  }

  /** Runs `send`, then resolves once the server has taken it, or rejects with its refusal. */
  async confirm(subject: string, send: () => void): Promise<void> {
    const w: Waiter = {};
    let set = this.#waiting.get(subject);
    if (!set) this.#waiting.set(subject, (set = new Set()));
    set.add(w);
    try {
      send();
      await this.#shared();
    } finally {
      set.delete(w);
      if (set.size === 0) this.#waiting.delete(subject);
    }
    if (w.error) throw w.error;
  }

  #shared(): Promise<void> {
    this.#roundTrip ??= Promise.resolve().then(async () => {
      this.#roundTrip = undefined;
      try {
        await this.#nc.flush();
      } catch (e) {
        throw new ConnectionClosedError("the connection closed before the server confirmed the preview", { cause: e });
      }
      // The refusal is dispatched to listeners through the connection's status feed, a
      // step behind the PONG: let it run.
      await new Promise((resolve) => setImmediate(resolve));
    });
    return this.#roundTrip;
  }
}
