/**
 * How a durable delivery is settled, parking included. A delivery comes from the journal
 * or, after `parked replay`, from the parked store's replay state; either way it is
 * parked (copied to the held state) before the original is terminated, and when parking
 * fails the original is asked again later instead, so nothing is lost between the two.
 */
import type { JsMsg } from "@nats-io/jetstream";
import type { Logger } from "pino";
import { type JetloopError, SubscriptionError } from "../errors.js";
import type { ParkReason } from "../parking/parked-entry.js";
import type { ParkedStore } from "../parking/parked-store.js";
import type { DurableDelivery } from "./delivery.js";
import type { SubscriptionReport } from "./options.js";

/** A message as the durable handles it. */
export interface Original {
  readonly msg: JsMsg;
  readonly journalSeq: number;
  /** The journal shard `journalSeq` is a position in. */
  readonly shard: number;
  /** The journal subject it was appended on. */
  readonly subject: string;
  readonly data: Uint8Array;
  readonly deliveryCount: number;
  /** Its entry in the parked store, when it is a replay. */
  readonly storeSeq?: number | undefined;
}

export interface Settler {
  readonly durable: string;
  /** A group partition's source: the group and partition its parked entries name. */
  readonly group?: { readonly name: string; readonly partition: number } | undefined;
  /** Deliveries allowed before an unsettled or failing event is parked. */
  readonly maxDeliver: number;
  /** The durable's redelivery delays in ms (empty: redeliver at once). */
  readonly backoffMs: readonly number[];
  /** Delay before an original that could not be parked comes again. */
  readonly retryMs: number;
  readonly parked: ParkedStore;
  readonly log: Logger;
  report(r: SubscriptionReport): void;
  /** `o` is settled for good (acknowledged or terminated): the server will not deliver it again (delivery-ledger.ts). */
  done?(o: Original): void;
}

/** The stable code and one-line message of whatever a handler failed with. */
export function errorSummary(error: unknown): { code: string; message: string } {
  if (error instanceof Error) {
    const code = (error as Partial<JetloopError>).code;
    return { code: typeof code === "string" ? code : error.name || "Error", message: error.message };
  }
  return { code: "HANDLER_FAILED", message: String(error) };
}

/** Parks `o` and then terminates it; if parking fails, leaves it to come again. */
export async function park(s: Settler, o: Original, reason: ParkReason, code: string, message: string): Promise<boolean> {
  try {
    await s.parked.park({ durable: s.durable, journalSeq: o.journalSeq, subject: o.subject, data: o.data, deliveryCount: o.deliveryCount, reason, errorCode: code, errorMessage: message, group: s.group });
    if (o.storeSeq !== undefined) await s.parked.remove(o.storeSeq);
  } catch (e) {
    s.log.warn({ durable: s.durable, journalSeq: o.journalSeq, reason, err: (e as Error).message }, "parking failed; the delivery stays pending");
    s.report({ kind: "park_failed", journalSeq: o.journalSeq, error: e as Error });
    o.msg.nak(s.retryMs);
    return false;
  }
  o.msg.term(`jetloop: parked (${code})`);
  s.done?.(o);
  s.log.info({ durable: s.durable, journalSeq: o.journalSeq, reason, code }, "parked a delivery");
  s.report({ kind: "parked", journalSeq: o.journalSeq, reason, code });
  return true;
}

/** Acknowledges `o`; a replayed one leaves the parked store first. */
export async function acknowledge(s: Settler, o: Original): Promise<void> {
  try {
    if (o.storeSeq !== undefined) await s.parked.remove(o.storeSeq);
    await o.msg.ackAck();
    s.done?.(o);
  } catch (e) {
    // The server did not confirm (connection lost, timeout): the delivery may come again.
    throw new SubscriptionError(`ack of journal sequence ${o.journalSeq} was not confirmed; it may be redelivered`, { cause: e });
  }
}

