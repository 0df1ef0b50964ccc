/**
 * A bounded read of the journal with an ordered consumer: from a sequence (or a time) to
 * `toSeq`, or to the end of the journal as it stood when the read began; then it ends and
 * deletes its consumer. Replay uses it, and so does a feed subscription for history and for
 * closing gaps.
 */
import { type ConsumerInfo, type ConsumerMessages, DeliverPolicy, type JetStreamClient, JetStreamApiError, type JsMsg, type OrderedConsumerOptions } from "@nats-io/jetstream";
import { createInbox, type MsgHdrs, nuid } from "@nats-io/nats-core";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { ConnectionClosedError, NotProvisionedError, PermissionDeniedError, ReadConsumersBusyError, SubscriptionError, TurnUnheldError } from "../errors.js";
import { BatchHeaders } from "../subjects/nats-names.js";
import { consumerError, permissionViolation } from "./consumer-errors.js";
import type { OpenReads } from "./open-reads.js";
import type { ReadConsumerPool } from "./read-consumers.js";
import { pullSize } from "./pull-size.js";
import { detachedFromReadPauses, readPause } from "./read-pauses.js";
import { placeOnLeader, type PlacementDeps } from "./read-placement.js";
import { turnSpanOf, wholeTurnEnd } from "./turn-span.js";

/** Waits between attempts when a journal read fails (a leader election, a restart). */
const RETRY_MS = [250, 500, 1000, 2000, 4000, 8000];

/** How long NATS.js waits for a consumer's creation to be answered (its request timeout). */
const CREATE_TIMEOUT_MS = 5_000;

/**
 * Waits between attempts; cut short (resolving) when one of `signals` aborts: the caller
 * checks why. A pause of the read (read-pauses.ts): a budgeted caller's share goes back meanwhile.
 */
function backoff(attempt: number, signals: readonly AbortSignal[] = []): Promise<void> {
  return readPause(() => sleep(RETRY_MS[attempt], undefined, { signal: AbortSignal.any([...signals]) }).catch(() => undefined));
}

/**
 * Deletes a read's consumer now rather than at its inactivity timeout (5 min: the server
 * limits consumers per stream). A delete sent while the meta leader is down (the node just
 * killed was it) times out and is lost: the consumer comes back with its node. So a delete
 * nobody answered is sent again with the read's backoff until the server answers (gone, or
 * refused) or the bus closes; with `againMs`, once more that long after the answer (for a
 * consumer whose creation may still be on its way). The read does not wait for it.
 */
function deleteInBackground(del: () => Promise<unknown>, closed: AbortSignal, againMs = 0): void {
  // It outlives the read: its waits are no pause of the caller's (read-pauses.ts).
  void detachedFromReadPauses(async () => {
    for (let attempt = 0; ; attempt++) {
      try {
        await del();
        break;
      } catch (e) {
        // Answered: gone, or refused by the API; a 503 says the cluster could not act on it.
        if (e instanceof JetStreamApiError && e.status !== 503) break;
        if (permissionViolation(e) || closed.aborted || attempt >= RETRY_MS.length) return;
      }
      await backoff(attempt, [closed]);
    }
    if (againMs === 0) return;
    await sleep(againMs, undefined, { signal: closed }).then(del, () => undefined).catch(() => undefined);
  });
}

function deleteByName(js: JetStreamClient, stream: string, name: string): () => Promise<unknown> {
  return async () => (await js.jetstreamManager(false)).consumers.delete(stream, name);
}

/** JetStream answered 503 ("temporarily unavailable": no leader yet), itself or as the typed error's cause. */
function unavailableForNow(e: unknown): boolean {
  const api = e instanceof JetStreamApiError ? e : e instanceof Error && e.cause instanceof JetStreamApiError ? e.cause : undefined;
  return api !== undefined && api.status === 503;
}

/** A failure no retry mends: the server's permissions refused it, or the stream is not there. */
function isRefusal(e: unknown): boolean {
  return e instanceof PermissionDeniedError || e instanceof NotProvisionedError;
}

