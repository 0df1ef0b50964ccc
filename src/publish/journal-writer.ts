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
 *
 * Resends keep each session's call order (a lane per session, below; publish/README.md):
 * nothing goes out while the link is down, and a session's unacknowledged appends are
 * resent together, in order. Outcomes resolve in call order per session; an order nothing
 * could keep is PublishOrderError.
 */
import { inboxPrefixOf } from "../connection/inbox.js";
import { linkUp } from "../connection/link.js";
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
  PublishIdClaimedError,
  PublishTimeoutError,
} from "../errors.js";
import { encodePooled } from "../wire/pooled-utf8.js";
import { ApiCodes, PubHeaders } from "../subjects/nats-names.js";
import { HeadQueue } from "./head-queue.js";
import { SessionOrder } from "./session-order.js";
import { appendSettled, type TraceEntries } from "../telemetry/index.js";
export { journalHeaderRoom } from "../connection/header-room.js";

const { MsgIdHdr, ExpectedStreamHdr, ExpectedLastSubjectSequenceHdr, ExpectedLastSubjectSequenceSubjectHdr } = PubHeaders;

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

/**
 * Undefined when the message stored at `seq` is the append `request` (its subject and its
 * event id), else why not. A duplicate ack names the message holding the id anywhere in the
 * stream: the window is stream-wide, so another session's writer can publish this id first
 * on its own subject, and trusting the ack would report stored an append its session never
 * got. Reading fails closed: an ack that cannot be checked is not reported stored.
 */
export async function duplicateMismatch(
  jsm: JetStreamManager,
  stream: string,
  seq: number,
  request: Pick<AppendRequest, "subject" | "eventId">,
): Promise<PublishIdClaimedError | undefined> {
  let m;
  try {
    m = await jsm.streams.getMessage(stream, { seq });
  } catch (e) {
    if (e instanceof JetStreamApiError && e.code === ApiCodes.NoMessageFound) m = null;
    else throw new PublishError(request.subject, `the append was answered as a duplicate of message ${seq}, which could not be read back to check it: ${(e as Error).message}`, undefined, { cause: e });
  }
  if (m && m.subject === request.subject && m.header?.get(MsgIdHdr) === request.eventId) return undefined;
  return new PublishIdClaimedError(request.subject, request.eventId, seq, m?.subject);
}

class PendingAppend {
  readonly tokens: string[] = [];
  attempts = 0;
  /** When its wait (for its ack, or for its deadline while held) ends: the writer's one timer sweeps these. */
  due = 0;
  /** Sent on the current link since its lane last went out, and waiting for its ack. */
  sent = false;
  /** Its outcome is known (`error` or `ack`); it resolves when its lane reaches it. */
  done = false;
  error: Error | undefined;
  ack: AppendAck | undefined;
  noResponders = 0;
  /** Its lane's `refusals` when it was first sent (undefined: never sent). */
  refusalsAtFirstSend: number | undefined;
  /** Its lane's `refusals` right after its own latest refusal-unstored (0: never refused). */
  refusedAt = 0;
  readonly deadline: number;
  constructor(
    readonly request: AppendRequest,
    readonly headers: MsgHdrs,
    readonly lane: SessionLane,
    readonly resolve: (ack: AppendAck) => void,
    readonly reject: (e: Error) => void,
    deadlineMs: number,
  ) {
    this.deadline = Date.now() + deadlineMs;
  }
}

/** An append waiting for a free slot, in call order. */
interface QueuedAppend {
  readonly request: AppendRequest;
  readonly headers: MsgHdrs;
  readonly resolve: (ack: AppendAck) => void;
  readonly reject: (e: Error) => void;
}

/**
 * One session's appends in the order they were made, while any of them is unresolved.
 * The server reads a link in order and, when it breaks, loses only what came after some
 * point; so a session's appends sent in order on one link can only be stored in order. A
 * lane keeps that: its appends go out in order, and once that cannot hold for the link
 * (it broke, an ack did not come, the stream had no leader) the lane is stalled — nothing
 * more of the session goes out — until all its unacknowledged appends are resent, in order,
 * on a live link. Outcomes are handed out in call order, each checked against the session's
 * highest stored sequence so far, so an order nothing could keep is reported, never silent.
 */
