/**
 * Where a journal read's consumer lives. The server places the R1 consumer of a read on a
 * random online peer of a replicated stream, and a replica answers from its own store: one
 * still catching up (restarted, or back from a partition) counts and delivers only what it
 * holds, so a read there ends early and calls the rest of its range empty. Measured on a
 * three-node cluster right after a replica's restart: 78 of 1,165 consumers created counted
 * short, one of them on a replica the leader reported current. A read that ends by its
 * consumer's counts is therefore only trusted on the stream's leader: a consumer placed
 * elsewhere is discarded and created again, each time placed at random, so a read on R3 takes
 * about three creations. A single server, or a stream of one replica, needs no check.
 */
import type { ConsumerInfo } from "@nats-io/jetstream";
import type { Logger } from "pino";
import { SubscriptionError } from "../errors.js";
import type { Leadership } from "../streams/position.js";

/**
 * How often a read on a healthy cluster may give up: each creation lands on the leader with
 * chance 1/peers, so k misplacements in a row happen with (1 - 1/peers)^k. A fixed 24 was
 * once in 17,000 reads on R3 and once in 200 on R5: a replay failing for nothing each day.
 */
export const PLACEMENT_FAILURE = 1e-9;

/** Creations of one read's consumer before it gives up (a typed error the caller's retry takes): 52 on R3, 93 on R5. */
export function placementAttempts(peers: number): number {
  return peers <= 1 ? 1 : Math.ceil(Math.log(PLACEMENT_FAILURE) / Math.log(1 - 1 / peers));
}


/** The stream's leadership; undefined for a stream not replicated. */
export type StreamLeader = () => Promise<Leadership | undefined>;

/** What a placement asks and tells: the stream leader, and where a misplaced consumer is logged (debug). */
export interface PlacementDeps {
  readonly leader: StreamLeader;
  readonly log: Logger;
}

/** What the debug log says of a consumer placed off the leader. */
export const REPLACED = "a journal read's consumer was placed on a replica; creating it again";

/** A consumer just created, as a placement sees it. */
export interface Placed {
  readonly info: Pick<ConsumerInfo, "name" | "cluster">;
}

/**
 * Creates a read's consumer until it lives on the stream leader. `discard` gets each one
 * placed elsewhere (deleted, or left to expire where the caller may not delete). Refuses
 * with SubscriptionError after placementAttempts(peers); a refusal of `create`, or a failed
 * leader read, propagates as is (the consumer just created discarded first).
 */
export async function placeOnLeader<T extends Placed>(create: () => Promise<T>, discard: (c: T) => Promise<void>, deps: PlacementDeps, what: string): Promise<T> {
  let host: string | undefined;
  let lead: Leadership | undefined;
  let attempt = 1;
  for (; ; attempt++) {
    const c = await create();
    // Not clustered: the consumer's info has no cluster part, and the one store is the stream's.
    host = c.info.cluster?.leader;
    if (host === undefined) return c;
    try {
      lead = await deps.leader();
    } catch (e) {
      // Not left to its inactivity timeout: the server limits consumers per stream.
      await discard(c);
      throw e;
    }
    if (lead === undefined || host === lead.name) return c;
    deps.log.debug({ read: what, consumer: c.info.name, host, leader: lead.name, attempt }, REPLACED);
    await discard(c);
    if (attempt >= placementAttempts(lead.peers)) break;
  }
  throw new SubscriptionError(`${what}: its consumer was placed on a replica (${host}) instead of the stream leader (${lead?.name || "none elected"}) ${attempt} times`);
}