/**
 * Pull expiry (heartbeats at half of it). NATS.js recreates an ordered consumer that a
 * server restart lost, but its first pull after that can ask for nothing (stale pending
 * counts), so delivery resumes only after two missed heartbeats: 30 s with the default
 * 30 s expiry. 5 s bounds that stall.
 */
const PULL_EXPIRES_MS = 5_000;

/**
 * A pool read's pull expiry: a lost consumer (a restart, a delete between pulls) shows as
 * two missed heartbeats, so 2 s bounds that stall; a pool read only ever asks for messages
 * the journal holds already.
 */
const POOL_PULL_EXPIRES_MS = 2_000;

export interface JournalRange {
  readonly subjects: readonly string[];
  readonly from: { readonly seq: number } | { readonly time: Date };
  /** Last sequence, inclusive. */
  readonly toSeq: number;
  /** Messages pulled at once. */
  readonly batch: number;
  /** Deliver headers without payloads (reconciling reads only message ids). */
  readonly headersOnly?: boolean;
}

/**
 * How journal reads reach the stream (the bus option `journalReads`). `pull`: ordered pull
 * consumers, deleted when the read ends. `push`: ordered push consumers delivering to the
 * connection's own inbox prefix, so a user confined to its session needs no grant that names
 * another consumer (MSG.NEXT, DELETE): deploy/nats/permissions.example.conf. Each push read's
 * consumer is left to the server's inactivity timeout (5 min) instead of being deleted.
 */
export type JournalReads = "pull" | "push";

/** Where a journal read goes: the client, the stream, and how reads reach it. */
export interface JournalSource {
  readonly js: JetStreamClient;
  readonly stream: string;
  readonly journalReads: JournalReads;
  /** The connection's inbox prefix (inboxPrefixOf): push reads deliver below it. */
  readonly inboxPrefix: string | undefined;
  /** The bus option `readConsumers`: every read names its consumer from this pool (read-consumers.ts). */
  readonly pool?: ReadConsumerPool;
  /** The reads in progress, stopped when the bus closes. */
  readonly reads: OpenReads;
  /** The stream leader, where a read's consumer must live, and where a misplaced one is logged (read-placement.ts). */
  readonly placement: PlacementDeps;
  /**
   * The stream's last sequence now: a read going on to a turn's end reads only what the
   * stream holds, as it is stored. `subjects`: the read's filter (a restricted user reads
   * the position through a consumer of her own filter: streams/position.ts).
   */
  lastSeq(subjects?: readonly string[]): Promise<number>;
  /** The server's max_payload on the connection now (it may differ after a reconnect): pulls are sized from it (pull-size.ts). */
  maxPayload(): number | undefined;
  /**
   * Whether batch headers can name a turn (turn-span.ts): the server has atomic batches
   * (2.12+) and so checks a batch's sequences. A server before them stores any batch
   * headers verbatim, and jetloop writes no batches there: its messages name no turn.
   */
  readonly turns: boolean;
}

/** Where a read starts, as consumer options. */
function startAt(from: JournalRange["from"]): Partial<Pick<OrderedConsumerOptions, "deliver_policy" | "opt_start_seq" | "opt_start_time">> {
  return "seq" in from
    ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from.seq }
    : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: from.time.toISOString() };
}

/** Whether `m` ends the read: the count the read began with is met, the range's end reached, or nothing is left. */
function lastOfRange(m: JsMsg, pending: number, range: JournalRange): boolean {
  return pending <= 0 || m.seq >= range.toSeq || m.info.pending === 0;
}

export function readJournalRange(source: JournalSource, range: JournalRange, what: string): AsyncGenerator<JsMsg, void, undefined> {
  return source.pool ? readPooled(source, source.pool, range, what) : readOrdered(source, range, what);
}

