/**
 * The open subscriptions of a bus, in one place: closing the bus closes them all, and the
 * two watches that concern every one of them run once per bus, not once per subscription
 * (each would cost a promise and closures): the server's permission errors, sent
 * asynchronously and matched to the subscriptions on their subject, and the connection's end.
 */
import type { NatsConnection, PermissionViolationError } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { ConnectionClosedError, PermissionDeniedError } from "../errors.js";

/** What the registry asks of an open subscription. */
export interface OpenSubscription {
  close(): Promise<void>;
  /** Ends it with `error`, unless it has ended already. */
  fail(error: Error): void;
  /** True when a permission error on `subject` concerns one of its core subscriptions. */
  owns(subject: string): boolean;
}

export class OpenSubscriptions {
  /** The subscriptions' logger (`component: "subscription"`), made once. */
  readonly log: Logger;
  readonly #open = new Set<OpenSubscription>();
  #closed = false;

  constructor(nc: NatsConnection, log: Logger, onPermissionViolation: (listener: (e: PermissionViolationError) => void) => void) {
    this.log = log.child({ component: "subscription" });
    onPermissionViolation((e) => {
      if (e.operation !== "subscription") return;
      for (const s of [...this.#open]) if (s.owns(e.subject)) s.fail(new PermissionDeniedError("subscribe", e.subject, { cause: e }));
    });
    void nc.closed().then(() => {
      const e = new ConnectionClosedError("the connection closed under the subscription");
      for (const s of [...this.#open]) s.fail(e);
    });
  }

  /** Throws ConnectionClosedError once the bus is closed: nothing would close the subscription. */
  add(sub: OpenSubscription): void {
    if (this.#closed) throw new ConnectionClosedError("the bus is closed");
    this.#open.add(sub);
  }

  delete(sub: OpenSubscription): void {
    this.#open.delete(sub);
  }

  /** Closes every open subscription on purpose (their readers end quietly); later adds are refused. */
  async closeAll(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled([...this.#open].map((s) => s.close()));
  }
}
