import type { JetStreamManager } from "@nats-io/jetstream";

/** A replicated stream's leader: its server name ("" while it has none) and its peers (leader and replicas, online or not). */
export interface Leadership {
  readonly name: string;
  readonly peers: number;
}

/** What a subscription needs to know about the events stream when it starts or resyncs. */
export interface JournalState {
  readonly lastSeq: number;
  /** The stream's republish destination (the feed), if it has one. */
  readonly republishDest: string | undefined;
  /** Where a journal read's consumer must live (subscribe/read-placement.ts); undefined for a stream not replicated. */
  readonly leader: Leadership | undefined;
}

/**
 * The journal's last sequence, for subscriptions that start at "new" and for the live
 * feed's catch-ups. Every answer is read after its caller asked, but callers that ask
 * before the read goes out share it: a thousand subscriptions opened together cost one
 * stream info, not a thousand.
 */
export class JournalPosition {
  readonly #jsm: () => Promise<JetStreamManager>;
  readonly #stream: string;
  #next: Promise<JournalState> | undefined;

  constructor(jsm: () => Promise<JetStreamManager>, stream: string) {
    this.#jsm = jsm;
    this.#stream = stream;
  }

  state(): Promise<JournalState> {
    // The read starts in a microtask: whoever asks before then joins it.
    this.#next ??= Promise.resolve().then(async () => {
      this.#next = undefined;
      const info = await (await this.#jsm()).streams.info(this.#stream);
      const replicas = info.cluster?.replicas?.length ?? 0;
      const leader: Leadership | undefined = replicas > 0 ? { name: info.cluster?.leader ?? "", peers: replicas + 1 } : undefined;
      return { lastSeq: info.state.last_seq, republishDest: info.config.republish?.dest, leader };
    });
    return this.#next;
  }
}
