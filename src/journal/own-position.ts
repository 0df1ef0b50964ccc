/**
 * A restricted user's journal position (the bus option `readConsumers`): read through a
 * consumer of her own pool on her own filter, never through the stream's info, whose
 * `subjects_filter: ">"` answers every subject of the stream (every session and loop id).
 */
import { DeliverPolicy } from "@nats-io/jetstream";
import type { Logger } from "pino";
import type { JournalPosition, JournalPositions, JournalState, Leadership } from "../streams/position.js";
import { permissionViolation } from "./consumer-errors.js";
import type { ReadConsumerPool } from "./read-consumers.js";
import { placeOnLeader } from "./read-placement.js";

/**
 * The journal's last sequence for a user confined to her own sessions (the bus option
 * `readConsumers`), read without the stream's info: a consumer of her pool on her own
 * filter, created at `DeliverPolicy.New` and deleted at once. The server starts such a
 * consumer after the stream's last sequence, whatever its filter, and reports that in its
 * info (`delivered.stream_seq`; measured on 2.10.27 and 2.15.1): the number the stream's
 * info would give, and nothing else of the stream: no subject, no count per subject, no
 * configuration. The create subject carries her filter, which her grant confines to her
 * session (deploy/nats/permissions.example.conf).
 *
 * Callers asking for the same filter before the read goes out share it. What this cannot
 * read: the stream's republish destination (undefined: a follower cannot check that the
 * stream republishes to the feed). The leader, on a replicated stream only (a consumer's
 * info names its host only there): asked once of the stream's info, where the user may read
 * it, and then the position's consumer is placed on the leader as a read's is (its count is
 * only the stream's there: journal/read-placement.ts); refused (the example grants a
 * follower no stream info), it is never asked again and neither her positions nor her reads
 * are placed (subscribe/README.md says what that costs).
 */
export class OwnFilterPosition implements JournalPositions {
  readonly #pool: ReadConsumerPool;
  /** The shard's whole journal filter: what a caller that names no subjects reads (a restricted user is refused it). */
  readonly #whole: string;
  readonly #stream: JournalPosition;
  readonly #log: Logger;
  readonly #next = new Map<string, Promise<JournalState>>();
  /** The stream's info was refused: the leader is not this user's to know. */
  #leaderRefused = false;

  constructor(pool: ReadConsumerPool, wholeShard: string, stream: JournalPosition, log: Logger) {
    this.#pool = pool;
    this.#whole = wholeShard;
    this.#stream = stream;
    this.#log = log;
  }

  state(subjects?: readonly string[]): Promise<JournalState> {
    const filter = positionFilter(subjects ?? [this.#whole]);
    let next = this.#next.get(filter);
    if (next === undefined) {
      // The read starts in a microtask: whoever asks for this filter before then joins it.
      next = Promise.resolve().then(async () => {
        this.#next.delete(filter);
        const placed = await placeOnLeader(
          () => this.#pool.lease({ filter_subject: filter, deliver_policy: DeliverPolicy.New }),
          (c) => c.lease.release(),
          { leader: () => this.leader(), log: this.#log },
          "reading the journal's position",
        );
        try {
          return { lastSeq: placed.info.delivered.stream_seq, streamRead: false, republishDest: undefined, leader: undefined };
        } finally {
          await placed.lease.release();
        }
      });
      this.#next.set(filter, next);
    }
    return next;
  }

  async leader(): Promise<Leadership | undefined> {
    if (this.#leaderRefused) return undefined;
    try {
      return await this.#stream.leader();
    } catch (e) {
      if (permissionViolation(e) === undefined) throw e;
      this.#leaderRefused = true;
      return undefined;
    }
  }
}

/**
 * One filter subject covering every subject of `subjects`, no wider than their common
 * tokens: the subject itself when there is one, else their longest common literal prefix
 * followed by ">" (a session's subjects give `<prefix>.<session>.>`, which a follower's
 * grant on her session covers). Several subjects with no common token give ">".
 */
export function positionFilter(subjects: readonly string[]): string {
  if (subjects.length === 0) return ">";
  const first = subjects[0]!;
  if (subjects.every((s) => s === first)) return first;
  const split = subjects.map((s) => s.split("."));
  const common: string[] = [];
  for (let i = 0; ; i++) {
    const t = split[0]![i];
    // Every subject needs a token after the prefix for ">" to match it: stop one short of the shortest.
    if (t === undefined || t === "*" || t === ">" || split.some((s) => s.length <= i + 1 || s[i] !== t)) break;
    common.push(t);
  }
  return common.length === 0 ? ">" : `${common.join(".")}.>`;
}
