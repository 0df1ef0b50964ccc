/** The parts of a subscription (README.md): what each is handed, and what each offers. */
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { JournalShard } from "../subjects/subjects.js";
import type { JournalState } from "../streams/position.js";
import type { DecodeContext, Delivery, DeliveryFailure } from "./delivery.js";
import type { DeliveryQueue } from "./delivery-queue.js";
import type { JournalSource } from "../journal/journal-range.js";
import type { SubscribeSettings, SubscriptionReport } from "./options.js";

/** What every source of a subscription shares: where to put deliveries and how to fail. */
export interface SourceContext<E> {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  /** The journal shard the source reads (the namespace's one when it is not split). */
  readonly shard: JournalShard;
  /** Where journal reads go (journal-range.ts). */
  readonly journal: JournalSource;
  jsm(): Promise<JetStreamManager>;
  /** The shard's stream. */
  readonly stream: string;
  /**
   * The journal's last sequence and republish destination now (shared by subscriptions that
   * start together). `subjects`: the journal subjects the caller reads, the only ones a
   * restricted user may name (streams/position.ts); none: the whole shard.
   */
  journalState(subjects?: readonly string[]): Promise<JournalState>;
  readonly decode: DecodeContext<E>;
  readonly queue: DeliveryQueue<Delivery<E>>;
  readonly settings: SubscribeSettings;
  readonly log: Logger;
  report(report: SubscriptionReport): void;
  /**
   * A journal message taken as seen but not delivered (of a turn begun by a `"new"`
   * start): counted in `positions()` as if handed over, so a resume after them skips it
   * too. Only ever before the shard's next delivery, so the count stays in order.
   */
  seen(shard: number, journalSeq: number): void;
  /** Ends the subscription with a typed cause. */
  fail(error: Error): void;
}

/** A subscription's own part of a source context. */
export type OwnSourceContext<E> = Pick<SourceContext<E>, "decode" | "queue" | "settings" | "log" | "report" | "seen" | "fail">;

/** One part of a subscription: the journal (a durable consumer or the feed) or the previews. */
export interface Source {
  start(): Promise<void>;
  /** Switches to new subject filters without losing the position. */
  update(subjects: readonly string[]): Promise<void>;
  stop(): Promise<void>;
}

export function reportPoison(ctx: Pick<SourceContext<unknown>, "log" | "report">, journalSeq: number, subject: string, error: DeliveryFailure): void {
  // The payload is never logged: it may be exactly what must not leak.
  ctx.log.warn({ journalSeq, subject, code: error.code, reason: error.message }, "skipped a malformed message");
  ctx.report({ kind: "poison", journalSeq, subject, error });
}
