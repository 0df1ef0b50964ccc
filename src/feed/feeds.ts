/**
 * The bus's feeds: what every feed subscription of a bus shares, whichever strategy it
 * follows the feed with (README.md in this folder) — the strategies themselves, made on
 * first use; the parse of the republish headers; the watches that concern every viewer
 * (a reconnect, the stream's leader election); and the limit on journal reads at once.
 */
import { noteFeedMessage } from "../telemetry/index.js";
import { type Msg, PermissionViolationError } from "@nats-io/transport-node";
import type { JournalShards } from "../journal/journal-shards.js";
import { PermissionDeniedError, SubscriptionError } from "../errors.js";
import { type JournalShard, parseEventSubject, streamLeaderElectedSubject, switchChannel, UNSHARDED } from "../subjects/subjects.js";
import type { FeedMode } from "../sources/options.js";
import { type FeedPosition, RepublishReader } from "../sources/republish-headers.js";
import { turnSpanOfMessage } from "../journal/turn-span.js";
import type { FeedDeps, FeedMessage, FeedStrategy, FeedViewer, ResyncReason } from "./feed.js";
import { LoopFeed } from "./loop-feed.js";
import { NamespaceFeed } from "./namespace-feed.js";

/** Journal reads (consumer creations) a process starts at once when many viewers catch up together. */
const CATCH_UP_CONCURRENCY = 8;

/** Test-only hooks, reached through the bus's context (`busContext(bus).feeds.testHooks`). */
export interface FeedTestHooks {
  /** Return true to drop a feed message before any viewer sees it, as if the network had lost it. */
  drop?: ((message: FeedMessage) => boolean) | undefined;
}

/**
 * What the bus gives its feeds: the strategies' dependencies but those the feeds make, and
 * the journal's shards (every shard republishes into the one feed).
 */
export type FeedsConfig = Omit<FeedDeps, "parse" | "fail" | "shards"> & { readonly shards: JournalShards };

export class Feeds {
  readonly #deps: FeedDeps;
  readonly #shards: JournalShards;
  /** Per shard: the reader of its stream's republish headers. */
  readonly #republish: readonly RepublishReader[];
  #loop: LoopFeed | undefined;
  #namespace: NamespaceFeed | undefined;
  #watching = false;
  #catchUps = 0;
  readonly #waiting: (() => void)[] = [];
  readonly testHooks: FeedTestHooks = {};

  constructor(config: FeedsConfig) {
    const { shards, ...deps } = config;
    this.#shards = shards;
    this.#republish = shards.all.map((s) => new RepublishReader(s.stream));
    this.#deps = {
      ...deps,
      shards: shards.all,
      log: config.log.child({ component: "feed" }),
      parse: (msg) => this.#parse(msg),
      fail: (viewers, err, subject) => fail(viewers, err, subject),
    };
  }

  /** The strategy of `mode`, made on first use; the shared watches start with the first. */
  of(mode: FeedMode): FeedStrategy {
    this.#watch();
    if (mode === "namespace") return (this.#namespace ??= new NamespaceFeed(this.#deps));
    return (this.#loop ??= new LoopFeed(this.#deps));
  }

  /** Core subscriptions open by both strategies (shared ones count once). */
  get subscriptions(): number {
    return (this.#loop?.subscriptions ?? 0) + (this.#namespace?.subscriptions ?? 0);
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

  #parse(msg: Msg): FeedMessage | undefined {
    const found = this.#republished(msg);
    if (found === undefined) {
      this.#deps.log.warn({ subject: msg.subject }, "ignored a feed message without the stream's republish headers");
      return undefined;
    }
    const { shard, at } = found;
    const message: FeedMessage = {
      shard: shard.index,
      seq: at.seq,
      lastSeq: at.lastSeq,
      subject: switchChannel(this.#deps.namespace, msg.subject, "feed", "journal", shard),
      data: msg.data,
      turn: () => turnSpanOfMessage(msg, at.seq),
    };
    return this.testHooks.drop?.(message) ? undefined : noteFeedMessage(message, msg);
  }

  /**
   * Which shard's stream republished `msg`, and at what position. Its session's shard is
   * asked first (nearly always the one); a message another shard's stream republished (a
   * raw publish onto that shard's subjects) is that shard's, on its journal subject, so its
   * viewers report it as poison (not at home) rather than skip it unseen.
   */
  #republished(msg: Msg): { shard: JournalShard; at: FeedPosition } | undefined {
    if (this.#shards.count === 1) {
      const at = this.#republish[0]!.position(msg);
      return at && { shard: UNSHARDED, at };
    }
    const home = this.#shardOf(msg.subject);
    if (home === undefined) return undefined;
    for (const { shard } of [this.#shards.all[home.index]!, ...this.#shards.all.filter((s) => s.shard.index !== home.index)]) {
      const at = this.#republish[shard.index]!.position(msg);
      if (at !== undefined) return { shard, at };
    }
    return undefined;
  }

  /** The shard of a feed subject's session, or undefined for a subject that is no event subject. */
  #shardOf(subject: string): JournalShard | undefined {
    try {
      return this.#shards.of(parseEventSubject(this.#deps.namespace, subject).sessionId).shard;
    } catch {
      return undefined;
    }
  }

  #resyncAll(reason: ResyncReason): void {
    this.#deps.log.info({ reason, subscriptions: this.subscriptions }, "feed viewers resync from the journal");
    this.#loop?.resyncAll(reason);
    this.#namespace?.resyncAll(reason);
  }

  /** Starts, once, the watches that concern every viewer. */
  #watch(): void {
    if (this.#watching) return;
    this.#watching = true;
    const { nc, log } = this.#deps;
    void (async () => {
      try {
        for await (const s of nc.status()) if (s.type === "reconnect") this.#resyncAll("reconnect");
      } catch {
        // the status feed ends with the connection
      }
    })();
    for (const { stream } of this.#shards.all) {
      nc.subscribe(streamLeaderElectedSubject(stream), {
        callback: (err) => {
          // A user without the advisory grant still gets reconnect resyncs and per-subject gap checks.
          if (err) log.warn({ reason: err.message }, "no leader-election advisories for the feed");
          else this.#resyncAll("leader_elected");
        },
      });
    }
  }
}

function fail(viewers: Iterable<FeedViewer>, err: Error, subject: string): void {
  const e =
    err instanceof PermissionViolationError
      ? new PermissionDeniedError("subscribe", subject, { cause: err })
      : new SubscriptionError(`feed subscription on ${subject} failed: ${err.message}`, { cause: err });
  for (const v of [...viewers]) v.fail(e);
}
