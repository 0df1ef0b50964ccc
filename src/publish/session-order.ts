import { PublishOrderError } from "../errors.js";

/**
 * The order check of one session's appends, handed their outcomes in call order: each
 * stored append must lie above every earlier one of the session, else it is refused
 * (PublishOrderError names both). A duplicate on its first attempt was stored before the
 * call, its place decided then: it is neither checked nor a bound for later ones.
 */
export class SessionOrder {
  #lastSeq = 0;
  #lastEventId = "";

  constructor(readonly sessionId: string) {}

  /** Undefined when `eventId`, stored at `seq`, keeps the session's order; else the error. */
  next(eventId: string, seq: number, duplicateOnFirstAttempt: boolean): PublishOrderError | undefined {
    if (duplicateOnFirstAttempt) return undefined;
    if (seq < this.#lastSeq) return new PublishOrderError(this.sessionId, eventId, seq, this.#lastEventId, this.#lastSeq);
    this.#lastSeq = seq;
    this.#lastEventId = eventId;
    return undefined;
  }
}
