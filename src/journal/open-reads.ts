/**
 * The journal reads in progress on one bus. Closing the bus stops each: a replay left
 * suspended mid-way otherwise keeps NATS.js's heartbeat timer, and with it the process,
 * alive after `bus.close()`. A read resumed after that fails with ConnectionClosedError
 * naming where it stopped, rather than ending as if the journal ended there.
 */
import type { ConsumerMessages } from "@nats-io/jetstream";
import { ConnectionClosedError } from "../errors.js";

export class OpenReads {
  readonly #open = new Set<ConsumerMessages>();
  #closed = false;
  readonly #closing = new AbortController();
  /** Aborted when the bus closes: a read waiting between attempts wakes at once. */
  readonly closed: AbortSignal = this.#closing.signal;

  /** Tracks `messages` until `done`; on a closed bus it is stopped at once. */
  add(messages: ConsumerMessages): void {
    if (this.#closed) messages.stop();
    else this.#open.add(messages);
  }

  done(messages: ConsumerMessages): void {
    this.#open.delete(messages);
  }

  /** Throws if the bus closed: the read stopped after `lastSeq` (0: before its first event). */
  check(what: string, lastSeq: number): void {
    if (this.#closed) throw new ConnectionClosedError(`the bus closed during ${what}; the read stopped after journal sequence ${lastSeq}`);
  }

  close(): void {
    this.#closed = true;
    this.#closing.abort();
    for (const m of this.#open) m.stop();
    this.#open.clear();
  }
}
