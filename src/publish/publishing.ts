/**
 * The bus's publishing: one journal writer and one atomic batch writer per shard, the
 * publisher routing each event to its session's shard, and the reconciler reading the
 * journal back. The bus hands it the connection (`publishing(conn)`, as NATS.js's
 * `jetstream(nc)` is a factory over one connection) and delegates its publish calls to it.
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { BusSettings } from "../connection/options.js";
import { ConnectionClosedError, type PermissionDeniedError } from "../errors.js";
import type { EventRegistry } from "../events/registry.js";
import type { JournalShards, ShardJournal } from "../journal/journal-shards.js";
import { DEFAULT_DUPLICATE_WINDOW_NS } from "../streams/declared.js";
import { AtomicBatchWriter, checkAtomicBatchSize } from "./atomic-batch.js";
import { type AtomicPublishDeps, publishAtomic } from "./atomic-publish.js";
import { JournalWriter } from "./journal-writer.js";
import { parsePublishAllOptions, type PublishAllOptions } from "./options.js";
import { type PublishOptions, type PublishResult, Publisher } from "./publisher.js";
import { type ReconcileOptions, type StoredEvent, storedEvents } from "./reconcile.js";

/** What publishing is made over: the bus's connection, settings and journal shards. */
export interface PublishConnection<E> {
  readonly nc: NatsConnection;
  readonly settings: BusSettings;
  readonly registry: EventRegistry<E>;
  readonly log: Logger;
  readonly serverVersion: string;
  /** The journal's shards: where each session is written, and where the reconciler reads. */
  readonly shards: JournalShards;
  jetstreamManager(): Promise<JetStreamManager>;
  /** Whether the bus is closed: a user's publish is refused from then (its connection may stay open). */
  closed(): boolean;
}

/** A journal shard as publishing holds it: its part of the journal, and the writers of its stream. */
interface WriterShard extends ShardJournal {
  readonly writer: JournalWriter;
  readonly batches: AtomicBatchWriter;
  duplicateWindowMs(): Promise<number>;
}

/** A stream's duplicate window in ms, read once (the default when it cannot be read; read again next time). */
function lazyDuplicateWindow(jsm: () => Promise<JetStreamManager>, stream: string, log: Logger): () => Promise<number> {
  let window: Promise<number> | undefined;
  return () =>
    (window ??= jsm()
      .then(async (m) => (await m.streams.info(stream)).config.duplicate_window / 1e6)
      .catch((e: unknown) => {
        window = undefined;
        log.debug({ err: e }, "reading the stream's duplicate window failed; using the default");
        return DEFAULT_DUPLICATE_WINDOW_NS / 1e6;
      }));
}

/** The bus's publishing over `conn`; its calls' docs are on the `Jetloop` interface. */
export function publishing<E>(conn: PublishConnection<E>): Publishing<E> {
  return new Publishing(conn);
}

export class Publishing<E> {
  readonly #conn: PublishConnection<E>;
  readonly #shards: readonly WriterShard[];
  readonly #publisher: Publisher<E>;
  readonly #atomic: AtomicPublishDeps<E>;
  /** The journal writers, one per shard (for the bus's own tests: `busWriters`). */
  get writers(): readonly JournalWriter[] {
    return this.#shards.map((s) => s.writer);
  }

  /** Set once what closes with the bus has closed: it (a gate server settling its gates) may still write until then. */
  #writerClosed = false;

  constructor(conn: PublishConnection<E>) {
    this.#conn = conn;
    const { nc, settings, log } = conn;
    const jsm = () => conn.jetstreamManager();
    const shards = conn.shards.all.map((s): WriterShard => {
      const shardSettings = { ...settings, stream: s.stream };
      return {
        ...s,
        writer: new JournalWriter(nc, jsm, shardSettings, log),
        batches: new AtomicBatchWriter(nc, jsm, shardSettings, log),
        // Read once; a user not allowed the stream's info reads the default window back (a
        // longer provisioned window then finds fewer: the batch is refused, never re-stored).
        duplicateWindowMs: lazyDuplicateWindow(jsm, s.stream, log),
      };
    });
    this.#shards = shards;
    const of = (sessionId: string) => shards[conn.shards.of(sessionId).shard.index]!;
    this.#publisher = new Publisher(nc, { shards, of }, { ...settings, serverVersion: conn.serverVersion }, conn.registry);
    this.#atomic = {
      publisher: this.#publisher,
      batches: (shard) => shards[shard.index]!.batches,
      serverVersion: conn.serverVersion,
      storedEvents: (events, since) => this.storedEvents(events, { since }),
      duplicateWindowMs: (shard) => shards[shard.index]!.duplicateWindowMs(),
    };
  }

  /** The largest encoded event `publish` takes on this connection (`maxEventBytes` less the journal's header room). */
  get maxEventBytes(): number {
    return this.#publisher.maxEventBytes;
  }

  publish(event: E, options?: PublishOptions): Promise<PublishResult> {
    // A bus over a caller's connection leaves it open on close(): refuse here, or previews
    // would still go out on it.
    if (this.#conn.closed()) return Promise.reject(new ConnectionClosedError("the bus is closed"));
    return this.#publisher.publish(event, options);
  }

  /** A publish by what closes with the bus (the bus core's `publish`): refused only once the writers closed. */
  publishWhileClosing(event: E, options?: PublishOptions): Promise<PublishResult> {
    return this.#writerClosed ? Promise.reject(new ConnectionClosedError("the bus is closed")) : this.#publisher.publish(event, options);
  }

  async publishAll(events: Iterable<E>, options: PublishAllOptions = {}): Promise<PublishResult[]> {
    const { resume, atomic, ...publishOptions } = parsePublishAllOptions(options);
    const all = [...events];
    if (atomic && this.#conn.closed()) throw new ConnectionClosedError("the bus is closed");
    if (atomic) checkAtomicBatchSize(all.length);
    const stored = resume === undefined ? undefined : await this.storedEvents(all, resume);
    if (atomic) return publishAtomic(this.#atomic, all, publishOptions, stored);
    const pending = all.map((e) => {
      const held = stored?.get((e as { eventId?: string }).eventId ?? "");
      if (held) return Promise.resolve<PublishResult>({ journalSeq: held.journalSeq, duplicate: true, subject: held.subject, eventId: (e as { eventId: string }).eventId });
      return this.publish(e, publishOptions);
    });
    const settled = await Promise.allSettled(pending);
    const failed = settled.find((s) => s.status === "rejected");
    if (failed) throw failed.reason;
    return settled.map((s) => (s as PromiseFulfilledResult<PublishResult>).value);
  }

  storedEvents(events: Iterable<E>, options: ReconcileOptions): Promise<Map<string, StoredEvent>> {
    if (this.#conn.closed()) return Promise.reject(new ConnectionClosedError("the bus is closed"));
    return storedEvents({ shards: this.#conn.shards, namespace: this.#conn.settings.namespace, log: this.#conn.log }, events, options);
  }

  /** The server refused a publish on `subject` (its permissions): fails the appends, batches and previews waiting on it. */
  denied(subject: string, denied: PermissionDeniedError): void {
    for (const shard of this.#shards) {
      shard.writer.failSubject(subject, denied);
      shard.batches.failSubject(subject, denied);
    }
    this.#publisher.previewDenied(subject, denied);
  }

  /** Refuses every later publish and fails the appends in flight: the last step of the bus's close. */
  closeWriters(): void {
    this.#writerClosed = true;
    for (const shard of this.#shards) shard.writer.close();
  }
}
