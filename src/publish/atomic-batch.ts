/**
 * Atomic batches (nats-server 2.12+, ADR-50; the stream needs `allow_atomic`): a turn's
 * events committed together: stored whole or not at all (not isolated from a reader while
 * the server stores them: each message's `Jetloop-Batch-Size` lets readers read whole
 * turns, journal/turn-span.ts; docs/scale.md, "Readers during a commit"). Every message but the last goes out
 * without a reply; the last carries `Nats-Batch-Commit` and its answer is the batch's:
 * stored whole (the ack names the last sequence; a batch's sequences are contiguous) or
 * refused whole. Measured on 2.15.1 (docs/scale.md, "Batches"): `Nats-Msg-Id` is kept
 * inside a batch, and a batch holding an id the duplicate window (or the batch) already
 * has is refused whole (10201), not acknowledged as a duplicate; a fence
 * (`Nats-Expected-Last-Subject-Sequence`) is checked at the commit, and a second fence on a
 * subject the batch already wrote is refused (10164), so the fence rides on the first
 * message only. A commit without an answer is resent whole under a new batch id (the
 * server drops a batch it never saw committed), so a resend of a batch that was stored is
 * refused as holding stored ids or, fenced, as a conflict: both are resolved here by
 * finding the batch in the journal.
 */
import { JetStreamApiError, type JetStreamManager } from "@nats-io/jetstream";
import { nuid } from "@nats-io/nats-core";
import { errors as natsErrors, type Msg, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import {
  BatchTimeoutError,
  BatchTooLargeError,
  ConnectionClosedError,
  MessageTooLargeError,
  NotProvisionedError,
  PermissionDeniedError,
  PublishConflictError,
  PublishError,
} from "../errors.js";
import { ApiCodes, BatchHeaders, PubHeaders, TurnHeaders } from "../subjects/nats-names.js";
import { MAX_ATOMIC_BATCH } from "../subjects/server-features.js";
import { type AppendRequest, FixedHeaders, payloadTooLarge, storedBehindFence } from "./journal-writer.js";


/** How long a failed commit request waits to learn that the connection is closing. */
const CLOSING_GRACE_MS = 250;

const { MsgIdHdr, ExpectedStreamHdr, ExpectedLastSubjectSequenceHdr, ExpectedLastSubjectSequenceSubjectHdr } = PubHeaders;

/** Refuses a batch the server would not commit whole; a batch is never split silently. */
export function checkAtomicBatchSize(size: number): void {
  if (size > MAX_ATOMIC_BATCH) throw new BatchTooLargeError(size, MAX_ATOMIC_BATCH);
}

/**
 * The headers of message `index` of the batch `requests`: its id and stream check, the
 * batch's id, 1-based sequence and size (jetloop's, for readers: journal/turn-span.ts),
 * the commit on the last, and the fence (the first request's, if any) on the first only.
 */
export function batchMessageHeaders(stream: string, batchId: string, requests: readonly AppendRequest[], index: number): (readonly [string, string])[] {
  const r = requests[index]!;
  const entries: (readonly [string, string])[] = [
    [MsgIdHdr, r.eventId],
    [ExpectedStreamHdr, stream],
  ];
  const first = requests[0]!;
  if (index === 0 && first.expectedLastSeq !== undefined) {
    entries.push([ExpectedLastSubjectSequenceHdr, String(first.expectedLastSeq)]);
    if (first.fenceSubject) entries.push([ExpectedLastSubjectSequenceSubjectHdr, first.fenceSubject]);
  }
  if (r.trace) entries.push(...r.trace);
  entries.push([BatchHeaders.Id, batchId], [BatchHeaders.Sequence, String(index + 1)], [TurnHeaders.Size, String(requests.length)]);
  if (index === requests.length - 1) entries.push([BatchHeaders.Commit, "1"]);
  return entries;
}

/** The journal sequences of a stored batch of `count` whose last sequence is `lastSeq`. */
export function batchSequences(lastSeq: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => lastSeq - count + 1 + i);
}

/** What became of a batch: stored now, or found already stored by an earlier attempt. */
export type AtomicOutcome =
  | { readonly kind: "stored"; readonly seqs: readonly number[] }
  /** A resend after a lost answer (or a retry) found the fenced batch stored from `seqs[0]`. */
  | { readonly kind: "stored-before"; readonly seqs: readonly number[] }
  /** Refused whole: it holds an id the duplicate window already has (the caller finds which). */
  | { readonly kind: "ids-held" };

interface BatchAck {
  stream?: string;
  seq?: number;
  count?: number;
  error?: { code?: number; err_code?: number; description?: string };
}

export interface AtomicBatchSettings {
  readonly stream: string;
  readonly ackTimeoutMs: number;
  readonly publishDeadlineMs: number;
}

/** A batch being committed: the subjects it publishes on, and a refusal of one of them. */
interface Committing {
  readonly subjects: ReadonlySet<string>;
  denied?: PermissionDeniedError;
}

