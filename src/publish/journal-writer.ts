/**
 * Appends to the journal with many appends in flight over one inbox subscription.
 *
 * The stock `js.publish` makes a request per call; here every append publishes with a
 * reply subject under one wildcard inbox and the acks are matched by token, which is
 * what lets a producer keep hundreds of appends in flight. An ack that does not come
 * (timeout, no responders during a leader election) is ambiguous: the append is resent
 * with the same `Nats-Msg-Id`, so the stream's duplicate window makes the retry safe as
 * long as the deadline is within the window (provisioning refuses a window shorter than
 * the provisioning bus's deadline; a producer with a longer one must not use that stream),
 * until an ack arrives or the deadline passes. Nothing resolves without an ack, or, for a
 * fenced append refused as a conflict, without finding the append itself stored.
 */
import { inboxPrefixOf } from "../connection/inbox.js";
import { JetStreamApiError, type JetStreamManager, type MsgRequest } from "@nats-io/jetstream";
import { type Match, MsgHdrsImpl } from "@nats-io/nats-core";
import { createInbox, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import type { Logger } from "pino";
import {
  ConnectionClosedError,
  MessageTooLargeError,
  NotProvisionedError,
  PermissionDeniedError,
  PublishConflictError,
  PublishError,
  PublishTimeoutError,
} from "../errors.js";
import { encodePooled } from "../wire/pooled-utf8.js";
import { newId } from "../events/ids.js";
import { ApiCodes, BatchHeaders, PubHeaders, TurnHeaders } from "../subjects/nats-names.js";
import { type JournalShard, sessionJournalSubject, UNSHARDED } from "../subjects/subjects.js";
import { appendSettled, TRACE_HEADER_ROOM, type TraceEntries } from "../telemetry/index.js";

const { MsgIdHdr, ExpectedStreamHdr, ExpectedLastSubjectSequenceHdr, ExpectedLastSubjectSequenceSubjectHdr } = PubHeaders;

/** A safe integer's decimal digits at most: an expected last sequence. */
const MAX_SEQ_DIGITS = String(Number.MAX_SAFE_INTEGER).length;
/** A canonical UUID: every event id. */
const EVENT_ID_LENGTH = 36;
/** An atomic batch's id (a NUID) and its largest sequence (atomic-batch.ts). */
const BATCH_ID_LENGTH = 22;
const BATCH_SEQ_DIGITS = 4;

/**
 * The most bytes jetloop's headers add to a journal append of `namespace` on `stream`:
 * what max_payload and the stream's max_msg_size (both count headers) must hold beyond
 * the event's own bytes. The fence subject is the longest header value that varies; every
 * session id is a 36-character UUID. An atomic batch's four headers (the server's three and
 * jetloop's batch size) are counted too, so an event at the cap fits inside a batch as well.
 */
export function journalHeaderRoom(stream: string, namespace: string, shard: JournalShard = UNSHARDED): number {
  const fenceSubjectLength = sessionJournalSubject(namespace, newId(), shard).length;
  const line = (key: string, valueLength: number) => key.length + 2 + valueLength + 2;
  return (
    "NATS/1.0\r\n".length +
    line(MsgIdHdr, EVENT_ID_LENGTH) +
    line(ExpectedStreamHdr, stream.length) +
    line(ExpectedLastSubjectSequenceHdr, MAX_SEQ_DIGITS) +
    line(ExpectedLastSubjectSequenceSubjectHdr, fenceSubjectLength) +
    line(BatchHeaders.Id, BATCH_ID_LENGTH) +
    line(BatchHeaders.Sequence, BATCH_SEQ_DIGITS) +
    line(BatchHeaders.Commit, 1) +
    line(TurnHeaders.Size, BATCH_SEQ_DIGITS) +
    TRACE_HEADER_ROOM +
    2
  );
}

export interface AppendRequest {
  readonly subject: string;
  readonly data: Uint8Array;
  readonly eventId: string;
  readonly sessionId: string;
  /** Fencing: the append is stored only if the last sequence on `fenceSubject` is this. */
  readonly expectedLastSeq?: number | undefined;
  readonly fenceSubject?: string | undefined;
  /** The publish's W3C trace headers (telemetry/), counted in journalHeaderRoom. */
  readonly trace?: TraceEntries | undefined;
}

export interface AppendAck {
  readonly stream: string;
  readonly seq: number;
  readonly duplicate: boolean;
}

export interface JournalWriterSettings {
  readonly stream: string;
  readonly ackTimeoutMs: number;
  readonly publishDeadlineMs: number;
  readonly maxInFlight: number;
}

interface JsAck {
  stream?: string;
  seq?: number;
  duplicate?: boolean;
  error?: { code?: number; err_code?: number; description?: string };
}

/**
 * The server's refusal of `data` under headers `h` by its max_payload, which counts both,
 * or undefined when it fits (or the server has not said its limit). `h`'s encoding is
 * kept for the publish.
 */
export function payloadTooLarge(nc: NatsConnection, data: Uint8Array, h: FixedHeaders): MessageTooLargeError | undefined {
  const size = data.length + h.encode().length;
  const max = nc.info?.max_payload;
  return max !== undefined && size > max ? new MessageTooLargeError(size, max, "max_payload") : undefined;
}

/**
 * Headers whose keys are constants and whose values are already validated (a UUID, a
 * stream name, a number, a subject the subject module built): built without
 * MsgHdrsImpl's per-call key canonicalization and value checks, and encoded once however
 * often the message is resent (the size check and NATS.js share that encoding). Any
 * change through the MsgHdrs API drops it, so it stays a faithful MsgHdrs.
 */
export class FixedHeaders extends MsgHdrsImpl {
  #wire: Uint8Array | undefined;

  /** `entries`: canonical keys, values without CR, LF or surrounding spaces. */
  constructor(entries: readonly (readonly [string, string])[]) {
    super();
    for (const [k, v] of entries) this.headers.set(k, [v]);
  }

  override encode(): Uint8Array {
    if (this.#wire === undefined) {
      if (this._code !== 0) return super.encode();
      let text = "NATS/1.0";
      for (const [k, values] of this.headers) for (const v of values) text += `\r\n${k}: ${v}`;
      this.#wire = encodePooled(`${text}\r\n\r\n`);
    }
    return this.#wire;
  }

  override set(k: string, v: string, match?: Match): void {
    this.#wire = undefined;
    super.set(k, v, match);
  }

  override append(k: string, v: string, match?: Match): void {
    this.#wire = undefined;
    super.append(k, v, match);
  }

  override delete(k: string, match?: Match): void {
    this.#wire = undefined;
    super.delete(k, match);
  }
}

/**
 * The sequence of the append `eventId` if it was stored right behind its fence: the
 * session's first message after `expectedLastSeq` carries its id. Undefined when not (or unfenced).
 */
export async function storedBehindFence(
  jsm: JetStreamManager,
  stream: string,
  append: Pick<AppendRequest, "expectedLastSeq" | "fenceSubject" | "eventId">,
): Promise<number | undefined> {
  const { expectedLastSeq, fenceSubject, eventId } = append;
  if (expectedLastSeq === undefined || !fenceSubject) return undefined;
  const query = { seq: expectedLastSeq + 1, next_by_subj: fenceSubject } as unknown as MsgRequest;
  const m = await jsm.streams.getMessage(stream, query);
  return m?.header?.get(MsgIdHdr) === eventId ? m.seq : undefined;
}

class PendingAppend {
  readonly tokens: string[] = [];
  attempts = 0;
  timer: NodeJS.Timeout | undefined;
  settled = false;
  noResponders = 0;
  readonly deadline: number;
  constructor(
    readonly request: AppendRequest,
    readonly headers: MsgHdrs,
    readonly resolve: (ack: AppendAck) => void,
    readonly reject: (e: Error) => void,
    deadlineMs: number,
  ) {
    this.deadline = Date.now() + deadlineMs;
  }
}

export class JournalWriter {
  readonly #nc: NatsConnection;
  readonly #jsm: () => Promise<JetStreamManager>;
  readonly #settings: JournalWriterSettings;
  readonly #log: Logger;
  readonly #prefix: string;
  readonly #pending = new Map<string, PendingAppend>();
  readonly #inFlight = new Set<PendingAppend>();
  readonly #waiting: (() => void)[] = [];
  #sub: Subscription | undefined;
  #next = 0;
  #closed = false;

  constructor(nc: NatsConnection, jsm: () => Promise<JetStreamManager>, settings: JournalWriterSettings, log: Logger) {
    this.#nc = nc;
    this.#jsm = jsm;
    this.#settings = settings;
    this.#log = log;
    // Honour a connection's inbox prefix: restricted users are often allowed only their own.
    this.#prefix = createInbox(inboxPrefixOf(nc));
  }

  /** Appends one message; resolves with its ack, or rejects with a typed error. */
  append(request: AppendRequest): Promise<AppendAck> {
    // Not an async function: the common case (a free slot) costs one promise, not three.
    if (this.#closed || this.#nc.isClosed()) return Promise.reject(new ConnectionClosedError());
    // Only the events stream may store a journal append: a foreign stream that happens to
    // capture the subject refuses it instead of handing out its own sequence.
    const entries: (readonly [string, string])[] = [
      [MsgIdHdr, request.eventId],
      [ExpectedStreamHdr, this.#settings.stream],
    ];
    if (request.expectedLastSeq !== undefined) {
      entries.push([ExpectedLastSubjectSequenceHdr, String(request.expectedLastSeq)]);
      if (request.fenceSubject) entries.push([ExpectedLastSubjectSequenceSubjectHdr, request.fenceSubject]);
    }
    if (request.trace) entries.push(...request.trace);
    const h = new FixedHeaders(entries);
    const tooLarge = payloadTooLarge(this.#nc, request.data, h);
    if (tooLarge) return Promise.reject(tooLarge);
    if (this.#inFlight.size >= this.#settings.maxInFlight) return this.#appendWhenFree(request, h);
    return this.#start(request, h);
  }

  async #appendWhenFree(request: AppendRequest, h: MsgHdrs): Promise<AppendAck> {
    while (this.#inFlight.size >= this.#settings.maxInFlight) {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
      if (this.#closed) throw new ConnectionClosedError();
    }
    return this.#start(request, h);
  }

  #start(request: AppendRequest, h: MsgHdrs): Promise<AppendAck> {
    this.#ensureSubscribed();
    return new Promise<AppendAck>((resolve, reject) => {
      const p = new PendingAppend(request, h, resolve, reject, this.#settings.publishDeadlineMs);
      this.#inFlight.add(p);
      this.#send(p);
    });
  }

  /** Rejects every append on `subject` (the server refused to let us publish there). */
  failSubject(subject: string, error: Error): void {
    for (const p of [...this.#inFlight]) if (p.request.subject === subject) this.#settle(p, error);
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Fails what is still in flight and stops listening for acks. */
  close(): void {
    this.#closed = true;
    for (const p of [...this.#inFlight]) this.#settle(p, new ConnectionClosedError("the bus was closed before the append was acknowledged"));
    this.#sub?.unsubscribe();
    this.#sub = undefined;
    for (const w of this.#waiting.splice(0)) w();
  }

  #ensureSubscribed(): void {
    if (this.#sub) return;
    this.#sub = this.#nc.subscribe(`${this.#prefix}.*`, {
      callback: (err, msg) => {
        if (err) {
          this.#log.error({ err }, "ack inbox subscription failed");
          return;
        }
        this.#onAck(msg);
      },
    });
  }

  #send(p: PendingAppend): void {
    if (p.settled) return;
    const token = (this.#next++).toString(36);
    p.tokens.push(token);
    this.#pending.set(token, p);
    p.attempts++;
    try {
      this.#nc.publish(p.request.subject, p.request.data, { reply: `${this.#prefix}.${token}`, headers: p.headers });
    } catch (e) {
      this.#settle(p, this.#nc.isClosed() ? new ConnectionClosedError(undefined, { cause: e }) : new PublishError(p.request.subject, `publish failed: ${(e as Error).message}`, undefined, { cause: e }));
      return;
    }
    const wait = Math.min(this.#settings.ackTimeoutMs, Math.max(0, p.deadline - Date.now()));
    p.timer = setTimeout(() => this.#onTimeout(p), wait);
  }

  #onTimeout(p: PendingAppend): void {
    if (p.settled) return;
    if (Date.now() >= p.deadline) {
      this.#settle(p, new PublishTimeoutError(p.request.subject, p.request.eventId, p.attempts, this.#settings.publishDeadlineMs, p.request.expectedLastSeq !== undefined));
      return;
    }
    this.#log.debug({ eventId: p.request.eventId, attempt: p.attempts }, "ack timed out; resending with the same message id");
    this.#send(p);
  }

  #onAck(msg: Msg): void {
    const token = msg.subject.slice(this.#prefix.length + 1);
    const p = this.#pending.get(token);
    if (!p || p.settled) return;
    clearTimeout(p.timer);
    if (msg.headers?.code === 503) {
      this.#onNoResponders(p);
      return;
    }
    let ack: JsAck;
    try {
      ack = msg.json<JsAck>();
    } catch (e) {
      this.#settle(p, new PublishError(p.request.subject, "the server's ack is not JSON", undefined, { cause: e }));
      return;
    }
    if (ack.error) {
      this.#onAckError(p, ack.error);
      return;
    }
    if (typeof ack.seq !== "number" || typeof ack.stream !== "string") {
      this.#settle(p, new PublishError(p.request.subject, "the server's ack has no stream sequence"));
      return;
    }
    this.#settle(p, undefined, { stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate === true });
  }

  #onAckError(p: PendingAppend, error: NonNullable<JsAck["error"]>): void {
    const description = error.description ?? "unknown error";
    if (error.err_code === ApiCodes.StreamWrongLastSequence) {
      const actual = /(\d+)\s*$/.exec(description);
      const conflict = new PublishConflictError(p.request.sessionId, p.request.expectedLastSeq ?? 0, actual ? Number(actual[1]) : undefined);
      // The server may check the expected sequence before its duplicate window (2.15 on an
      // R1 stream does; 2.10 R1 and 2.15 R3 dedupe first), so a resend of an append that was
      // stored but whose ack was lost can be refused because of the append itself. It was
      // stored iff the session's first message after expectedLastSeq carries its id.
      this.#storedBehindFence(p).then(
        (seq) => (seq === undefined ? this.#settle(p, conflict) : this.#settle(p, undefined, { stream: this.#settings.stream, seq, duplicate: true })),
        (e: unknown) => {
          this.#log.debug({ err: e }, "looking up the fenced append after a conflict failed");
          this.#settle(p, conflict);
        },
      );
    } else if (error.err_code === ApiCodes.StreamMismatch) {
      this.#settle(p, new NotProvisionedError(this.#settings.stream, `stream ${this.#settings.stream} does not capture ${p.request.subject} (another stream does); run \`jetloop provision\``));
    } else if (error.err_code === ApiCodes.MessageTooLarge) {
      this.#settle(p, new MessageTooLargeError(p.request.data.length, undefined, "max_msg_size"));
    } else if (error.code === 503) {
      // JetStream temporarily unavailable (e.g. no stream leader yet): ambiguous, retry.
      this.#retryLater(p);
    } else {
      this.#settle(p, new PublishError(p.request.subject, `the server refused the append: ${description}`, error.err_code));
    }
  }

  #onNoResponders(p: PendingAppend): void {
    p.noResponders++;
    // No stream listening may mean "leader election" or a restarting server (retry) or
    // "not provisioned" (final). The append retries either way; the first time, a lookup
    // runs beside it and ends it if the stream does not exist. The append never waits on
    // the lookup: right after a restart that request can go unanswered for its whole
    // timeout (5 s), while the retries get through.
    this.#retryLater(p);
    if (p.noResponders === 1) {
      this.#streamExists().then(
        (exists) => {
          if (!exists) this.#settle(p, new NotProvisionedError(this.#settings.stream));
        },
        (e: unknown) => this.#log.debug({ err: e }, "stream lookup after no responders failed"),
      );
    }
  }

  #retryLater(p: PendingAppend): void {
    if (p.settled) return;
    const delay = Math.min(50 * 2 ** Math.min(p.attempts, 6), 2000);
    if (Date.now() + delay >= p.deadline) {
      this.#settle(p, new PublishTimeoutError(p.request.subject, p.request.eventId, p.attempts, this.#settings.publishDeadlineMs, p.request.expectedLastSeq !== undefined));
      return;
    }
    p.timer = setTimeout(() => this.#send(p), delay);
  }

  /** The sequence of this append if an earlier attempt stored it behind its fence. */
  async #storedBehindFence(p: PendingAppend): Promise<number | undefined> {
    return storedBehindFence(await this.#jsm(), this.#settings.stream, p.request);
  }

  async #streamExists(): Promise<boolean> {
    try {
      const jsm = await this.#jsm();
      await jsm.streams.info(this.#settings.stream);
      return true;
    } catch (e) {
      if (e instanceof JetStreamApiError && e.code === ApiCodes.StreamNotFound) return false;
      if (e instanceof PermissionDeniedError) return true;
      throw e;
    }
  }

  #settle(p: PendingAppend, error: Error | undefined, ack?: AppendAck): void {
    if (p.settled) return;
    p.settled = true;
    clearTimeout(p.timer);
    for (const t of p.tokens) this.#pending.delete(t);
    this.#inFlight.delete(p);
    this.#waiting.shift()?.();
    appendSettled(error, ack, p.attempts, p.deadline - this.#settings.publishDeadlineMs);
    if (error) p.reject(error);
    else p.resolve(ack!);
  }
}
