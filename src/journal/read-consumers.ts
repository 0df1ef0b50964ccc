/**
 * A per-user pool of consumer names for journal reads (the bus option `readConsumers`):
 * `{prefix}_0` … `{prefix}_{size-1}`. A follower's permissions then name exactly these
 * consumers (create with her session's filter, pull, info, delete: each a literal name),
 * so no grant of hers reaches a service's durable or another user's read — the create
 * subject's name token is no longer left free (deploy/nats/permissions.example.conf).
 *
 * A read leases one name in this process (waiting, bounded, for one to be freed), creates
 * its consumer with the create action (never create-or-update) marked with this pool's
 * owner id, and deletes it when it ends. A name found taken on the server is ours and stale
 * (a delete that failed: deleted and created again) or another process's under the same
 * prefix (left alone: it is never deleted or updated, the read tries another name and
 * fails typed, READ_CONSUMERS_BUSY, when none frees up in time; names held elsewhere are
 * tried again every BUSY_POLL_MS, never in a tight loop). A stale consumer of a process that
 * died expires by itself after INACTIVE_MS. A lease deletes on release only a consumer it
 * created (or, after a failed create, one its process owns): never one another process took
 * the name for after this lease's was lost. One window is left: a lease whose consumer was
 * lost and re-created by another process before this read ended without creating again
 * deletes the other's; that read then creates its consumer again (a lost consumer).
 */
import { AckPolicy, type ConsumerConfig, type ConsumerInfo, JetStreamApiError, type JetStreamManager } from "@nats-io/jetstream";
import { nanos, nuid } from "@nats-io/nats-core";
import { ReadConsumersBusyError } from "../errors.js";

/** The bus option, checked (src/connection/options.ts). */
export interface ReadConsumersSettings {
  readonly prefix: string;
  readonly size: number;
  readonly waitMs: number;
}

/** A pool consumer without pulls for this long is removed by the server (a read pulls every 2 s at most). */
export const INACTIVE_MS = 15_000;

/** Between attempts at names held by another process. */
const BUSY_POLL_MS = 500;

/** The consumer-metadata key carrying the pool's owner id. */
export const OWNER_KEY = "jetloop_read_owner";

/**
 * The consumer-metadata key carrying one create's own id. The create action returns an
 * existing consumer whose config equals the request's: a stale one of this pool left by the
 * same read (a release whose delete failed) would be handed back with its deliveries spent.
 * A fresh id per create makes every create differ, so a stale one is replaced instead.
 */
export const CREATE_KEY = "jetloop_read_create";

/** JetStream API error codes for "that name is taken" (differing config; 2.10 and 2.11+). */
const NAME_TAKEN = new Set([10148, 10013]);

/** Pool names for a prefix, in order. */
export function readConsumerNames(s: Pick<ReadConsumersSettings, "prefix" | "size">): string[] {
  return Array.from({ length: s.size }, (_, i) => `${s.prefix}_${i}`);
}

/** A leased name: create its consumer (again, after a loss), and give it back. */
export interface ReadLease {
  readonly name: string;
  /** Creates the read's consumer under the name; a stale one of this pool is replaced. */
  create(config: Partial<ConsumerConfig>): Promise<ConsumerInfo>;
  /** Deletes the consumer (best effort) and frees the name. */
  release(): Promise<void>;
}

export class ReadConsumerPool {
  readonly #settings: ReadConsumersSettings;
  readonly #stream: string;
  readonly #jsm: () => Promise<JetStreamManager>;
  /** This pool's id on the server: tells its own stale consumers from another process's. */
  readonly owner = nuid.next();
  readonly #free: string[];
  readonly #waiters: ((name: string) => void)[] = [];

  constructor(settings: ReadConsumersSettings, stream: string, jsm: () => Promise<JetStreamManager>) {
    this.#settings = settings;
    this.#stream = stream;
    this.#jsm = jsm;
    this.#free = readConsumerNames(settings);
  }