export class AtomicBatchWriter {
  readonly #committing = new Set<Committing>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: () => Promise<JetStreamManager>,
    private readonly settings: AtomicBatchSettings,
    private readonly log: Logger,
  ) {}

  /** Commits `requests` (one stream, at most MAX_ATOMIC_BATCH) whole, or rejects with a typed error; nothing half stored. */
  async commit(requests: readonly AppendRequest[]): Promise<AtomicOutcome> {
    checkAtomicBatchSize(requests.length);
    if (requests.length === 0) return { kind: "stored", seqs: [] };
    const committing: Committing = { subjects: new Set(requests.map((r) => r.subject)) };
    this.#committing.add(committing);
    try {
      return await this.#commit(requests, committing);
    } finally {
      this.#committing.delete(committing);
    }
  }

  /**
   * The server refused a publish on `subject` (the connection's permission violation): a
   * batch holding it can never be committed — the server drops the message, and the
   * commit is answered "incomplete" or not at all — so it fails with the refusal.
   */
  failSubject(subject: string, denied: PermissionDeniedError): void {
    for (const c of this.#committing) if (c.subjects.has(subject)) c.denied ??= denied;
  }

  async #commit(requests: readonly AppendRequest[], committing: Committing): Promise<AtomicOutcome> {
    let batch = this.#headers(requests);
    // Checked before anything is sent: a message that cannot fit is refused with nothing
    // sent (a resend's headers differ only in the batch id, of the same length).
    for (const [i, r] of requests.entries()) {
      const tooLarge = payloadTooLarge(this.nc, r.data, batch[i]!);
      if (tooLarge) throw tooLarge;
    }
    const started = Date.now();
    const deadline = started + this.settings.publishDeadlineMs;
    let attempts = 0;
    let checkedStream = false;
    for (;;) {
      if (this.nc.isClosed()) throw attempts === 0 ? new ConnectionClosedError() : closedUnanswered(requests.length);
      throwIfDenied(committing);
      attempts++;
      // A commit can take longer than one append's ack (the server checks and stores the
      // whole batch): each unanswered attempt waits twice as long as the one before.
      const wait = this.settings.ackTimeoutMs * 2 ** Math.min(attempts - 1, 10);
      if (attempts > 1) batch = this.#headers(requests);
      const reply = await this.#send(requests, batch, Math.max(1, Math.min(wait, deadline - Date.now())));
      if (reply !== undefined && reply.headers?.code !== 503) {
        const ack = this.#parse(requests, reply);
        if (ack.error === undefined) return { kind: "stored", seqs: batchSequences(ack.seq!, requests.length) };
        const outcome = await this.#refused(requests, ack.error);
        if (outcome) return outcome;
        throwIfDenied(committing);
      } else if (reply !== undefined && !checkedStream) {
        // No responders: a leader election (retry) or no stream at all (final).
        checkedStream = true;
        await this.#requireStream();
      }
      const delay = Math.min(50 * 2 ** Math.min(attempts, 6), 2000);
      if (Date.now() + delay >= deadline) {
        throw new BatchTimeoutError(requests.map((r) => r.eventId), attempts, this.settings.publishDeadlineMs, requests[0]!.expectedLastSeq !== undefined);
      }
      this.log.debug({ attempts, size: requests.length }, "atomic batch unanswered; resending it whole under a new batch id");
      await new Promise((resolve) => setTimeout(resolve, reply === undefined ? 0 : delay));
    }
  }

  /** Every message's headers under a fresh batch id: one attempt's. */
  #headers(requests: readonly AppendRequest[]): FixedHeaders[] {
    const id = nuid.next();
    return requests.map((_, i) => new FixedHeaders(batchMessageHeaders(this.settings.stream, id, requests, i)));
  }

  /** One attempt; the commit's answer, or undefined when none came in time. */
  async #send(requests: readonly AppendRequest[], batch: readonly FixedHeaders[], timeout: number): Promise<Msg | undefined> {
    const last = requests.length - 1;
    try {
      for (let i = 0; i < last; i++) this.nc.publish(requests[i]!.subject, requests[i]!.data, { headers: batch[i]! });
      return await this.nc.request(requests[last]!.subject, requests[last]!.data, { timeout, headers: batch[last]! });
    } catch (e) {
      if (e instanceof natsErrors.TimeoutError) return undefined;
      const reason = e instanceof natsErrors.RequestError ? e.cause : e;
      if (reason instanceof natsErrors.PermissionViolationError) throw new PermissionDeniedError("publish", reason.subject, { cause: e });
      if (e instanceof natsErrors.RequestError && e.isNoResponders()) return noResponders;
      // Closed, or closing (the bus's close: NATS.js fails the pending request before the
      // connection reports closed), with the commit sent: its answer never comes.
      if (await this.#closing()) throw closedUnanswered(requests.length, e);
      throw new PublishError(requests[last]!.subject, `atomic batch publish failed: ${(e as Error).message}`, undefined, { cause: e });
    }
  }

  /** Whether the connection is closed, or closes within a moment. */
  async #closing(): Promise<boolean> {
    if (this.nc.isClosed()) return true;
    let timer: NodeJS.Timeout | undefined;
    const closed = await Promise.race([this.nc.closed().then(() => true), new Promise<false>((resolve) => (timer = setTimeout(resolve, CLOSING_GRACE_MS, false)))]);
    clearTimeout(timer);
    return closed;
  }

  #parse(requests: readonly AppendRequest[], reply: Msg): BatchAck {
    const subject = requests[requests.length - 1]!.subject;
    let ack: BatchAck;
    try {
      ack = reply.json<BatchAck>();
    } catch (e) {
      throw new PublishError(subject, "the server's answer to the atomic batch is not JSON", undefined, { cause: e });
    }
    if (ack.error !== undefined) return ack;
    if (typeof ack.seq !== "number" || ack.count !== requests.length) {
      throw new PublishError(subject, `the server's answer to the atomic batch counts ${String(ack.count)} of ${requests.length} messages`);
    }
    return ack;
  }

  /** A refusal's meaning: an outcome, undefined to retry, or a typed error thrown. */
  async #refused(requests: readonly AppendRequest[], error: NonNullable<BatchAck["error"]>): Promise<AtomicOutcome | undefined> {
    const first = requests[0]!;
    const subject = requests[requests.length - 1]!.subject;
    const description = error.description ?? "unknown error";
    switch (error.err_code) {
      case ApiCodes.AtomicPublishDuplicateId:
        return { kind: "ids-held" };
      case ApiCodes.StreamWrongLastSequence:
      case ApiCodes.StreamWrongLastSequenceConstant: {
        // Fenced: a resend of a batch that was stored fails its own fence. Stored whole
        // iff the session's first message after the fence is the batch's first event.
        const seqs = await storedRunBehindFence(await this.jsm(), this.settings.stream, requests);
        if (seqs !== undefined) return { kind: "stored-before", seqs };
        const actual = /(\d+)\s*$/.exec(description);
        throw new PublishConflictError(first.sessionId, first.expectedLastSeq ?? 0, actual ? Number(actual[1]) : undefined);
      }
      case ApiCodes.AtomicPublishDisabled:
        throw new NotProvisionedError(this.settings.stream, `stream ${this.settings.stream} does not allow atomic batches (allow_atomic is off); run \`jetloop provision\` against nats-server 2.12 or newer`);
      case ApiCodes.AtomicPublishTooLarge:
        throw new BatchTooLargeError(requests.length, Number(/(\d+)\s*$/.exec(description)?.[1] ?? MAX_ATOMIC_BATCH));
      case ApiCodes.StreamMismatch:
        throw new NotProvisionedError(this.settings.stream, `stream ${this.settings.stream} does not capture ${subject} (another stream does); run \`jetloop provision\``);
      case ApiCodes.MessageTooLarge:
        throw new MessageTooLargeError(Math.max(...requests.map((r) => r.data.length)), undefined, "max_msg_size");
      case ApiCodes.AtomicPublishIncomplete:
        // Nothing stored: a message of it did not reach the stream, or the stream had too
        // many batches open (2.15.1 drops a batch past its 50 and answers this). Resend.
        return undefined;
      default:
        // JetStream briefly unavailable (no leader yet): nothing was stored, resend.
        if (error.code === 503) return undefined;
        throw new PublishError(subject, `the server refused the atomic batch: ${description}`, error.err_code);
    }
  }

  async #requireStream(): Promise<void> {
    try {
      await (await this.jsm()).streams.info(this.settings.stream);
    } catch (e) {
      if (e instanceof JetStreamApiError && e.code === ApiCodes.StreamNotFound) throw new NotProvisionedError(this.settings.stream);
      this.log.debug({ err: e }, "stream lookup after no responders failed");
    }
  }
}

