import type { Jetloop } from "./bus.js";
import { OptionsError } from "./errors.js";
import { isCanonicalUuid } from "./events/ids.js";
import type { Delivery } from "./subscribe/delivery.js";
import type { EventFilter } from "./subscribe/filter.js";
import type { SubscribeOptions } from "./subscribe/options.js";
import type { ReplayRequest } from "./subscribe/replay.js";
import type { DurableSubscription, Subscription } from "./subscribe/subscription.js";

/** One session's view of the bus: `bus.session(id).subscribeEvents(filter)`. */
export class SessionHandle<E> {
  constructor(
    readonly bus: Jetloop<E>,
    readonly sessionId: string,
  ) {
    if (!isCanonicalUuid(sessionId)) throw new OptionsError("sessionId", `${JSON.stringify(sessionId)} is not a canonical lowercase UUID`);
  }

  subscribeEvents(filter: Omit<EventFilter, "sessions">, options: SubscribeOptions & { durable: string }): Promise<DurableSubscription<E>>;
  subscribeEvents(filter: Omit<EventFilter, "sessions">, options?: SubscribeOptions): Promise<Subscription<E>>;
  subscribeEvents(filter: Omit<EventFilter, "sessions">, options: SubscribeOptions = {}): Promise<Subscription<E>> {
    return this.bus.subscribeEvents({ ...filter, sessions: [this.sessionId] }, options);
  }

  replay(request: Omit<ReplayRequest, "sessionId" | "sessions"> = {}): AsyncGenerator<Delivery<E>, void, undefined> {
    return this.bus.replay({ ...request, sessionId: this.sessionId });
  }
}
