import type { JetStreamManager } from "@nats-io/jetstream";

/** A replicated stream's leader: its server name ("" while it has none) and its peers (leader and replicas, online or not). */
export interface Leadership {
  readonly name: string;
  readonly peers: number;
}

/** What a subscription needs to know about the events stream when it starts or resyncs. */
export interface JournalState {
  readonly lastSeq: number;
  /**
   * Whether the stream's own info was read. False for a restricted user's position
   * (`OwnFilterPosition`): the stream's configuration is not hers to read, so
   * `republishDest` and `leader` are unknown (undefined), not absent.
   */
  readonly streamRead: boolean;
  /** The stream's republish destination (the feed), if it has one. */
  readonly republishDest: string | undefined;
  /** Where a journal read's consumer must live (journal/read-placement.ts); undefined for a stream not replicated, or not known. */
  readonly leader: Leadership | undefined;
}

/**
 * Where the journal stands now, for subscriptions that start at "new", the live feed's
 * catch-ups and bounded reads. `subjects`: the journal subjects the caller reads (its
 * filter), the only ones a restricted user may name; a caller that reads the whole shard
 * gives none.
 */
export interface JournalPositions {
  state(subjects?: readonly string[]): Promise<JournalState>;
  /** The stream leader, where a read's consumer must live; undefined for a stream not replicated or a leader this user may not read. */
  leader(): Promise<Leadership | undefined>;
}

/**
 * The journal's last sequence from the stream's info. Every answer is read after its
 * caller asked, but callers that ask before the read goes out share it: a thousand
 * subscriptions opened together cost one stream info, not a thousand. Needs
 * `$JS.API.STREAM.INFO.<stream>`, which also answers `subjects_filter: ">"` with every
 * subject of the stream (every session and loop id): for trusted users only (the runtime,
 * the gateway, operators, services); a follower reads `OwnFilterPosition`
 * (journal/own-position.ts).
 */
export class JournalPosition implements JournalPositions {
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
      return { lastSeq: info.state.last_seq, streamRead: true, republishDest: info.config.republish?.dest, leader };
    });
    return this.#next;
  }

  async leader(): Promise<Leadership | undefined> {
    return (await this.state()).leader;
  }
}
