/**
 * Whole turns for readers (docs/scale.md, "Readers during a commit"). The server stores a
 * committed atomic batch's messages one after another and a reader can look in between, so
 * a journal position read then (`STREAM.INFO`'s `last_seq`) can fall inside a turn. Every
 * message of a jetloop batch says the batch's size (`Jetloop-Batch-Size`), and the server
 * keeps its 1-based `Nats-Batch-Sequence`: with the message's own stream sequence that is
 * the batch's span (its messages are contiguous in the stream). A bounded read that ends
 * inside a span goes on to its end; a subscription that starts inside one skips it.
 * Trusted for what: the span's first sequence is the server's (it checks a batch's
 * sequences); its last is the writer's word (the size), so a read takes it only as where to
 * look, and ends the turn at its commit or at the first message not of its batch, never
 * waiting longer than the stream goes on storing (journal-range.ts `readWholeTurns`).
 * Messages without the size (a raw user's batch, an older jetloop) have no span: read as before.
 * Nor has a message without `Nats-Batch-Id`: the server stores batch headers verbatim on a
 * message published outside any batch, and checks `Nats-Batch-Sequence` only inside one.
 */
import type { MsgHdrs } from "@nats-io/nats-core";
import { MAX_ATOMIC_BATCH } from "../subjects/server-features.js";
import { BatchHeaders, TurnHeaders } from "../subjects/nats-names.js";

/** The stream sequences of one atomic batch, both inclusive. */
export interface TurnSpan {
  readonly first: number;
  readonly last: number;
}

/** The span of the batch whose `k`-th message (1-based) of `n` is stored at `seq`. */
export function turnSpan(seq: number, k: number, n: number): TurnSpan {
  return { first: seq - k + 1, last: seq - k + n };
}

/** A batch sequence or size as jetloop writes it: 1 to 1,000, no leading zero. */
const COUNT = /^[1-9][0-9]{0,3}$/;

/**
 * The span of the turn the message stored at `seq` is part of; undefined for a message of
 * no jetloop batch. Values jetloop never writes (not 1 ≤ k ≤ n ≤ 1,000, a span before the
 * stream's first sequence) are not a jetloop turn's either, and are read as none; so is a
 * message of no server batch (no `Nats-Batch-Id`), whose batch sequence nothing checked.
 * The size is its writer's and unchecked: a batch ends at its commit (`Nats-Batch-Commit`),
 * and a read finds where (journal-range.ts); the span's `last` is where to look, not a fact.
 */
export function turnSpanOf(headers: MsgHdrs | undefined, seq: number): TurnSpan | undefined {
  const size = headers?.get(TurnHeaders.Size);
  if (!size || !headers!.get(BatchHeaders.Id)) return undefined;
  const sequence = headers!.get(BatchHeaders.Sequence);
  if (!COUNT.test(size) || !COUNT.test(sequence)) return undefined;
  const [k, n] = [Number(sequence), Number(size)];
  if (k > n || n > MAX_ATOMIC_BATCH || seq - k + 1 < 1) return undefined;
  // The server's commit is its batch's last message, whatever size the header says.
  return headers!.get(BatchHeaders.Commit) ? turnSpan(seq, k, k) : turnSpan(seq, k, n);
}

/** turnSpanOf a received message's headers; a header block NATS.js cannot read is no jetloop turn's. */
export function turnSpanOfMessage(msg: { readonly headers?: MsgHdrs | undefined }, seq: number): TurnSpan | undefined {
  let headers: MsgHdrs | undefined;
  try {
    headers = msg.headers;
  } catch {
    return undefined;
  }
  return turnSpanOf(headers, seq);
}

/**
 * Where a read that covered the journal up to `covered` goes on to, having read a message
 * of `span`: the turn's end when it ends after `covered`, though never past `limit` (a
 * bound the user gave is theirs); else `covered`.
 */
export function wholeTurnEnd(span: TurnSpan | undefined, covered: number, limit: number = Number.MAX_SAFE_INTEGER): number {
  return span === undefined ? covered : Math.max(covered, Math.min(span.last, limit));
}

/**
 * Whether a subscription that starts after `start` skips a message of `span`: its turn
 * began at or before `start`, so it was being committed as the subscription started and
 * counts as before it (its first part is not the subscription's to deliver).
 */
export function begunBefore(span: TurnSpan | undefined, start: number): boolean {
  return span !== undefined && span.first <= start;
}

/** The furthest a message can be from its batch's first: a later one is of a batch begun after any position before it. */
export const TURN_REACH = MAX_ATOMIC_BATCH - 1;