  /**
   * Leases a name whose consumer this process can create, waiting up to `waitMs` for one
   * (in this process, or held on the server by another); the consumer is created with
   * `config` (filter, start) before the lease is returned.
   */
  async lease(config: Partial<ConsumerConfig>): Promise<{ lease: ReadLease; info: ConsumerInfo }> {
    const deadline = Date.now() + this.#settings.waitMs;
    // Names found held elsewhere since the last pause, and ever in this lease (the error's count).
    const foreign = new Set<string>();
    const seen = new Set<string>();
    for (;;) {
      const name = await this.#take(deadline, seen.size);
      const lease = this.#leaseOf(name);
      try {
        const info = await lease.create(config);
        return { lease, info };
      } catch (e) {
        this.#give(name);
        if (!(e instanceof NameHeldElsewhere)) throw e;
        foreign.add(name);
        seen.add(name);
        if (Date.now() >= deadline) throw this.#busy(seen.size);
        // Every name free in this process was tried and is held elsewhere (the others, if
        // any, are this process's reads): wait before trying again, never in a tight loop.
        if (this.#free.every((n) => foreign.has(n))) {
          await sleep(Math.min(BUSY_POLL_MS, deadline - Date.now()));
          foreign.clear();
        }
      }
    }
  }

  /** The next free name in this process; waits for one until the deadline. */
  async #take(deadline: number, heldElsewhere: number): Promise<string> {
    const name = this.#free.shift();
    if (name !== undefined) return name;
    const left = deadline - Date.now();
    if (left <= 0) throw this.#busy(heldElsewhere);
    return new Promise<string>((resolve, reject) => {
      const waiter = (n: string) => {
        clearTimeout(timer);
        resolve(n);
      };
      const timer = setTimeout(() => {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        reject(this.#busy(heldElsewhere));
      }, left);
      this.#waiters.push(waiter);
    });
  }

  #give(name: string): void {
    const waiter = this.#waiters.shift();
    if (waiter) waiter(name);
    else this.#free.push(name);
  }

  #busy(heldElsewhere: number): ReadConsumersBusyError {
    const { prefix, size, waitMs } = this.#settings;
    return new ReadConsumersBusyError(prefix, size, waitMs, heldElsewhere);
  }

  #leaseOf(name: string): ReadLease {
    const stream = this.#stream;
    let released = false;
    // Whether the name's consumer on the server is this lease's: "theirs" once another
    // process was found holding it, so that the release never deletes the other's consumer.
    let holder: "ours" | "theirs" | "unknown" = "unknown";
    const create = async (config: Partial<ConsumerConfig>): Promise<ConsumerInfo> => {
      const jsm = await this.#jsm();
      const full: Partial<ConsumerConfig> = {
        ...config,
        name,
        ack_policy: AckPolicy.None,
        inactive_threshold: nanos(INACTIVE_MS),
        num_replicas: 1,
        mem_storage: true,
        metadata: { [OWNER_KEY]: this.owner, [CREATE_KEY]: nuid.next() },
      };
      holder = "unknown";
      for (let replaced = false; ; replaced = true) {
        try {
          // The create action: an existing consumer of this name is never updated.
          const info = await jsm.consumers.add(stream, full);
          holder = "ours";
          return info;
        } catch (e) {
          if (replaced || !(e instanceof JetStreamApiError) || !NAME_TAKEN.has(e.code)) throw e;
          const held = await jsm.consumers.info(stream, name).catch(() => undefined);
          if (held && held.config.metadata?.[OWNER_KEY] !== this.owner) {
            holder = "theirs";
            throw new NameHeldElsewhere(name);
          }
          // Ours and stale (or gone since): delete it and create again, once.
          await jsm.consumers.delete(stream, name).catch(() => undefined);
        }
      }
    };
    return {
      name,
      create,
      release: async () => {
        if (released) return;
        released = true;
        try {
          const jsm = await this.#jsm();
          if (holder === "ours") await jsm.consumers.delete(stream, name).catch(() => undefined);
          else if (holder === "unknown") {
            // A create that failed may have made ours all the same (a lost answer); delete only that.
            const held = await jsm.consumers.info(stream, name).catch(() => undefined);
            if (held?.config.metadata?.[OWNER_KEY] === this.owner) await jsm.consumers.delete(stream, name).catch(() => undefined);
          }
        } finally {
          this.#give(name);
        }
      },
    };
  }
}

/** The name's consumer belongs to another process (another owner id): left alone. */
class NameHeldElsewhere extends Error {
  constructor(name: string) {
    super(`consumer ${name} is held by another process using the same read-consumer prefix`);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
