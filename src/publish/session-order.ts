import { PublishOrderError } from "../errors.js";

/**
 * The order check of one session's appends, handed their outcomes in call order: each
 * stored append must lie above every earlier one of the session, else it is refused
 * (PublishOrderError names both). A duplicate that kept its place (on its first attempt, or
 * with no refusal of it or of an append ahead of it in its lane since it was first sent:
 * journal-writer.ts) is a copy stored before the call, or by this call in order: it is
 * neither checked nor a bound for later ones (nothing behind it can be stored below it).
 */
export class SessionOrder {
  #lastSeq = 0;
  #lastEventId = "";

  constructor(readonly sessionId: string) {}

  /** Undefined when `eventId`, stored at `seq`, keeps the session's order; else the error. */
  next(eventId: string, seq: number, storedBeforeCall: boolean): PublishOrderError | undefined {
    if (storedBeforeCall) return undefined;
    if (seq < this.#lastSeq) return new PublishOrderError(this.sessionId, eventId, seq, this.#lastEventId, this.#lastSeq);
    this.#lastSeq = seq;
    this.#lastEventId = eventId;
    return undefined;
  }
}