/**
 * `range` read so that it never ends inside a turn (turn-span.ts): when its last message is
 * of a jetloop batch that ends after what the read covered, it goes on to the batch's end
 * (not past `limit`, a bound the user gave) and yields the rest of the batch the range's
 * subjects select. The read covered `range.toSeq` when that is the journal's end as it
 * stood (below `limit`), else up to its last message. Returns the last sequence covered.
 *
 * The end a message states (`Jetloop-Batch-Size`) is its writer's, so it is only where to
 * look (restOfTurn): the turn ends at its commit, or before the first message of the range
 * that is not of its batch (a batch is contiguous), whichever is seen first. A message of
 * the batch is held back until its turn is known whole; a turn that the stream stops
 * holding more of before it ends is a claim the journal does not hold: its held messages
 * are poison, given to `unheld` (reported by the caller), never yielded, and the read ends
 * where it was. So a forged size costs the read that meets it a few polls, never a wait for
 * messages nobody writes, and a reader of other sessions never meets it.
 * The wait ends at once when the bus closes (ConnectionClosedError) or `stop` aborts (the
 * reader is gone: it returns what it covered), not at the end of its backoff.
 */
export async function* readWholeTurns(
  source: JournalSource,
  range: JournalRange,
  what: string,
  limit: number = Number.MAX_SAFE_INTEGER,
  stop?: AbortSignal,
  unheld?: (m: JsMsg, error: TurnUnheldError) => void,
): AsyncGenerator<JsMsg, number, undefined> {
  // The trailing messages of one batch, not yet known to be of a whole turn.
  let held: JsMsg[] = [];
  let last: JsMsg | undefined;
  for await (const m of readJournalRange(source, range, what)) {
    last = m;
    if (!source.turns) {
      yield m;
      continue;
    }
    const tail = held[0] === undefined ? undefined : batchOf(held[0]);
    const mine = batchOf(m);
    // A message of another batch (or none) ends the one held: its messages are contiguous.
    if (tail !== undefined && mine?.id !== tail.id) {
      yield* held;
      held = [];
    }
    if (mine === undefined || mine.commit) {
      yield* held;
      held = [];
      yield m;
    } else held.push(m);
  }
  const covered = range.toSeq < limit || last === undefined ? range.toSeq : last.seq;
  const end = held.length === 0 ? covered : wholeTurnEnd(turnSpanOf(last!.headers, last!.seq), covered, limit);
  if (end === covered) {
    yield* held;
    return covered;
  }
  const rest = await restOfTurn(source, range, what, batchOf(held[0]!)!.id, covered, end, stop);
  if (rest.found === "stopped") return covered;
  if (rest.found === "unheld") {
    for (const m of [...held, ...rest.messages]) unheld?.(m, new TurnUnheldError(m.subject, m.seq, end, rest.journalEnd));
    return covered;
  }
  yield* held;
  yield* rest.messages;
  return rest.end;
}

/** The server's batch a stored message is of (`Nats-Batch-Id`), and whether it is its commit; undefined for none. */
function batchOf(m: JsMsg): { readonly id: string; readonly commit: boolean } | undefined {
  let h: MsgHdrs | undefined;
  try {
    h = m.headers;
  } catch {
    return undefined; // a header block NATS.js cannot read names no batch
  }
  const id = h?.get(BatchHeaders.Id);
  return id ? { id, commit: h!.has(BatchHeaders.Commit) } : undefined;
}

/** What restOfTurn found: the turn's rest and where it ended; or that the journal does not hold what it says. */
type RestOfTurn =
  | { readonly found: "whole"; readonly messages: readonly JsMsg[]; readonly end: number }
  | { readonly found: "unheld"; readonly messages: readonly JsMsg[]; readonly journalEnd: number }
  | { readonly found: "stopped" };

/**
 * How many polls in a row may find the stream holding no more before a turn's claimed end
 * counts as unheld. A batch being committed is stored in one go (docs/scale.md, "Readers
 * during a commit"): its stream's last sequence moves on between two polls at least 250 ms
 * apart; two such intervals without a message stored, 750 ms, are no commit in progress.
 */
