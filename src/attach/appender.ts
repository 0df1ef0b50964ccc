/**
 * Appends one attached session's Go events to jetloop's journal, exactly once at any
 * delay. Each append carries the Go bytes unchanged, the event id as `Nats-Msg-Id`, the Go
 * sequence in `Jetloop-Go-Seq`, and a fence: the session's last journal sequence
 * (`Nats-Expected-Last-Subject-Sequence` on the session's journal subjects). The fence,
 * not the duplicate window, is what makes a retry, a restart or a second attach safe:
 * whatever another writer stored first, this append is refused and the journal is read
 * again (journal-position.ts).
 *
 * Event ids are unique per Go session, not across sessions (the recording itself holds
 * one id in two sessions), while the duplicate window is stream-wide: an id already
 * stored by another session is answered as a duplicate of that message. Such an answer is
 * read back; if the message is not this record, the append goes again without a message
 * id, still fenced.
 */
import { JetStreamApiError, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { headers } from "@nats-io/transport-node";
import { AttachError } from "../errors.js";
import { HEADER_GO_SEQ } from "./go-layout.js";
import { goSeqOf, journalPosition, type JournalPosition } from "./journal-position.js";

const WRONG_LAST_SEQUENCE = 10071;

export interface AppendTarget {
  /** The session's journal stream and its subjects there (`bus.journalOf(sessionId)`). */
  readonly stream: string;
  readonly sessionSubjects: string;
}

export type AppendOutcome = { readonly stored: true; readonly journalSeq: number; readonly collided: boolean } | { readonly stored: false; readonly position: JournalPosition };

export class SessionAppender {
  #position: JournalPosition;

  /** `js`: a JetStream client whose timeout is the append's ack wait. */
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly sessionId: string,
    private readonly target: AppendTarget,
    position: JournalPosition,
  ) {
    this.#position = position;
  }

  get position(): JournalPosition {
    return this.#position;
  }

  /** Reads the session's position from the journal again (after a refused fence, a restart). */
  async reread(): Promise<JournalPosition> {
    this.#position = await journalPosition(this.jsm, this.target.stream, this.target.sessionSubjects, this.sessionId);
    return this.#position;
  }

  /**
   * Appends the event of Go record `goSeq`. Resolves `stored` once the journal holds it
   * right behind the position; `stored: false` with the position read again when the
   * journal moved (another writer, or an earlier attempt of this one that was stored):
   * the caller resumes from that position.
   */
  async append(subject: string, bytes: Uint8Array, eventId: string, goSeq: number): Promise<AppendOutcome> {
    let withId = true;
    for (;;) {
      const h = headers();
      h.set(HEADER_GO_SEQ, String(goSeq));
      try {
        const ack = await this.js.publish(subject, bytes, {
          headers: h,
          ...(withId ? { msgID: eventId } : {}),
          expect: { streamName: this.target.stream, lastSubjectSequence: this.#position.journalSeq, lastSubjectSequenceSubject: this.target.sessionSubjects },
        });
        if (!ack.duplicate) {
          this.#position = { journalSeq: ack.seq, goSeq };
          return { stored: true, journalSeq: ack.seq, collided: !withId };
        }
        // A duplicate: the window holds this id. Ours only if it is this record of this session.
        const held = await this.jsm.streams.getMessage(this.target.stream, { seq: ack.seq });
        if (held && held.subject === subject && goSeqOf(held.header) === goSeq) {
          return { stored: false, position: await this.reread() };
        }
        withId = false;
      } catch (e) {
        if (e instanceof JetStreamApiError && e.code === WRONG_LAST_SEQUENCE) return { stored: false, position: await this.reread() };
        if (e instanceof JetStreamApiError && e.code !== 10054) throw new AttachError(this.sessionId, "refused", `the journal refused Go record ${goSeq}: ${e.message}`, { cause: e });
        throw e;
      }
    }
  }
}
