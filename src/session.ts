import type { BusContext } from "./bus-context.js";
import { answerGate, type AnswerOptions } from "./commands/answer.js";
import type { AnswerInput, AnswerOutcome } from "./commands/protocol.js";
import { OptionsError } from "./errors.js";
import { idProblem } from "./events/ids.js";
import type { Delivery } from "./subscribe/delivery.js";
import type { EventFilter } from "./subscribe/filter.js";
import type { SubscribeOptions } from "./subscribe/options.js";
import type { ReplayRequest } from "./subscribe/replay.js";
import type { DurableSubscription, Subscription } from "./subscribe/subscription.js";

/** What a session handle needs of the bus: its context, subscribing and replaying. */
export interface SessionBus<E> extends BusContext<E> {
  subscribeEvents(filter: EventFilter, options: SubscribeOptions & { durable: string }): Promise<DurableSubscription<E>>;
  subscribeEvents(filter: EventFilter, options?: SubscribeOptions): Promise<Subscription<E>>;
  replay(request?: ReplayRequest): AsyncGenerator<Delivery<E>, void, undefined>;
}

/** One session's view of the bus: `bus.session(id).subscribeEvents(filter)`. */
export class SessionHandle<E> {
  constructor(
    readonly bus: SessionBus<E>,
    readonly sessionId: string,
  ) {
    const problem = idProblem(sessionId);
    if (problem) throw new OptionsError("sessionId", `${JSON.stringify(sessionId)} ${problem}`);
  }

  subscribeEvents(filter: Omit<EventFilter, "sessions">, options: SubscribeOptions & { durable: string }): Promise<DurableSubscription<E>>;
  subscribeEvents(filter: Omit<EventFilter, "sessions">, options?: SubscribeOptions): Promise<Subscription<E>>;
  subscribeEvents(filter: Omit<EventFilter, "sessions">, options: SubscribeOptions = {}): Promise<Subscription<E>> {
    return this.bus.subscribeEvents({ ...filter, sessions: [this.sessionId] }, options);
  }

  /** Answers a gate of one of this session's loops (in the Go runtime's approval sequence, the subscriber's answer to the loop). */
  answer(loopId: string, answer: AnswerInput, options?: AnswerOptions): Promise<AnswerOutcome> {
    return answerGate(this.bus, this.sessionId, loopId, answer, options);
  }

  replay(request: Omit<ReplayRequest, "sessionId" | "sessions"> = {}): AsyncGenerator<Delivery<E>, void, undefined> {
    return this.bus.replay({ ...request, sessionId: this.sessionId });
  }
}