class SessionLane {
  readonly entries = new HeadQueue<PendingAppend>();
  /** Its appends are held: the link is down, a resend of the lane is scheduled, or a probe is out. */
  stalled = false;
  retry: NodeJS.Timeout | undefined;
  /**
   * The server refused one of its appends unstored (no stream leader): resends go one at a
   * time, the first unsettled append alone (`probe`) until it is settled, then the rest.
   * Pipelined behind an append that may be refused again, a later one could be stored first.
   */
  cautious = false;
  probe: PendingAppend | undefined;
  /**
   * How many times the server refused one of its appends unstored. Only such a refusal lets
   * an append be stored before an earlier one of its lane (the in-order argument holds
   * otherwise), and only a refusal of the append itself or of one ahead of it, made after
   * its first send, can leave its copy out of order: a refusal behind it stalls only what
   * follows. So a duplicate ack with no such refusal is a copy stored before the call (an
   * earlier call of the same event) or stored in order by this call, never an order this
   * call broke.
   */
  refusals = 0;
  /**
   * The highest `refusedAt` of its appends handed out so far: when an append is handed out
   * (all ahead of it already were), the latest refusal of it or of one ahead of it. Kept as
   * the drain goes, so no append is looked at twice.
   */
  refusedAhead = 0;
  readonly order: SessionOrder;
  constructor(readonly sessionId: string) {
    this.order = new SessionOrder(sessionId);
  }

  /** Its appends without an outcome yet, in call order. */
  unsettled(): PendingAppend[] {
    const out: PendingAppend[] = [];
    for (const p of this.entries) if (!p.done) out.push(p);
    return out;
  }
}

/** An append failed by a close, after `sends` sends: whether it may be stored follows from them. */
function closedBefore(why: string, sends: number, cause?: unknown): ConnectionClosedError {
  return new ConnectionClosedError(
    sends > 0
      ? `${why} before the append was acknowledged (sent ${sends} times): it may or may not be stored — publishing it again within the stream's duplicate window of its first attempt stores it at most once`
      : `${why} before the append was sent; it was never sent: it is not stored`,
    { cause, mayBeStored: sends > 0 },
  );
}

export class JournalWriter {
  readonly #nc: NatsConnection;
  readonly #jsm: () => Promise<JetStreamManager>;
  readonly #settings: JournalWriterSettings;
  readonly #log: Logger;
  readonly #prefix: string;
  readonly #pending = new Map<string, PendingAppend>();
  readonly #inFlight = new Set<PendingAppend>();
  /** Appends waiting for an ack or a deadline, and the one timer that ends their waits (#wait). */
  readonly #waiting = new Set<PendingAppend>();
  #sweepTimer: NodeJS.Timeout | undefined;
  #sweepAt = Infinity;
  readonly #lanes = new Map<string, SessionLane>();
  readonly #queue = new HeadQueue<QueuedAppend>();
  #sub: Subscription | undefined;
  #status: { stop?: () => void } | undefined;
  /** The link as the status events tell it: down from "disconnect" until "reconnect". */
  #up: boolean;
  #next = 0;
  #closed = false;

  constructor(nc: NatsConnection, jsm: () => Promise<JetStreamManager>, settings: JournalWriterSettings, log: Logger) {
    this.#nc = nc;
    this.#jsm = jsm;
    this.#settings = settings;
    this.#log = log;
    // Honour a connection's inbox prefix: restricted users are often allowed only their own.
    this.#prefix = createInbox(inboxPrefixOf(nc));
    this.#up = linkUp(nc) ?? true;
    void this.#watchLink();
  }

