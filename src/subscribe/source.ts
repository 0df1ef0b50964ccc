import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { JournalState } from "../streams/position.js";
import type { DecodeContext, Delivery, DeliveryFailure } from "./delivery.js";
import type { DeliveryQueue } from "./delivery-queue.js";
import type { FeedHub } from "./feed-hub.js";
import type { SubscribeSettings, SubscriptionReport } from "./options.js";

/** What every source of a subscription shares: where to put deliveries and how to fail. */
export interface SourceContext<E> {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: () => Promise<JetStreamManager>;
  readonly stream: string;
  /** The journal's last sequence now (shared by subscriptions that start together). */
  lastSeq(): Promise<number>;
  /** The journal's last sequence and republish destination now (shared likewise). */
  journalState(): Promise<JournalState>;
  /** The connection's live feed subscriptions, shared by its live subscriptions. */
  readonly feeds: FeedHub;
  readonly decode: DecodeContext<E>;
  readonly queue: DeliveryQueue<Delivery<E>>;
  readonly settings: SubscribeSettings;
  readonly log: Logger;
  report(report: SubscriptionReport): void;
  /** Ends the subscription with a typed cause. */
  fail(error: Error): void;
}

/** One part of a subscription: the journal (a durable consumer or the live feed) or the previews. */
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
