/**
 * `bus.parked`, the parked capability as users reach it: the namespace's parked store,
 * opened over the bus's connection, whose refusals by the server's permissions are typed.
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { permissionRefusal } from "../journal/consumer-errors.js";
import { defaultParkedStreamName } from "../streams/declared.js";
import { type Parked, ParkedStore } from "./parked-store.js";

/** The namespace's parked store (`streams/parked.json`), over the bus's connection. */
export function openParkedStore(nc: NatsConnection, jsm: () => Promise<JetStreamManager>, settings: { readonly namespace: string; readonly shards: number }): ParkedStore {
  return new ParkedStore(nc, jsm, settings.namespace, defaultParkedStreamName(settings.namespace), settings.shards);
}

/**
 * `bus.parked` as users reach it: a refusal by the server's permissions (a follower naming a
 * durable that is not hers) is a PermissionDeniedError, as on every other path.
 */
export function refusalsTyped(store: ParkedStore): Parked {
  const typed =
    <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
    (...a: A): Promise<R> =>
      f(...a).catch((e: unknown) => {
        throw permissionRefusal(e);
      });
  return {
    namespace: store.namespace,
    stream: store.stream,
    park: typed((p) => store.park(p)),
    list: typed((d) => store.list(d)),
    show: typed((d, s, k) => store.show(d, s, k)),
    counts: typed((k) => store.counts(k)),
    drop: typed((d, s) => store.drop(d, s)),
    replay: typed((d, s) => store.replay(d, s)),
  };
}