const STILL_POLLS = 2;

/**
 * Polls at most before a claimed end still not stored counts as unheld though the stream
 * grows (other sessions writing): 250 + 500 + 1,000 + 2,000 ms. A batch being committed is
 * stored in one go, far sooner; this bounds what a forged size costs a reader on a busy stream.
 */
const TURN_POLLS = 4;

/**
 * The rest of batch `batch` after `covered`, its writer saying it ends at `end`: reads what
 * the stream holds up to `end` as it is stored, and ends at the batch's commit, before a
 * message of the range not of the batch, or at `end`. Bound by what the journal holds: when
 * the stream's last sequence stays below `end` for STILL_POLLS polls, or still has not
 * reached it after TURN_POLLS, the batch is not being stored there: unheld.
 * `stop` aborted: stopped (the reader is gone).
 */
async function restOfTurn(source: JournalSource, range: JournalRange, what: string, batch: string, covered: number, end: number, stop: AbortSignal | undefined): Promise<RestOfTurn> {
  const signals = stop ? [source.reads.closed, stop] : [source.reads.closed];
  const messages: JsMsg[] = [];
  let read = covered;
  let before = -1;
  let still = 0;
  // Polls the stream answered: one it could not (a leader election) says nothing of the batch.
  let answered = 0;
  for (let attempt = 0; ; attempt++) {
    source.reads.check(what, covered);
    if (stop?.aborted) return { found: "stopped" };
    let at: number | undefined;
    try {
      at = await source.lastSeq(range.subjects);
    } catch (e) {
      const typed = consumerError(e, source.stream, what);
      if (isRefusal(typed) || attempt >= RETRY_MS.length) throw typed;
    }
    if (at !== undefined) {
      const upTo = Math.min(at, end);
      if (upTo > read) {
        for await (const m of readJournalRange(source, { ...range, from: { seq: read + 1 }, toSeq: upTo }, what)) {
          const of = batchOf(m);
          if (of?.id !== batch) return { found: "whole", messages, end: m.seq - 1 };
          messages.push(m);
          if (of.commit) return { found: "whole", messages, end: m.seq };
        }
        read = upTo;
      }
      if (read >= end) return { found: "whole", messages, end };
      still = at === before ? still + 1 : 0;
      before = at;
      if (still >= STILL_POLLS || ++answered > TURN_POLLS) return { found: "unheld", messages, journalEnd: at };
    }
    if (attempt >= RETRY_MS.length) return { found: "unheld", messages, journalEnd: at ?? read };
    await backoff(attempt, signals);
  }
}

async function* readOrdered(source: JournalSource, range: JournalRange, what: string): AsyncGenerator<JsMsg, void, undefined> {
  const push = source.journalReads === "push";
  let last = 0;
  for (let attempt = 0; ; attempt++) {
    // A bus closed while this read waited to open again: said as such, with where it stopped.
    if (attempt > 0) source.reads.check(what, last);
    const from = last > 0 ? { seq: last + 1 } : range.from;
    let opened: Awaited<ReturnType<typeof openOrdered>>;
    try {
      opened = await openOrdered(source, { ...range, from }, push, what);
    } catch (e) {
      // A first open's failure is the caller's (nothing yielded yet), unless the cluster said
      // it is unavailable for now (503: a leader being elected); a re-open mid-read (the
      // leader it lived on gone, a new one still being elected) is retried like a loss.
      if ((attempt === 0 && !unavailableForNow(e)) || isRefusal(e) || attempt >= RETRY_MS.length) throw e;
      await backoff(attempt);
      continue;
    }
    if (opened === undefined) return;
    const { consumer, messages } = opened;
    let pending = opened.pending;
    let moved = false;
    source.reads.add(messages);
    const stalled = watchStall(messages, 2 * PULL_EXPIRES_MS);
    try {
      stalled.waiting();
      for await (const m of messages) {
        stalled.got();
        // NATS.js recreated the consumer (a missed heartbeat, a restart), at the server's
        // choice of peer: its counts are not trusted; the rest is read again, placed anew.
        if (m.info.consumer !== consumer.name) {
          moved = true;
          break;
        }
        if (m.seq > range.toSeq) return;
        pending--;
        attempt = 0;
        yield m;
        last = m.seq;
        source.reads.check(what, last);
        if (lastOfRange(m, pending, range)) return;
        stalled.waiting();
      }
      moved ||= stalled.is;
      source.reads.check(what, last);
    } finally {
      stalled.end();
      source.reads.done(messages);
      messages.stop();
      await messages.close().catch(() => undefined);
      // Released now rather than at its inactivity timeout: the server limits consumers per stream.
      consumer.release();
    }
    if (!moved) return;
    if (attempt >= RETRY_MS.length) throw new SubscriptionError(`${what} failed: its consumer was recreated ${attempt} times without progress`);
    await backoff(attempt);
  }
}

