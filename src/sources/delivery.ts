import { safeDecodeEvent, type DecodeError } from "../codec/codec.js";
import { DeliveryMismatchError, type TurnUnheldError } from "../errors.js";
import type { EventRegistry } from "../events/registry.js";
import { type Channel, UNSHARDED, validEventSubject } from "../subjects/subjects.js";
import { shardOfSession } from "../streams/shards.js";

/** One event as a subscriber receives it. */
export interface Delivery<E> {
  readonly event: E;
  /** The stream sequence of an enduring event (in its shard's stream); 0 for an ephemeral one. */
  readonly journalSeq: number;
  /**
   * The journal shard of the event's session (0 on a namespace not split): `journalSeq` and
   * `lastJournalSeq` are positions in that shard's stream, and only per shard are deliveries
   * in order (a session lives in one shard; across shards no order is promised).
   */
  readonly shard: number;
  readonly subject: string;
  /** An enduring event's bytes as the journal stores them (on replay and feed-subscription deliveries). */
  readonly data?: Uint8Array | undefined;
  /** On a preview: the last journal sequence its loop had written when it was sent. */
  readonly lastJournalSeq?: number | undefined;
}

/** A delivery from a durable consumer: settle it explicitly. */
export interface DurableDelivery<E> extends Delivery<E> {
  /** How many times the server has delivered this message (1 on the first delivery). */
  readonly deliveryCount: number;
  /** It comes from the parked store (`parked replay`), not from the journal's first pass. */
  readonly replayed: boolean;
  /** Acknowledges, and waits for the server to confirm it (a replayed one: removes it from the parked store). */
  ack(): Promise<void>;
  /**
   * Asks for redelivery, after `delayMs` if given (else the consumer's backoff). On the
   * last allowed delivery (`maxDeliver`) the event is parked instead.
   */
  nak(delayMs?: number): void;
  /**
   * The handler failed with `error`: like `nak`, and on the last allowed delivery the event
   * is parked with the error's code and message. Resolves once it is settled.
   */
  fail(error: unknown, delayMs?: number): Promise<void>;
  /**
   * Never redeliver. With a `reason`, the event is parked first (terminated by its handler);
   * without one it is skipped for good.
   */
  term(reason?: string): void;
  /** Extends the ack wait. Done automatically while the delivery is unsettled. */
  working(): void;
}

/** Why a journal message could not be delivered as an event: unreadable, stored under a subject that does not match it, or part of a turn that could not be held whole. */
export type DeliveryFailure = DecodeError | DeliveryMismatchError | TurnUnheldError;

export interface DecodeContext<E> {
  readonly namespace: string;
  readonly registry: EventRegistry<E>;
  readonly maxEventBytes: number;
  readonly includeInternal: boolean;
  /** The journal's shard count: an event is at home only on its session's shard's subjects. */
  readonly shards: number;
}

/**
 * How a bus's subscriptions and replays decode, without and with internal events (the
 * filter's `includeInternal` picks one). Made once per bus (bus-context.ts): ten thousand
 * viewers need not carry ten thousand copies, and sharing one lets the feed decode a
 * message once for all of them.
 */
export function decodeContexts<E>(namespace: string, registry: EventRegistry<E>, maxEventBytes: number, shards: number): readonly [ordinary: DecodeContext<E>, internal: DecodeContext<E>] {
  const base = { namespace, registry, maxEventBytes, shards };
  return [{ ...base, includeInternal: false }, { ...base, includeInternal: true }];
}

export type Decoded<E> =
  /** `internal`: the event's visibility (whether a reader gets it is `hiddenFrom`'s call). */
  | { readonly ok: true; readonly event: E; readonly internal: boolean }
  | { readonly ok: false; readonly error: DeliveryFailure };

/** An internal event reaches only a filter that asked for internal events. */
export function hiddenFrom(ctx: DecodeContext<unknown>, decoded: { readonly internal: boolean }): boolean {
  return decoded.internal && !ctx.includeInternal;
}

interface Routed {
  type: string;
  sessionId: string;
  loopId?: string | undefined;
  visibility: string;
}

/**
 * Decodes and validates a message and checks it belongs to its subject: subscribers
 * filter by subject, so an event whose payload names another loop or session is as
 * untrustworthy as a malformed one.
 */
export function decodeMessage<E>(ctx: DecodeContext<E>, subject: string, data: Uint8Array): Decoded<E> {
  const r = safeDecodeEvent<E>(data, { registry: ctx.registry, maxBytes: ctx.maxEventBytes });
  if (!r.success) return { ok: false, error: r.error };
  const e = r.data as unknown as Routed;
  const def = ctx.registry.get(e.type)!;
  // The class fixes the channel: an ephemeral event written raw into the journal, or an
  // enduring one sent on a preview subject (bypassing the journal), is as foreign as one
  // on another loop's subject. The channel is a token of the subject compared.
  const home: Channel = def.class === "enduring" ? "journal" : "live";
  const shard = home === "journal" && ctx.shards > 1 ? shardOfSession(e.sessionId, ctx.shards) : UNSHARDED;
  const expected = validEventSubject(ctx.namespace, home, { sessionId: e.sessionId, loopId: e.loopId, family: def.family, type: e.type }, shard);
  if (expected !== subject) return { ok: false, error: new DeliveryMismatchError(subject, expected) };
  return { ok: true, event: r.data, internal: e.visibility === "internal" };
}
