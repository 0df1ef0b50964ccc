import type { JetStreamManager } from "@nats-io/jetstream";

/**
 * The journal's last sequence, for subscriptions that start at "new". Every answer is
 * read after its caller asked, but callers that ask before the read goes out share it:
 * a thousand subscriptions opened together cost one stream info, not a thousand.
 */
export class JournalPosition {
  readonly #jsm: () => Promise<JetStreamManager>;
  readonly #stream: string;
  #next: Promise<number> | undefined;

  constructor(jsm: () => Promise<JetStreamManager>, stream: string) {
    this.#jsm = jsm;
    this.#stream = stream;
  }

  lastSeq(): Promise<number> {
    // The read starts in a microtask: whoever asks before then joins it.
    this.#next ??= Promise.resolve().then(async () => {
      this.#next = undefined;
      const info = await (await this.#jsm()).streams.info(this.#stream);
      return info.state.last_seq;
    });
    return this.#next;
  }
}
