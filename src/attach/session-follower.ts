/**
 * One attached Go session: its ledger read in order from the attach's cursor (where the
 * journal says it stands), each record resolved (record.ts) and appended, kept out or
 * parked, then followed. Its faults are its own: an unreadable record is parked and the
 * session goes on; a Go side or journal that cannot be reached is retried with a backoff;
 * a journal holding events no attach wrote stops this session alone.
 */
import type { JetStreamClient, JetStreamManager, StoredMsg } from "@nats-io/jetstream";
import { validEventSubject, type JournalShard } from "../subjects/subjects.js";
import { AttachError, GoRecordError, isJetloopError } from "../errors.js";
import type { EventRegistry } from "../events/registry.js";
import type { ParkInput } from "../parking/parked-entry.js";
import { SessionAppender } from "./appender.js";
import { messageFrom } from "./blobs.js";
import { goStreamName, goSubject } from "./go-layout.js";
import { journalPosition } from "./journal-position.js";
import { resolveRecord } from "./record.js";
import type { Slots } from "./slots.js";
import { recordAttachError, recordAttachRecord } from "../telemetry/metrics.js";

/** What the attach reports as it goes (options.onReport). */
export type AttachReport =
  | { readonly kind: "session"; readonly sessionId: string; readonly via: DiscoveredVia }
  | { readonly kind: "parked"; readonly sessionId: string; readonly goSeq: number; readonly error: GoRecordError }
  | { readonly kind: "collision"; readonly sessionId: string; readonly goSeq: number; readonly eventId: string }
  | { readonly kind: "error"; readonly sessionId?: string | undefined; readonly error: Error }
  | { readonly kind: "stopped"; readonly sessionId: string; readonly error: AttachError }
  | { readonly kind: "role"; readonly role: "active" | "standby" };

/** How an attach found a Go session: its catalog entry, its stream listed, a stream-created advisory, or an append seen on its subject. */
export type DiscoveredVia = "catalog" | "stream" | "advisory" | "subject";

/** Where an attach stands with one Go session (exported as `AttachedSessionState`): starting, catching up, following, retrying after an error, or stopped. */
export type SessionState = "starting" | "catching_up" | "following" | "retrying" | "stopped";

/** One session's figures (attach.sessions(), the CLI's status). */
export interface AttachedSession {
  readonly sessionId: string;
  readonly via: DiscoveredVia;
  readonly state: SessionState;
  /** The highest Go sequence seen of the session's ledger (its stream's last sequence as last read). */
  readonly goLastSeq: number;
  /** The Go sequence of the last record handled (appended, kept out or parked). */
  readonly goSeq: number;
  /** Go sequences not yet handled: `goLastSeq - goSeq`. */
  readonly lag: number;
  readonly journalSeq: number;
  readonly appended: number;
  readonly keptOut: number;
  readonly parked: number;
  readonly lastError?: string | undefined;
}

export interface FollowerDeps {
  readonly jsm: JetStreamManager;
  readonly js: JetStreamClient;
  readonly namespace: string;
  readonly registry: EventRegistry<unknown>;
  readonly maxEventBytes: number;
  /** The attach or its connection is closed: nothing to retry. */
  readonly isClosed: () => boolean;
  readonly journalOf: (sessionId: string) => { readonly stream: string; readonly subject: string; readonly shard: JournalShard };
  readonly park: (p: ParkInput) => Promise<void>;
  readonly report: (r: AttachReport) => void;
  readonly slots: Slots;
  /** How long a caught-up session waits for a wake-up before it looks at its ledger again. */
  readonly pollMs: number;
}

/** The durable name parked records of Go session `sessionId` are kept under (`jetloop parked list go-<uuid>`). */
export function parkedOwner(sessionId: string): string {
  return `go-${sessionId}`;
}

const MAX_BACKOFF_MS = 30_000;

export class SessionFollower {
  #state: SessionState = "starting";
  #goLastSeq = 0;
  #goSeq = 0;
  #journalSeq = 0;
  #appended = 0;
  #keptOut = 0;
  #parked = 0;
  #lastError: string | undefined;
  #closed = false;
  #wake: (() => void) | undefined;
  #woken = false;
  readonly done: Promise<void>;

  constructor(
    private readonly deps: FollowerDeps,
    readonly sessionId: string,
    readonly via: DiscoveredVia,
  ) {
    this.done = this.#run();
  }