/**
 * Stops a read whose consumer went quiet. Every read's consumer lives on the stream leader
 * (read-placement.ts), so a leader killed takes every read in flight; the server keeps the
 * consumer assigned to the dead peer, so NATS.js's consumer info times out again and again
 * and it never recreates it, nor (when the connection moved to another node) reports missed
 * heartbeats: the read waited for the node to come back. A read only asks for messages the
 * journal holds already, so a wait longer than `ms` (not counting the reader's own time with
 * a message) or missed heartbeats stop it, and the rest is read under a new consumer, placed
 * on the new leader. A false alarm costs one consumer: the rest starts after the last yielded.
 */
function watchStall(messages: ConsumerMessages, ms: number): { readonly is: boolean; waiting(): void; got(): void; end(): void } {
  // One timer for the whole read, not a pair per message: each wait only moves a deadline
  // (a number), and the timer, when it fires early, sleeps again until the deadline.
  let timer: ReturnType<typeof setTimeout> | undefined;
  let deadline = 0;
  let waiting = false;
  let ended = false;
  const stall = {
    is: false,
    waiting: () => {
      if (ended) return;
      waiting = true;
      deadline = performance.now() + ms;
      timer ??= setTimeout(check, ms);
    },
    got: () => {
      waiting = false;
    },
    end,
  };
  function check(): void {
    timer = undefined;
    if (!waiting || ended) return;
    const left = deadline - performance.now();
    if (left > 0) timer = setTimeout(check, left);
    else stop();
  }
  function stop(): void {
    stall.is = true;
    messages.stop();
  }
  function end(): void {
    ended = true;
    waiting = false;
    clearTimeout(timer);
    timer = undefined;
  }
  void (async () => {
    for await (const s of messages.status()) if (s.type === "heartbeats_missed") stop();
  })()
    .catch(() => undefined)
    .finally(end);
  return stall;
}

/** An ordered read's consumer: its name (NATS.js renames it when it recreates it) and its release. */
interface OrderedRead {
  readonly name: string;
  release(): void;
}

/**
 * Creates an ordered read's consumer on the stream leader (read-placement.ts) and counts
 * what matches from its start; undefined when nothing does.
 */
