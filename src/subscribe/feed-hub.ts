/**
 * The live feed of one connection: the events stream republishes every stored event on
 * `{ns}.feed.…` with its journal sequence in headers, and live subscriptions follow it
 * with core NATS subscriptions instead of a JetStream consumer each. Viewers in one
 * process that watch the same subject share one core subscription here; the hub parses
 * each message once and hands it to every viewer of that subject.
 *
 * It also tells every viewer when anything may have been missed on all of them at once:
 * after a reconnect (a slow consumer the server cut off, a restart, a network cut) and
 * when the stream elects a leader (the republishing node changed). The viewers then close
 * the gap from the journal (feed-source.ts).
 */
import { type Msg, PermissionViolationError, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { PermissionDeniedError, SubscriptionError } from "../errors.js";
import { streamLeaderElectedSubject, switchChannel } from "../subjects/subjects.js";

/** One republished event, parsed once for all viewers of its subject. */
export interface FeedMessage {
  /** `Nats-Sequence`: the journal sequence. */
  readonly seq: number;
  /** `Nats-Last-Sequence`: the previous journal sequence of the same journal subject, 0 for none. */
  readonly lastSeq: number;
  /** The journal subject the event was stored on. */
  readonly subject: string;
  readonly data: Uint8Array;
}

export interface FeedViewer {
  onFeed(message: FeedMessage): void;
  /** Something may have been missed on every feed subscription of the connection. */
  resync(reason: ResyncReason): void;
  fail(error: Error): void;
}

export type ResyncReason = "reconnect" | "leader_elected";

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
  #watching = false;
  #catchUps = 0;
  #flushing: Promise<void> | undefined;
  readonly #waiting: (() => void)[] = [];
  /** @internal Test hook: return true to drop a feed message before any viewer sees it. */
  dropForTest: ((message: FeedMessage) => boolean) | undefined;

  constructor(nc: NatsConnection, namespace: string, stream: string, log: Logger) {
    this.#nc = nc;
    this.#ns = namespace;
    this.#stream = stream;
    this.#log = log.child({ component: "feed" });
  }

  /** Core subscriptions open (shared ones count once). */
  get subscriptions(): number {
    return this.#entries.size;
  }

  join(feedSubject: string, viewer: FeedViewer): void {
    this.#watch();
    let entry = this.#entries.get(feedSubject);
    if (!entry) {
      const viewers = new Set<FeedViewer>();
      const sub = this.#nc.subscribe(feedSubject, { callback: (err, msg) => this.#onMessage(feedSubject, viewers, err, msg) });
      entry = { sub, viewers };
      this.#entries.set(feedSubject, entry);
    }
    entry.viewers.add(viewer);
  }

  leave(feedSubject: string, viewer: FeedViewer): void {
    const entry = this.#entries.get(feedSubject);
    if (!entry) return;
    entry.viewers.delete(viewer);
    if (entry.viewers.size === 0) {
      this.#entries.delete(feedSubject);
      if (!this.#nc.isClosed()) entry.sub.unsubscribe();
    }
  }

  /**
   * Resolves once the server has every subscription joined before the call. Viewers that
   * ask before the flush goes out share it, as they then share the journal position read.
   */
  registered(): Promise<void> {
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
    if (err) {
      const e =
        err instanceof PermissionViolationError
          ? new PermissionDeniedError("subscribe", feedSubject, { cause: err })
          : new SubscriptionError(`feed subscription on ${feedSubject} failed: ${err.message}`, { cause: err });
      for (const v of [...viewers]) v.fail(e);
      return;
    }
    const h = msg.headers;
    const seq = Number(h?.get("Nats-Sequence"));
    const lastSeq = Number(h?.get("Nats-Last-Sequence") || "0");
    // Only the stream writes here (nobody is granted publish on the feed); anything else is not an event of the journal.
    if (h?.get("Nats-Stream") !== this.#stream || !Number.isSafeInteger(seq) || seq < 1 || !Number.isSafeInteger(lastSeq)) {
      this.#log.warn({ subject: msg.subject }, "ignored a feed message without the stream's republish headers");
      return;
    }
    const message: FeedMessage = { seq, lastSeq, subject: switchChannel(this.#ns, msg.subject, "feed", "journal"), data: msg.data };
    if (this.dropForTest?.(message)) return;
    for (const v of viewers) v.onFeed(message);
  }

  #resyncAll(reason: ResyncReason): void {
    this.#log.info({ reason, subscriptions: this.#entries.size }, "feed viewers resync from the journal");
    for (const { viewers } of this.#entries.values()) for (const v of viewers) v.resync(reason);
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