  /** Appends one message; resolves with its ack, or rejects with a typed error. */
  append(request: AppendRequest): Promise<AppendAck> {
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
    const headers = new FixedHeaders(entries);
    const tooLarge = payloadTooLarge(this.#nc, request.data, headers);
    if (tooLarge) return Promise.reject(tooLarge);
    return new Promise<AppendAck>((resolve, reject) => {
      const q = { request, headers, resolve, reject };
      // Slots are handed out strictly in call order: a lane is joined in the order of the calls.
      if (this.#inFlight.size < this.#settings.maxInFlight && this.#queue.size === 0) this.#start(q);
      else this.#queue.push(q);
    });
  }

  #start(q: QueuedAppend): void {
    this.#ensureSubscribed();
    const sessionId = q.request.sessionId;
    let lane = this.#lanes.get(sessionId);
    if (!lane) this.#lanes.set(sessionId, (lane = new SessionLane(sessionId)));
    const p = new PendingAppend(q.request, q.headers, lane, q.resolve, q.reject, this.#settings.publishDeadlineMs);
    lane.entries.push(p);
    this.#inFlight.add(p);
    if (lane.stalled || !this.#linkUp()) {
      lane.stalled = true;
      this.#hold(p);
    } else this.#send(p);
  }

  #startQueued(): void {
    while (this.#inFlight.size < this.#settings.maxInFlight && this.#queue.size > 0) this.#start(this.#queue.shift()!);
  }

  /** Rejects every append on `subject` (the server refused to let us publish there). */
  failSubject(subject: string, error: Error): void {
    for (const p of [...this.#inFlight]) if (p.request.subject === subject) this.#settle(p, error);
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Sessions with a lane: some append of theirs is unresolved (a settled session's lane is released). */
  get lanes(): number {
    return this.#lanes.size;
  }

  /** Fails what is still in flight or waiting for a slot and stops listening for acks. */
  close(): void {
    this.#closed = true;
    this.#failAll("the bus was closed");
    this.#sub?.unsubscribe();
    this.#sub = undefined;
    this.#status?.stop?.();
  }

  /** Fails every append with ConnectionClosedError, each saying whether it may be stored (it was sent) or not. */
  #failAll(why: string): void {
    const queued = this.#queue.takeAll();
    for (const p of [...this.#inFlight]) this.#settle(p, closedBefore(why, p.attempts));
    for (const q of queued) q.reject(closedBefore(why, 0));
  }

  #linkUp(): boolean {
    return this.#up && linkUp(this.#nc) !== false;
  }

  /**
   * Follows the link. On "disconnect" nothing goes out (what NATS.js would buffer meanwhile
   * it may discard or send on the next link ahead of earlier appends resent later); on
   * "reconnect" every lane is resent whole, in order, before anything else of it is sent.
   */
  async #watchLink(): Promise<void> {
    const status = this.#nc.status();
    this.#status = status as { stop?: () => void };
    try {
      for await (const s of status) {
        if (s.type === "disconnect") this.#up = false;
        else if (s.type === "reconnect") {
          this.#up = true;
          for (const lane of this.#lanes.values()) this.#resendLane(lane);
        }
      }
    } catch (e) {
      this.#log.debug({ err: e }, "journal writer's status watch ended");
    }
    // The watch ends when the connection closes (NATS.js ends its listeners first), or by close().
    if (!this.#closed) this.#failAll("the connection closed");
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
    // Closed: close() is failing every append; one settled there (a probe) must not send the rest.
    if (p.done || this.#closed) return;
    const token = (this.#next++).toString(36);
    p.refusalsAtFirstSend ??= p.lane.refusals;
    p.tokens.push(token);
    this.#pending.set(token, p);
    p.attempts++;
    try {
      this.#nc.publish(p.request.subject, p.request.data, { reply: `${this.#prefix}.${token}`, headers: p.headers });
    } catch (e) {
      this.#settle(p, this.#nc.isClosed() ? closedBefore("the connection closed", p.attempts - 1, e) : new PublishError(p.request.subject, `publish failed: ${(e as Error).message}`, undefined, { cause: e }));
      return;
    }
    p.sent = true;
    this.#wait(p, Math.min(this.#settings.ackTimeoutMs, Math.max(0, p.deadline - Date.now())));
  }

  /** Not sent (its lane is stalled): only its deadline runs. */
  #hold(p: PendingAppend): void {
    p.sent = false;
    this.#wait(p, Math.max(0, p.deadline - Date.now()));
  }

  /**
   * `p` waits `ms` for its ack (or its deadline): one timer for all the writer's appends, set
   * for the earliest wait, not a timer per append (a pipelined writer has thousands waiting,
   * and nearly every wait ends with its ack, long before its time).
   */
  #wait(p: PendingAppend, ms: number): void {
    p.due = Date.now() + ms;
    this.#waiting.add(p);
    if (p.due < this.#sweepAt) this.#armSweep(p.due);
  }

  /** `p` waits no more (acked or settled); the timer stops with the last wait. */
  #unwait(p: PendingAppend): void {
    if (!this.#waiting.delete(p) || this.#waiting.size > 0) return;
    clearTimeout(this.#sweepTimer);
    this.#sweepTimer = undefined;
    this.#sweepAt = Infinity;
  }

  #armSweep(at: number): void {
    clearTimeout(this.#sweepTimer);
    this.#sweepAt = at;
    this.#sweepTimer = setTimeout(() => this.#sweep(), Math.max(0, at - Date.now()));
  }

  /** Ends every wait that is due (each as its own timer would have), and sets the timer for the next. */
  #sweep(): void {
    this.#sweepTimer = undefined;
    this.#sweepAt = Infinity;
    const now = Date.now();
    const due: PendingAppend[] = [];
    for (const p of this.#waiting) if (p.due <= now) due.push(p);
    for (const p of due) {
      this.#waiting.delete(p);
      this.#onTimeout(p);
    }
    // Waits set by the timeouts above armed the timer already when they are the earliest.
    let next = Infinity;
    for (const p of this.#waiting) if (p.due < next) next = p.due;
    if (next < this.#sweepAt) this.#armSweep(next);
  }

  #timedOut(p: PendingAppend): PublishTimeoutError {
    return new PublishTimeoutError(p.request.subject, p.request.eventId, p.attempts, this.#settings.publishDeadlineMs, p.request.expectedLastSeq !== undefined);
  }

  #onTimeout(p: PendingAppend): void {
    if (p.done) return;
    if (Date.now() >= p.deadline) {
      this.#settle(p, this.#timedOut(p));
      return;
    }
    const lane = p.lane;
    if (!p.sent || lane.retry !== undefined || (lane.probe !== undefined && lane.probe !== p)) {
      this.#hold(p); // a resend of its lane is due, or waits for the probe
      return;
    }
    // Lost or slow: it goes again, and everything of its session after it goes again behind it.
    this.#log.debug({ eventId: p.request.eventId, attempt: p.attempts }, "ack timed out; resending with the same message id");
    this.#resendLane(lane);
  }

  /**
   * Sends the lane's unsettled appends again in call order on a live link (a cautious lane:
   * only the first), else holds them. One past its deadline is held with no time left, so
   * its timer ends it.
   */
  #resendLane(lane: SessionLane): void {
    clearTimeout(lane.retry);
    lane.retry = undefined;
    const up = this.#linkUp();
    lane.stalled = !up || lane.cautious;
    lane.probe = undefined;
    for (const p of lane.unsettled()) {
      if (up && Date.now() < p.deadline && (!lane.cautious || lane.probe === undefined)) {
        if (lane.cautious) lane.probe = p;
        this.#send(p);
      } else this.#hold(p);
    }
  }

  #onAck(msg: Msg): void {
    const token = msg.subject.slice(this.#prefix.length + 1);
    const p = this.#pending.get(token);
    if (!p || p.done) return;
    this.#unwait(p);
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
    const stored = { stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate === true };
    if (!stored.duplicate) {
      this.#settle(p, undefined, stored);
      return;
    }
    // A duplicate ack is trusted only once the message at its sequence is this append.
    this.#jsm()
      .then((jsm) => duplicateMismatch(jsm, stored.stream, stored.seq, p.request))
      .then(
        (mismatch) => this.#settle(p, mismatch, mismatch ? undefined : stored),
        (e: unknown) => this.#settle(p, e instanceof Error ? e : new PublishError(p.request.subject, String(e))),
      );
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

  /**
   * The server did not store `p` (no stream leader yet): its lane is stalled and, after a
   * backoff, resent cautiously, so the session's later appends go out only behind `p`.
   */
  #retryLater(p: PendingAppend): void {
    if (p.done) return;
    const delay = Math.min(50 * 2 ** Math.min(p.attempts, 6), 2000);
    if (Date.now() + delay >= p.deadline) {
      this.#settle(p, this.#timedOut(p));
      return;
    }
    this.#hold(p);
    const lane = p.lane;
    p.refusedAt = ++lane.refusals;
    lane.stalled = true;
    lane.cautious = true;
    if (lane.probe === p) lane.probe = undefined;
    lane.retry ??= setTimeout(() => this.#resendLane(lane), delay);
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
    if (p.done) return;
    p.done = true;
    p.error = error;
    p.ack = ack;
    this.#unwait(p);
    for (const t of p.tokens) this.#pending.delete(t);
    this.#inFlight.delete(p);
    appendSettled(error, ack, p.attempts, p.deadline - this.#settings.publishDeadlineMs);
    const lane = p.lane;
    this.#drain(lane);
    if (lane.probe === p && !this.#closed) {
      // The probe is settled: the rest of the lane goes out behind it.
      lane.cautious = false;
      this.#resendLane(lane);
    }
    this.#startQueued();
  }

  /**
   * Hands out the lane's outcomes in call order, as far as they are known, through the
   * session's order check (session-order.ts).
   */
  #drain(lane: SessionLane): void {
    const { entries } = lane;
    for (let p = entries.peek(); p?.done; p = entries.peek()) {
      entries.shift();
      if (p.refusedAt > lane.refusedAhead) lane.refusedAhead = p.refusedAt;
      if (p.error) {
        p.reject(p.error);
        continue;
      }
      const ack = p.ack!;
      // A duplicate with no refusal of it or ahead of it since its first send kept its place.
      const storedBefore = ack.duplicate && (p.attempts === 1 || lane.refusedAhead <= p.refusalsAtFirstSend!);
      const outOfOrder = lane.order.next(p.request.eventId, ack.seq, storedBefore);
      if (outOfOrder) p.reject(outOfOrder);
      else p.resolve(ack);
    }
    if (entries.size === 0) {
      clearTimeout(lane.retry);
      if (this.#lanes.get(lane.sessionId) === lane) this.#lanes.delete(lane.sessionId);
    }
  }
}