/**
 * The handler's view of `o`. The automatic ack extension stops (`onSettle`) once the
 * settlement is done, not when it starts: an acknowledgement (for a replay, the store's
 * removal first) or a parking takes round trips, and the delivery must not expire and be
 * handed to another process meanwhile. Parking started by `nak`/`term`, which return
 * nothing, is handed to `track` so that closing the subscription waits for it.
 */
/**
 * Whether a delivery's ack wait may have run out on the server (`lapsed`), and how to
 * extend it. A lapsed delivery may be in another holder's hands: the server takes a
 * settlement by stream sequence, so settling the old copy would settle the new one (and, in
 * a partitioned group, free the partition's one slot while the new holder still has the
 * event). A lapsed delivery is therefore not settled on the server: it comes again.
 */
export interface Lease {
  lapsed(): boolean;
  /** Extends the ack wait unless it lapsed. */
  extend(): void;
}

const unfenced = (o: Original): Lease => ({ lapsed: () => false, extend: () => o.msg.working() });

export function durableDelivery<E>(
  s: Settler,
  o: Original,
  event: E,
  onSettle: () => void,
  track: (p: Promise<unknown>) => void,
  lease: Lease = unfenced(o),
): DurableDelivery<E> {
  let settled = false;
  let done = false;
  const finish = () => {
    if (!done) {
      done = true;
      onSettle();
    }
  };
  /** Marks the handler's decision; `p` is the settlement's remaining work, if any. */
  const settle = (p?: Promise<unknown>): void => {
    settled = true;
    if (p) void p.then(finish, finish);
    else finish();
  };
  /** True (and the delivery given up) when its ack wait may have run out. */
  const stale = (what: string): boolean => {
    if (!lease.lapsed()) return false;
    settle();
    s.log.warn({ durable: s.durable, journalSeq: o.journalSeq }, `${what} of a delivery held past its ack wait not sent; it comes again`);
    return true;
  };
  const last = o.deliveryCount >= s.maxDeliver;
  // The server redelivers a plain nak at once; the durable's backoff is applied here.
  const retry = (delayMs: number | undefined) => o.msg.nak(delayMs ?? s.backoffMs[Math.min(o.deliveryCount, s.backoffMs.length) - 1]);
  const lastAttempt = (code: string, message: string) => park(s, o, "max_deliver", code, `${message} (delivery ${o.deliveryCount} of ${s.maxDeliver})`);
  return {
    event,
    journalSeq: o.journalSeq,
    shard: o.shard,
    subject: o.subject,
    deliveryCount: o.deliveryCount,
    replayed: o.storeSeq !== undefined,
    async ack() {
      if (stale("ack")) {
        throw new SubscriptionError(`journal sequence ${o.journalSeq} was held past its ack wait, so the server may have handed it to another holder; not acknowledged: it comes again`);
      }
      const p = acknowledge(s, o);
      settle(p);
      await p;
    },
    nak(delayMs?: number) {
      if (stale("nak")) return;
      if (!last) {
        settle();
        return retry(delayMs);
      }
      const p = lastAttempt("NAK", "negatively acknowledged on the last allowed delivery");
      settle(p);
      track(p);
    },
    async fail(error: unknown, delayMs?: number) {
      if (stale("fail")) return;
      if (!last) {
        settle();
        return retry(delayMs);
      }
      const { code, message } = errorSummary(error);
      const p = lastAttempt(code, message);
      settle(p);
      await p;
    },
    term(reason?: string) {
      if (stale("term")) return;
      let p: Promise<unknown> | undefined;
      if (reason !== undefined) p = park(s, o, "terminated", "TERMINATED", reason);
      else if (o.storeSeq !== undefined) p = s.parked.remove(o.storeSeq).then(() => o.msg.term());
      else {
        o.msg.term();
        s.done?.(o);
      }
      settle(p);
      if (p) track(p);
    },
    working() {
      if (!settled) lease.extend();
    },
  };
}