async function openOrdered(
  source: JournalSource,
  range: JournalRange,
  push: boolean,
  what: string,
): Promise<{ consumer: OrderedRead; pending: number; messages: ConsumerMessages } | undefined> {
  const { js, stream } = source;
  const opts: Partial<OrderedConsumerOptions> = {
    filter_subjects: range.subjects.length === 1 ? range.subjects[0]! : [...range.subjects],
    ...startAt(range.from),
  };
  if (range.headersOnly) opts.headers_only = true;
  try {
    // NATS.js creates the ordered consumer here (named, so on the create subject that
    // carries the filter, which per-session permissions can allow), and its creation
    // reply counts what matches from the start: the end of the read as the journal stood
    // when it began, and an empty range ends at once instead of waiting.
    const created = await placeOnLeader(
      async () => {
        // Each creation named here, so one whose answer is lost (a timeout while the meta
        // leader is busy or gone: the consumer may exist all the same) is deleted by name.
        const prefix = nuid.next();
        if (push) {
          const c = await js.consumers.getPushConsumer(stream, { ...opts, name_prefix: prefix, deliver_prefix: createInbox(source.inboxPrefix) });
          // A push consumer is paced by the server's flow control, not by pulls.
          return { prefix, info: await c.info(true), consume: () => c.consume(), delete: () => c.delete() };
        }
        const c = await js.consumers.get(stream, { ...opts, name_prefix: prefix }).catch((e: unknown) => {
          deleteInBackground(deleteByName(js, stream, `${prefix}_1`), source.reads.closed, CREATE_TIMEOUT_MS);
          throw e;
        });
        return { prefix, info: await c.info(true), consume: () => c.consume({ ...pullSize(range.batch, source.maxPayload()), expires: PULL_EXPIRES_MS }), delete: () => c.delete() };
      },
      // A push read has no DELETE grant to rely on: its consumer is left to expire.
      (c) => {
        if (!push) deleteInBackground(() => c.delete(), source.reads.closed);
        return Promise.resolve();
      },
      source.placement,
      what,
    );
    const { prefix, info: { name } } = created;
    let resets = 0;
    const release = (): void => {
      if (push) return;
      if (resets === 0) return deleteInBackground(() => created.delete(), source.reads.closed);
      // NATS.js replaced the consumer `resets` times (named <prefix>_2, _3, …), deleting each
      // one it replaced once, answered or not; the last one's creation may still be on its way.
      for (let n = 1; n <= resets + 1; n++) {
        deleteInBackground(deleteByName(js, stream, `${prefix}_${n}`), source.reads.closed, n === resets + 1 ? CREATE_TIMEOUT_MS : 0);
      }
    };
    const consumer: OrderedRead = { name, release };
    if (created.info.num_pending === 0) {
      consumer.release();
      return undefined;
    }
    try {
      const messages = await created.consume();
      void (async () => {
        for await (const s of messages.status()) if (s.type === "reset") resets++;
      })().catch(() => undefined);
      return { consumer, pending: created.info.num_pending, messages };
    } catch (e) {
      consumer.release();
      throw e;
    }
  } catch (e) {
    throw consumerError(e, stream, what);
  }
}

/**
 * A read under a pool name (the bus option `readConsumers`): one pull consumer, created
 * under a leased name (on the create subject that carries the filter, when there is one),
 * deleted when the read ends. It does what NATS.js's ordered consumer does, under the same
 * name: when its consumer is lost (a server restart, a delete) or a delivery skips one, it
 * creates the consumer again after the last message yielded. Attempts without progress are
 * bounded (RETRY_MS); a refusal fails at once.
 */
