/**
 * How much one pull of the journal may ask for: bounded in count (the read's `batch`) and
 * in bytes, sized from the connection's limits. Every pull consumer's `consume` takes its
 * options from here.
 *
 * Why bytes: the server queues a pull's whole answer for the connection at once, and a
 * connection owing more than the server's `max_pending` (64 MiB by default) is cut as a
 * slow consumer, taking every other reader of that connection with it (a gateway's SSE
 * viewers). A count alone does not bound that: 512 events of 1 MB are 512 MB.
 *
 * NATS.js 3.x takes a pull's count (`max_messages`) or its bytes (`max_bytes`), not both;
 * with bytes it asks for at most 100 messages a pull. So: when `batch` messages of the
 * largest size fit the byte budget, the count alone bounds the bytes; otherwise a read of
 * 100 or more asks by bytes (at most 100 messages, never more than it asked), and a
 * smaller one asks for as many of the largest messages as fit, so that no pull brings
 * more messages than its `batch`.
 */

/** nats-server's default max_payload, when the connection has not said its own. */
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/**
 * What a delivered message takes beyond its headers and data in a pull's byte count: its
 * subject and reply subject, which nats-server's control line (4 KiB by default) bounds.
 */
const SUBJECT_ROOM = 4096;

/**
 * The bytes one pull may bring: an eighth of nats-server's default `max_pending`, so that a
 * read pulling again at three quarters (NATS.js's threshold) and a few reads side by side
 * stay well under it. At least one message of the largest size, or the server would
 * answer such a message with 409 and the read would stall on it.
 */
export const PULL_BUDGET_BYTES = 8 * 1024 * 1024;

/** The most NATS.js asks for in one pull bounded by bytes. */
const BYTES_PULL_MESSAGES = 100;

export type PullSize = { readonly max_messages: number } | { readonly max_bytes: number };

/** A pull of at most `batch` messages on a connection whose server takes `maxPayload`-byte messages. */
export function pullSize(batch: number, maxPayload: number | undefined): PullSize {
  const largest = (maxPayload ?? DEFAULT_MAX_PAYLOAD) + SUBJECT_ROOM;
  const budget = Math.max(PULL_BUDGET_BYTES, largest);
  const fit = Math.max(1, Math.floor(budget / largest));
  if (batch <= fit) return { max_messages: batch };
  if (batch >= BYTES_PULL_MESSAGES) return { max_bytes: budget };
  return { max_messages: fit };
}

/**
 * The most bytes a read pulling with `size` can have asked the server for and not yet
 * received: NATS.js pulls again only for what arrived, so what one read owes the
 * connection never exceeds one pull.
 */
export function pullBytes(size: PullSize, maxPayload: number | undefined): number {
  return "max_bytes" in size ? size.max_bytes : size.max_messages * ((maxPayload ?? DEFAULT_MAX_PAYLOAD) + SUBJECT_ROOM);
}