/**
 * The sequences of a fenced batch if the session's messages right behind the fence are
 * its events, in order: every one of them, not only the first (the first may have been
 * stored alone by an earlier `publish`, the rest never). Undefined when any is not.
 */
async function storedRunBehindFence(jsm: JetStreamManager, stream: string, requests: readonly AppendRequest[]): Promise<number[] | undefined> {
  const first = await storedBehindFence(jsm, stream, requests[0]!);
  if (first === undefined) return undefined;
  const seqs = [first];
  for (const r of requests.slice(1)) {
    // The same question one message further: the session's next message after the last found.
    const seq = await storedBehindFence(jsm, stream, { eventId: r.eventId, expectedLastSeq: seqs[seqs.length - 1]!, fenceSubject: requests[0]!.fenceSubject });
    if (seq === undefined) return undefined;
    seqs.push(seq);
  }
  return seqs;
}

/** The connection closed with a commit of this batch unanswered: stored whole or not at all. */
function closedUnanswered(size: number, cause?: unknown): ConnectionClosedError {
  return new ConnectionClosedError(
    `the connection closed before the atomic batch of ${size} events was answered: all of them are stored or none — ` +
      "publishAll with the same events and atomic (the same expectedLastSeq if fenced; resume.since past the duplicate window) stores each at most once",
    { cause },
  );
}

function throwIfDenied(committing: Committing): void {
  const { denied } = committing;
  if (denied) throw denied;
}

/** Marks "no responders" (a 503 status) among the attempt's answers. */
const noResponders = { headers: { code: 503 } } as unknown as Msg;
