/** The preview part of a subscription: core NATS subscriptions on the selected preview subjects (README.md). */
import type { Msg, Subscription } from "@nats-io/transport-node";
import { PermissionViolationError } from "@nats-io/transport-node";
import { PermissionDeniedError, SubscriptionError } from "../errors.js";
import { HEADER_LAST_JOURNAL_SEQ } from "../publish/publisher.js";
import { shardOfSession } from "../streams/shards.js";
import { decodeMessage, hiddenFrom } from "./delivery.js";
import { reportPoison, type Source, type SourceContext } from "./source.js";
import { tracedDelivery } from "../telemetry/index.js";

export class PreviewSource<E> implements Source {
  readonly #ctx: SourceContext<E>;
  readonly #subs = new Map<string, Subscription>();
  #subjects: readonly string[];

  constructor(ctx: SourceContext<E>, subjects: readonly string[]) {
    this.#ctx = ctx;
    this.#subjects = subjects;
  }

  start(): Promise<void> {
    for (const s of this.#subjects) this.#subscribe(s);
    return Promise.resolve();
  }

  async update(subjects: readonly string[]): Promise<void> {
    const next = new Set(subjects);
    for (const [s, sub] of this.#subs) {
      if (!next.has(s)) {
        sub.unsubscribe();
        this.#subs.delete(s);
      }
    }
    for (const s of next) if (!this.#subs.has(s)) this.#subscribe(s);
    this.#subjects = subjects;
    // Make sure the server has the new interest before the caller relies on it.
    await this.#ctx.nc.flush();
  }

  /** True when one of this source's subscriptions is on `subject`. */
  owns(subject: string): boolean {
    return this.#subs.has(subject);
  }

  stop(): Promise<void> {
    for (const sub of this.#subs.values()) sub.unsubscribe();
    this.#subs.clear();
    return Promise.resolve();
  }

  #subscribe(subject: string): void {
    const sub = this.#ctx.nc.subscribe(subject, {
      callback: (err, msg) => {
        if (err) {
          this.#ctx.fail(
            err instanceof PermissionViolationError
              ? new PermissionDeniedError("subscribe", subject, { cause: err })
              : new SubscriptionError(`preview subscription on ${subject} failed: ${err.message}`, { cause: err }),
          );
          return;
        }
        this.#onMessage(msg);
      },
    });
    this.#subs.set(subject, sub);
  }

  #onMessage(msg: Msg): void {
    const d = decodeMessage(this.#ctx.decode, msg.subject, msg.data);
    if (!d.ok) {
      reportPoison(this.#ctx, 0, msg.subject, d.error);
      return;
    }
    if (hiddenFrom(this.#ctx.decode, d)) return;
    const last = Number(msg.headers?.get(HEADER_LAST_JOURNAL_SEQ) ?? "");
    const kept = this.#ctx.queue.pushEphemeral(tracedDelivery({
      event: d.event,
      journalSeq: 0,
      // Its session's shard: the one `lastJournalSeq` is a position in.
      shard: shardOfSession((d.event as { sessionId: string }).sessionId, this.#ctx.decode.shards).index,
      subject: msg.subject,
      lastJournalSeq: Number.isSafeInteger(last) && last > 0 ? last : undefined,
    }, "preview", msg));
    if (!kept) this.#ctx.report({ kind: "dropped", total: this.#ctx.queue.dropped });
  }
}
