/**
 * What opening an existing durable with options does: each option given is compared with
 * the consumer as it exists, and either the server's consumer is updated or the open is
 * refused with OPTIONS_INVALID naming the option and the live value. An option left out
 * takes the live value (the durable's creator chose it). Never the silent third way: the
 * old value kept while the caller believes its own.
 *
 * Per option, because several processes share a durable and one of them must not change
 * the others' behaviour under them:
 * - `maxDeliver`, `backoffMs`, `ackWaitMs` are refused when they differ. Every process
 *   parks by the durable's limit and holds deliveries by its ack wait and backoff, read
 *   once when it opened; a new value would apply to some processes and not to others (a
 *   shorter ack wait lets a delivery that another process still holds go to a third).
 * - `maxAckPending` is updated: it is the server's cap on deliveries outstanding across all
 *   processes, read by none of them, so changing it changes throughput, never correctness.
 * - `start` is where a new durable begins; an existing one resumes from its ack floor,
 *   which is what a durable is. It is not compared.
 */
import type { ConsumerConfig } from "@nats-io/jetstream";
import { OptionsError } from "../errors.js";

/** Consumer metadata key holding jetloop's delivery limit, so processes sharing the durable agree. */
export const MAX_DELIVER_KEY = "jetloop_max_deliver";

/** The durable options this rule concerns, as the subscription was given them. */
export interface DurableOptions {
  readonly ackWaitMs?: number | undefined;
  readonly backoffMs?: readonly number[] | undefined;
  readonly maxDeliver?: number | undefined;
  readonly maxAckPending?: number | undefined;
}

/** The durable's settings as the server holds them. */
export interface LiveDurable {
  readonly ackWaitMs: number;
  readonly backoffMs: readonly number[];
  /** jetloop's limit (its metadata, or the server's max_deliver of an older durable); undefined: none recorded. */
  readonly maxDeliver: number | undefined;
  readonly maxAckPending: number | undefined;
}

export type DriftOutcome =
  | { readonly ok: true; readonly update: Partial<ConsumerConfig> | undefined }
  | { readonly ok: false; readonly error: OptionsError };

/** Options that contradict each other, whatever the server holds. */
export function checkDurableOptions(o: DurableOptions): void {
  if (o.ackWaitMs !== undefined && o.backoffMs !== undefined) {
    throw new OptionsError("ackWaitMs", "give ackWaitMs (a fixed ack wait) or backoffMs (whose first step is the ack wait), not both");
  }
}

export function liveDurable(config: ConsumerConfig): LiveDurable {
  const declared = Number(config.metadata?.[MAX_DELIVER_KEY]);
  let maxDeliver: number | undefined;
  if (Number.isSafeInteger(declared) && declared > 0) maxDeliver = declared;
  else if (config.max_deliver !== undefined && config.max_deliver > 0) maxDeliver = config.max_deliver;
  return {
    ackWaitMs: (config.ack_wait ?? 30e9) / 1e6,
    backoffMs: (config.backoff ?? []).map((ns) => ns / 1e6),
    maxDeliver,
    maxAckPending: config.max_ack_pending,
  };
}

/**
 * The metadata update that records `maxDeliver` on a durable that has no limit recorded (made
 * by hand, e.g. by the nats CLI with an unlimited max_deliver): without it each process would
 * park by a limit of its own and none would be refused. Undefined when a limit is recorded.
 */
export function recordedLimit(config: ConsumerConfig, maxDeliver: number): Partial<ConsumerConfig> | undefined {
  if (liveDurable(config).maxDeliver !== undefined) return undefined;
  return { metadata: { ...config.metadata, [MAX_DELIVER_KEY]: String(maxDeliver) } };
}

const ms = (list: readonly number[]) => `[${list.join(", ")}] ms`;

/** How the durable redelivers, in words: for the refusal's live value. */
function clock(live: LiveDurable): string {
  return live.backoffMs.length > 0 ? `backoff ${ms(live.backoffMs)}` : `a fixed ack wait of ${live.ackWaitMs} ms and no backoff`;
}

function refuse(durable: string, option: string, live: string): DriftOutcome {
  return {
    ok: false,
    error: new OptionsError(
      option,
      `durable ${durable} exists with ${live}; processes sharing it keep that value, so open it with the same value or without ${option}, or delete the durable to create it anew (its position is lost)`,
    ),
  };
}

/** The outcome of opening `durable` with `wanted` over a consumer holding `live`. Pure. */
export function durableDrift(durable: string, wanted: DurableOptions, live: LiveDurable): DriftOutcome {
  if (wanted.maxDeliver !== undefined && live.maxDeliver !== undefined && wanted.maxDeliver !== live.maxDeliver) {
    return refuse(durable, "maxDeliver", `maxDeliver ${live.maxDeliver}`);
  }
  if (wanted.backoffMs !== undefined && ms(wanted.backoffMs) !== ms(live.backoffMs)) {
    return refuse(durable, "backoffMs", clock(live));
  }
  if (wanted.ackWaitMs !== undefined && (live.backoffMs.length > 0 || wanted.ackWaitMs !== live.ackWaitMs)) {
    return refuse(durable, "ackWaitMs", clock(live));
  }
  if (wanted.maxAckPending !== undefined && wanted.maxAckPending !== live.maxAckPending) {
    return { ok: true, update: { max_ack_pending: wanted.maxAckPending } };
  }
  return { ok: true, update: undefined };
}