async function* readPooled(source: JournalSource, pool: ReadConsumerPool, range: JournalRange, what: string): AsyncGenerator<JsMsg, void, undefined> {
  const { js, stream } = source;
  const filter = range.subjects.length === 1 ? { filter_subject: range.subjects[0]! } : { filter_subjects: [...range.subjects] };
  const config = (from: JournalRange["from"]) => ({ ...filter, ...startAt(from), ...(range.headersOnly ? { headers_only: true } : {}) });
  let leased: Awaited<ReturnType<ReadConsumerPool["lease"]>>;
  try {
    leased = await pool.lease(config(range.from));
  } catch (e) {
    throw e instanceof ReadConsumersBusyError ? e : consumerError(e, stream, what);
  }
  const { lease } = leased;
  // Every creation under the leased name is placed on the stream leader; the lease's is the first.
  let created: ConsumerInfo | undefined = leased.info;
  const place = async (from: JournalRange["from"]): Promise<ConsumerInfo> => {
    const take = async (): Promise<{ info: ConsumerInfo }> => {
      const info = created ?? (await lease.create(config(from)));
      created = undefined;
      return { info };
    };
    try {
      // One misplaced is replaced by the next create (a fresh create id: deleted, created again).
      return (await placeOnLeader(take, async () => {}, source.placement, what)).info;
    } catch (e) {
      throw consumerError(e, stream, what);
    }
  };
  let last = 0;
  try {
    let info: ConsumerInfo | undefined = await place(range.from);
    for (let attempt = 0; ; attempt++) {
      if (info === undefined) {
        try {
          info = await place(last > 0 ? { seq: last + 1 } : range.from);
        } catch (e) {
          // A creation mid-read that fails (no leader answering yet: a 503, a timeout) is a loss like any.
          if (isRefusal(e) || attempt >= RETRY_MS.length) throw e;
          await backoff(attempt);
          source.reads.check(what, last);
          continue;
        }
      }
      let pending = info.num_pending;
      if (pending === 0) return;
      let messages: ConsumerMessages;
      try {
        messages = await js.consumers.getConsumerFromInfo(info).consume({ ...pullSize(range.batch, source.maxPayload()), expires: POOL_PULL_EXPIRES_MS, abort_on_missing_resource: true });
      } catch (e) {
        throw consumerError(e, stream, what);
      }
      source.reads.add(messages);
      let lost: unknown;
      // A deleted consumer: stop now rather than at the missed heartbeats.
      void (async () => {
        for await (const s of messages.status()) {
          if (s.type === "consumer_deleted" || s.type === "consumer_not_found") {
            lost = new Error(`the read's consumer ${lease.name} was ${s.type === "consumer_deleted" ? "deleted" : "not found"}`);
            messages.stop();
          }
        }
      })().catch(() => undefined);
      let done = false;
      let delivered = 0;
      const stalled = watchStall(messages, 2 * POOL_PULL_EXPIRES_MS);
      try {
        stalled.waiting();
        for await (const m of messages) {
          stalled.got();
          // A skipped delivery: recreate after the last one yielded rather than yield a gap.
          if (m.info.deliverySequence !== ++delivered) {
            lost = new Error(`the read's consumer ${lease.name} skipped a delivery`);
            break;
          }
          if (m.seq > range.toSeq) {
            done = true;
            break;
          }
          pending--;
          last = m.seq;
          attempt = 0;
          yield m;
          source.reads.check(what, last);
          if (lastOfRange(m, pending, range)) {
            done = true;
            break;
          }
          stalled.waiting();
        }
        if (stalled.is) lost ??= new Error(`the read's consumer ${lease.name} went quiet (its host gone?)`);
      } catch (e) {
        if (e instanceof ConnectionClosedError) throw e;
        const typed = consumerError(e, stream, what);
        if (isRefusal(typed)) throw typed;
        lost = e;
      } finally {
        stalled.end();
        source.reads.done(messages);
        messages.stop();
        await messages.close().catch(() => undefined);
      }
      if (done) return;
      source.reads.check(what, last);
      lost ??= new Error(`the read's consumer ${lease.name} stopped`);
      if (attempt >= RETRY_MS.length) throw new SubscriptionError(`${what} failed: ${(lost as Error).message ?? String(lost)}`, { cause: lost });
      await backoff(attempt);
      source.reads.check(what, last);
      // Created again at the loop's top.
      info = undefined;
    }
  } finally {
    await lease.release();
  }
}

/** Retries a journal operation across a leader election or a restart; refusals and a busy pool fail at once. */
export async function retryJournalRead<T>(op: () => Promise<T>, stopped: () => boolean, log: Logger): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await op();
    } catch (e) {
      // A busy read-consumer pool has waited its bound (waitMs) already.
      if (isRefusal(e) || e instanceof ReadConsumersBusyError || attempt >= RETRY_MS.length || stopped()) throw e;
      log.info({ attempt, reason: (e as Error).message }, "journal read failed; retrying");
      await backoff(attempt);
    }
  }
}
