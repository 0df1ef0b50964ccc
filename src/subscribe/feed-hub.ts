/**
 * The live feed of one connection: the events stream republishes every stored event on
 * `{ns}.feed.…` with its journal sequence in headers, and live subscriptions follow it
 * with core NATS subscriptions instead of a JetStream consumer each. The hub parses each
 * message once and hands it to every viewer it concerns, in one of two modes (the `feed`
 * option):
 *
 * - `loop`: one core subscription per followed feed subject (a loop's, a session's),
 *   shared by the viewers of the process that watch it; the server filters.
 * - `namespace`: one core subscription on the whole feed for every such viewer
 *   (feed-namespace.ts): local dispatch, and gaps detected and closed in order here.
 *
 * It also tells viewers when anything may have been missed on all of them at once: after
 * a reconnect (a slow consumer the server cut off, a restart, a network cut) and when the
 * stream elects a leader (the republishing node changed). Loop-mode viewers then close the
 * gap from the journal each (feed-source.ts); the namespace feed closes it once for all.
 */
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { type Msg, PermissionViolationError, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { PermissionDeniedError, SubscriptionError } from "../errors.js";
import type { JournalState } from "../streams/position.js";
import { streamLeaderElectedSubject, switchChannel } from "../subjects/subjects.js";
import type { Decoded } from "./delivery.js";
import { NamespaceFeed } from "./feed-namespace.js";
import type { FeedMode } from "./options.js";
import { RepublishReader } from "./republish-headers.js";
import { noteFeedMessage } from "../telemetry/index.js";


/** One republished event, parsed once for all viewers of its subject. */
export interface FeedMessage {
  /** `Nats-Sequence`: the journal sequence. */
  readonly seq: number;
  /** `Nats-Last-Sequence`: the previous journal sequence of the same journal subject, 0 for none. */
  readonly lastSeq: number;
  /** The journal subject the event was stored on. */
  readonly subject: string;
  readonly data: Uint8Array;
  /**
   * The first viewer's decoding, for the others (feed-source.ts). A hub belongs to one bus,
   * so its viewers share one catalogue and size cap; `includeInternal` is applied per viewer.
   */
  decoded?: Decoded<unknown>;
}

export interface FeedViewer {
  onFeed(message: FeedMessage): void;
  /** Loop mode: something may have been missed on every feed subscription of the connection. */
  resync(reason: ResyncReason): void;
  /** Namespace mode: the hub read `fromSeq`..`toSeq` from the journal and dispatched it in order. */
  repaired(fromSeq: number, toSeq: number, reason: RepairReason): void;
  fail(error: Error): void;
}

export type ResyncReason = "reconnect" | "leader_elected";
export type RepairReason = ResyncReason | "gap";

interface Entry {
  readonly sub: Subscription;
  readonly viewers: Set<FeedViewer>;
}

/** Journal reads (consumer creations) a process starts at once when many viewers catch up together. */
const CATCH_UP_CONCURRENCY = 8;

export class FeedHub {
  readonly #nc: NatsConnection;
  readonly #ns: string;
  readonly #stream: string;
  readonly #log: Logger;
  readonly #entries = new Map<string, Entry>();
  readonly #namespace: NamespaceFeed;
  readonly #republish: RepublishReader;
  #js: JetStreamClient | undefined;
  #watching = false;
  #catchUps = 0;
  #flushing: Promise<void> | undefined;
  readonly #waiting: (() => void)[] = [];
  /** @internal Test hook: return true to drop a feed message before any viewer sees it. */
  dropForTest: ((message: FeedMessage) => boolean) | undefined;

  constructor(nc: NatsConnection, namespace: string, stream: string, log: Logger, journalState: () => Promise<JournalState>) {
    this.#nc = nc;
    this.#ns = namespace;
    this.#stream = stream;
    this.#log = log.child({ component: "feed" });
    this.#republish = new RepublishReader(stream);
    this.#namespace = new NamespaceFeed({
      nc,
      namespace,
      stream,
      log: this.#log,
      js: () => (this.#js ??= jetstream(nc)),
      journalState,
      parse: (msg) => this.#parse(msg),
      drop: (m) => this.dropForTest?.(m) === true,
      fail: (viewers, err, subject) => this.#fail(viewers, err, subject),
    });
  }

  /** Core subscriptions open (shared ones count once). */
  get subscriptions(): number {
    return this.#entries.size + (this.#namespace.following ? 1 : 0);
  }

  join(feedSubject: string, viewer: FeedViewer, mode: FeedMode): void {
    this.#watch();
    if (mode === "namespace") return this.#namespace.join(feedSubject, viewer);
    let entry = this.#entries.get(feedSubject);
    if (!entry) {
      const viewers = new Set<FeedViewer>();
      const sub = this.#nc.subscribe(feedSubject, { callback: (err, msg) => this.#onMessage(feedSubject, viewers, err, msg) });
      entry = { sub, viewers };
      this.#entries.set(feedSubject, entry);
    }
    entry.viewers.add(viewer);
  }

  leave(feedSubject: string, viewer: FeedViewer, mode: FeedMode): void {
    if (mode === "namespace") return this.#namespace.leave(feedSubject, viewer);
    const entry = this.#entries.get(feedSubject);
    if (!entry) return;
    entry.viewers.delete(viewer);
    if (entry.viewers.size === 0) {
      this.#entries.delete(feedSubject);
      if (!this.#nc.isClosed()) entry.sub.unsubscribe();
    }
  }

  /** True when a permission error on `subject` concerns a viewer of `mode` following `feeds`. */
  owns(subject: string, feeds: readonly string[], mode: FeedMode): boolean {
    return mode === "namespace" ? subject === this.#namespace.subject : feeds.includes(subject);
  }

  /**
   * Resolves once the server has every subscription joined before the call (namespace
   * mode: and the namespace feed knows its position). Viewers that ask before the flush
   * goes out share it, as they then share the journal position read.
   */
  registered(mode: FeedMode): Promise<void> {
    if (mode === "namespace") return this.#namespace.ready();
    // The flush starts in a microtask: whoever asks before then joins it.
    this.#flushing ??= Promise.resolve().then(() => {
      this.#flushing = undefined;
      return this.#nc.flush();
    });
    return this.#flushing;
  }

  /**
   * Runs `create` (a journal read's consumer creation) with at most a few running at
   * once, so ten thousand viewers resyncing after a reconnect do not hit the server with
   * ten thousand consumer creations together.
   */
  async limitCatchUp<T>(create: () => Promise<T>): Promise<T> {
    while (this.#catchUps >= CATCH_UP_CONCURRENCY) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#catchUps++;
    try {
      return await create();
    } finally {
      this.#catchUps--;
      this.#waiting.shift()?.();
    }
  }

  #onMessage(feedSubject: string, viewers: Set<FeedViewer>, err: Error | null, msg: Msg): void {
    if (err) return this.#fail(viewers, err, feedSubject);
    const message = this.#parse(msg);
    if (message === undefined || this.dropForTest?.(message)) return;
    for (const v of viewers) v.onFeed(message);
  }

  #fail(viewers: Iterable<FeedViewer>, err: Error, subject: string): void {
    const e =
      err instanceof PermissionViolationError
        ? new PermissionDeniedError("subscribe", subject, { cause: err })
        : new SubscriptionError(`feed subscription on ${subject} failed: ${err.message}`, { cause: err });
    for (const v of [...viewers]) v.fail(e);
  }

  #parse(msg: Msg): FeedMessage | undefined {
    const at = this.#republish.position(msg);
    if (at === undefined) {
      this.#log.warn({ subject: msg.subject }, "ignored a feed message without the stream's republish headers");
      return undefined;
    }
    return noteFeedMessage({ seq: at.seq, lastSeq: at.lastSeq, subject: switchChannel(this.#ns, msg.subject, "feed", "journal"), data: msg.data }, msg);
  }

  #resyncAll(reason: ResyncReason): void {
    this.#log.info({ reason, subscriptions: this.#entries.size }, "feed viewers resync from the journal");
    // A viewer on two subjects hears it twice; its resync is requested once.
    for (const { viewers } of this.#entries.values()) for (const v of viewers) v.resync(reason);
    this.#namespace.catchUp(reason);
  }

  /** Starts, once, the watches that concern every viewer. */
  #watch(): void {
    if (this.#watching) return;
    this.#watching = true;
    void (async () => {
      try {
        for await (const s of this.#nc.status()) if (s.type === "reconnect") this.#resyncAll("reconnect");
      } catch {
        // the status feed ends with the connection
      }
    })();
    this.#nc.subscribe(streamLeaderElectedSubject(this.#stream), {
      callback: (err) => {
        // A user without the advisory grant still gets reconnect resyncs and per-subject gap checks.
        if (err) this.#log.warn({ reason: err.message }, "no leader-election advisories for the feed");
        else this.#resyncAll("leader_elected");
      },
    });
  }
}
