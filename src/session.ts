/** A session handle (`bus.session(id)`): the package exports the interface; the class stays here. */
import type { BusContext } from "./bus-context.js";
import { answerGate, type AnswerOptions } from "./commands/answer.js";
import type { AnswerInput, AnswerOutcome } from "./commands/protocol.js";
import { type ControlOptions, type ControlResult, interruptSession, submitInput } from "./commands/controls-client.js";
import { type ControlHandlers, type ControlServer, serveControls } from "./commands/controls-server.js";
import type { ContentBlock } from "./events/content.js";
import { OptionsError } from "./errors.js";
import { idProblem } from "./events/ids.js";
import type { Delivery } from "./sources/delivery.js";
import type { EventFilter } from "./sources/filter.js";
import type { SubscribeOptions } from "./sources/options.js";
import { replay, type ReplayOptions } from "./subscribe/replay.js";
import { type DurableSubscription, subscribe, type Subscription } from "./subscribe/subscription.js";

/** One session's view of the bus (`bus.session(id)`): its filters carry no `sessions`, the handle fixes it. */
export interface SessionHandle<E> {
  readonly sessionId: string;
  /** A durable subscription to this session's events (`bus.subscribeEvents` with the session fixed). */
  subscribeEvents(filter: Omit<EventFilter, "sessions">, options: SubscribeOptions & { durable: string }): Promise<DurableSubscription<E>>;
  /** A feed subscription to this session's events (`bus.subscribeEvents` with the session fixed). */
  subscribeEvents(filter: Omit<EventFilter, "sessions">, options?: SubscribeOptions): Promise<Subscription<E>>;
  /** This session's part of the journal that `filter` selects, `fromSeq` to `toSeq`, in order; then it ends. */
  replay(filter: Omit<EventFilter, "sessions">, options?: ReplayOptions): AsyncGenerator<Delivery<E>, void, undefined>;
  /** Answers a gate of one of this session's loops (in the Go runtime's approval sequence, the subscriber's answer to the loop). */
  answer(loopId: string, answer: AnswerInput, options?: AnswerOptions): Promise<AnswerOutcome>;
  /** Submits human-authored input to the session's actor (Go's Session.Submit); the command id identifies it (`{ ok: true, commandId }`). */
  submitInput(blocks: ContentBlock[], options?: ControlOptions): Promise<ControlResult<object>>;
  /** Interrupts the session's in-flight turns (Go's Session.Interrupt): `{ ok: true, interrupted }`. */
  interrupt(options?: Omit<ControlOptions, "fingerprint">): Promise<ControlResult<{ readonly interrupted: boolean }>>;
  /**
   * The session actor's side: serves input and interrupt for this session, each command id
   * handled once (a repeat gets the first outcome). One server per session.
   */
  serveControls(handlers: ControlHandlers): Promise<ControlServer>;
}

/** A session handle over a bus's context; throws OptionsError for a malformed session id. */
export function sessionHandle<E>(bus: BusContext<E>, sessionId: string): SessionHandle<E> {
  return new SessionHandleImpl(bus, sessionId);
}

class SessionHandleImpl<E> implements SessionHandle<E> {
  readonly #bus: BusContext<E>;

  constructor(
    bus: BusContext<E>,
    readonly sessionId: string,
  ) {
    const problem = idProblem(sessionId);
    if (problem) throw new OptionsError("sessionId", `${JSON.stringify(sessionId)} ${problem}`);
    this.#bus = bus;
  }

  subscribeEvents(filter: Omit<EventFilter, "sessions">, options: SubscribeOptions & { durable: string }): Promise<DurableSubscription<E>>;
  subscribeEvents(filter: Omit<EventFilter, "sessions">, options?: SubscribeOptions): Promise<Subscription<E>>;
  subscribeEvents(filter: Omit<EventFilter, "sessions">, options: SubscribeOptions = {}): Promise<Subscription<E>> {
    return subscribe(this.#bus, this.#scoped(filter), options);
  }

  replay(filter: Omit<EventFilter, "sessions">, options?: ReplayOptions): AsyncGenerator<Delivery<E>, void, undefined> {
    return replay(this.#bus, this.#scoped(filter), options);
  }

  answer(loopId: string, answer: AnswerInput, options?: AnswerOptions): Promise<AnswerOutcome> {
    return answerGate(this.#bus, this.sessionId, loopId, answer, options);
  }

  submitInput(blocks: ContentBlock[], options?: ControlOptions): Promise<ControlResult<object>> {
    return submitInput(this.#bus, this.sessionId, blocks, options);
  }

  interrupt(options?: Omit<ControlOptions, "fingerprint">): Promise<ControlResult<{ readonly interrupted: boolean }>> {
    return interruptSession(this.#bus, this.sessionId, options);
  }

  serveControls(handlers: ControlHandlers): Promise<ControlServer> {
    return serveControls(this.#bus, this.sessionId, handlers);
  }

  #scoped(filter: Omit<EventFilter, "sessions">): EventFilter {
    return { ...filter, sessions: [this.sessionId] };
  }
}