  figures(): AttachedSession {
    return {
      sessionId: this.sessionId,
      via: this.via,
      state: this.#state,
      goLastSeq: this.#goLastSeq,
      goSeq: this.#goSeq,
      lag: Math.max(0, this.#goLastSeq - this.#goSeq),
      journalSeq: this.#journalSeq,
      appended: this.#appended,
      keptOut: this.#keptOut,
      parked: this.#parked,
      ...(this.#lastError === undefined ? {} : { lastError: this.#lastError }),
    };
  }

  /** The Go ledger has (at least) `lastSeq` records: look again now. */
  seen(lastSeq?: number): void {
    if (lastSeq !== undefined && lastSeq > this.#goLastSeq) this.#goLastSeq = lastSeq;
    this.#woken = true;
    this.#wake?.();
  }

  /** Handled everything the ledger held when last looked at. */
  get caughtUp(): boolean {
    return this.#state === "stopped" || (this.#state === "following" && this.#goSeq >= this.#goLastSeq);
  }

  close(): Promise<void> {
    this.#closed = true;
    this.#wake?.();
    return this.done;
  }

  async #sleep(ms: number): Promise<void> {
    if (this.#closed) return;
    if (this.#woken) {
      this.#woken = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
    this.#wake = undefined;
    this.#woken = false;
  }

  /** Parks a record before the cursor moves past it: one that could not be parked is tried again, never skipped. */
  async #park(goSeq: number, subject: string, data: Uint8Array, error: GoRecordError): Promise<void> {
    await this.deps.park({ durable: parkedOwner(this.sessionId), journalSeq: goSeq, subject, data, deliveryCount: 1, reason: "poison", errorCode: error.code, errorMessage: error.message });
    this.#parked++;
    recordAttachRecord("parked");
    this.deps.report({ kind: "parked", sessionId: this.sessionId, goSeq, error });
  }

  async #run(): Promise<void> {
    const { jsm } = this.deps;
    const home = this.deps.journalOf(this.sessionId);
    const stream = goStreamName(this.sessionId);
    const subject = goSubject(this.sessionId);
    let appender: SessionAppender | undefined;
    let next = 1;
    let backoff = 250;
    while (!this.#closed) {
      try {
        if (appender === undefined) {
          const position = await journalPosition(jsm, home.stream, home.subject, this.sessionId);
          appender = new SessionAppender(this.deps.js, jsm, this.sessionId, { stream: home.stream, sessionSubjects: home.subject }, position);
          this.#goSeq = position.goSeq;
          this.#journalSeq = position.journalSeq;
          next = position.goSeq + 1;
          this.#state = "catching_up";
        }
        const release = await this.deps.slots.take();
        let drained = false;
        // The next record is asked for while this one is appended (appends go one at a time,
        // each fenced on the one before; reads need not wait for them): one round trip a
        // record instead of two. A read ahead of where the loop resumes is dropped.
        let ahead: { readonly seq: number; readonly got: Promise<StoredMsg | null> } | undefined;
        const read = (seq: number) => messageFrom(jsm, stream, { seq, next_by_subj: subject });
        try {
          while (!this.#closed) {
            const got = ahead?.seq === next ? ahead.got : read(next);
            ahead = undefined;
            const m = await got;
            if (m === null) {
              drained = true;
              break;
            }
            ahead = { seq: m.seq + 1, got: read(m.seq + 1) };
            // Its failure is seen when (and if) it is awaited.
            ahead.got.catch(() => undefined);
            if (m.seq > this.#goLastSeq) this.#goLastSeq = m.seq;
            const outcome = await resolveRecord({ sessionId: this.sessionId, jsm, registry: this.deps.registry, maxEventBytes: this.deps.maxEventBytes }, m.seq, m.data);
            if (outcome.kind === "kept_out") {
              this.#keptOut++;
              recordAttachRecord("kept_out");
            } else if (outcome.kind === "unreadable") {
              await this.#park(m.seq, subject, m.data, outcome.error);
            } else {
              const family = this.deps.registry.get(outcome.event.type)?.family;
              if (family === undefined) throw new AttachError(this.sessionId, "refused", `event type ${outcome.event.type} has no family in the registry`);
              const journalSubject = validEventSubject(this.deps.namespace, "journal", { sessionId: this.sessionId, loopId: outcome.event.loopId, family, type: outcome.event.type }, home.shard);
              let r;
              try {
                r = await appender.append(journalSubject, outcome.bytes, outcome.event.eventId, m.seq);
              } catch (e) {
                if (!tooLarge(e)) throw e;
                // The server takes no message this size (its max_payload or the stream's max_msg_size): the record's own fault.
                const error = new GoRecordError(this.sessionId, m.seq, "event", `the event ${outcome.event.eventId} is larger than the journal takes: ${(e as Error).message}`, { cause: e });
                await this.#park(m.seq, subject, m.data, error);
                this.#goSeq = m.seq;
                next = m.seq + 1;
                continue;
              }
              if (!r.stored) {
                // The journal moved (an earlier attempt stored, or another attach): resume from it.
                this.#journalSeq = r.position.journalSeq;
                this.#goSeq = r.position.goSeq;
                next = r.position.goSeq + 1;
                continue;
              }
              if (r.collided) this.deps.report({ kind: "collision", sessionId: this.sessionId, goSeq: m.seq, eventId: outcome.event.eventId });
              this.#appended++;
              recordAttachRecord("appended");
              this.#journalSeq = r.journalSeq;
            }
            this.#goSeq = m.seq;
            next = m.seq + 1;
          }
        } finally {
          release();
        }
        backoff = 250;
        if (drained) {
          this.#state = "following";
          await this.#sleep(this.deps.pollMs);
        }
      } catch (e) {
        if (e instanceof AttachError && e.reason === "foreign") {
          this.#state = "stopped";
          this.#lastError = e.message;
          this.deps.report({ kind: "stopped", sessionId: this.sessionId, error: e });
          return;
        }
        if (this.#closed || this.deps.isClosed()) return;
        this.#state = "retrying";
        recordAttachError();
        this.#lastError = (e as Error).message;
        this.deps.report({ kind: "error", sessionId: this.sessionId, error: e as Error });
        // Read the journal's position again: an append may have been stored unanswered.
        appender = undefined;
        await this.#sleep(backoff);
        backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
      }
    }
  }
}

/** A refusal by size: the client's max_payload check, or the stream's max_msg_size (10054). */
function tooLarge(e: unknown): boolean {
  if (isJetloopError(e, "MESSAGE_TOO_LARGE")) return true;
  const code = (e as { code?: unknown }).code;
  return code === 10054 || /max_payload|maximum payload|message size exceeds/i.test((e as Error).message ?? "");
}
