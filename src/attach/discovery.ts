/**
 * Finding the Go sessions, read-only, four ways: the catalog (KV `natsstore_kv`, keys
 * `sessions/<uuid>`, watched: its SessionMeta values too), the per-session streams (listed
 * by subject `sessions.*` now and every `resyncMs`, with their last sequence), the
 * stream-created advisories, and the ledger subjects themselves (a core subscription on
 * `sessions.*`: a session's first append, and the wake-up of a caught-up session). A
 * session without a catalog entry is found by its stream; one whose stream is not listed
 * yet, by its entry.
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { DiscoveredVia } from "./session-follower.js";
import { GO_CATALOG_BUCKET, GO_SESSIONS_FILTER, goSubject, sessionOfCatalogKey, sessionOfGoStream, sessionOfGoSubject, STREAM_CREATED_ADVISORIES } from "./go-layout.js";

export interface DiscoveryHandlers {
  /** A session was seen (again), with its ledger's last sequence when known. */
  session(sessionId: string, via: DiscoveredVia, goLastSeq?: number): void;
  /** The Go catalog's SessionMeta of a session (its latest value). */
  meta(sessionId: string, meta: Record<string, unknown>): void;
  error(e: Error): void;
}

/** Every Go session stream now, with its last sequence. */
export async function listGoSessions(jsm: JetStreamManager): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  for await (const si of jsm.streams.list(GO_SESSIONS_FILTER)) {
    const sid = sessionOfGoStream(si.config.name);
    // Only a stream laid out as natsstore lays it out: its one subject is its session's.
    if (sid === undefined || si.config.subjects?.length !== 1 || si.config.subjects[0] !== goSubject(sid)) continue;
    found.set(sid, si.state.last_seq);
  }
  return found;
}

export class Discovery {
  readonly #subs: Subscription[] = [];
  #closed = false;
  #timer: NodeJS.Timeout | undefined;
  #watch: { stop(): void } | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly handlers: DiscoveryHandlers,
    private readonly resyncMs: number,
  ) {}

  /** Lists the sessions once (resolves after the first listing), then keeps discovering. */
  async start(): Promise<void> {
    this.#subs.push(
      this.nc.subscribe(GO_SESSIONS_FILTER, {
        callback: (err, m) => {
          if (err) return;
          const sid = sessionOfGoSubject(m.subject);
          if (sid !== undefined) this.handlers.session(sid, "subject");
        },
      }),
      this.nc.subscribe(STREAM_CREATED_ADVISORIES, {
        callback: (err, m) => {
          if (err) return;
          try {
            const stream = (JSON.parse(new TextDecoder().decode(m.data)) as { stream?: unknown }).stream;
            const sid = typeof stream === "string" ? sessionOfGoStream(stream) : undefined;
            if (sid !== undefined) this.handlers.session(sid, "advisory");
          } catch {
            // Not an advisory: nothing to find.
          }
        },
      }),
    );
    await this.resync();
    void this.#watchCatalog();
    this.#schedule();
  }

  async resync(): Promise<void> {
    try {
      for (const [sid, last] of await listGoSessions(this.jsm)) this.handlers.session(sid, "stream", last);
    } catch (e) {
      if (!this.#closed) this.handlers.error(e as Error);
    }
  }

  #schedule(): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      void this.resync().then(() => this.#schedule());
    }, this.resyncMs);
    this.#timer.unref?.();
  }

  /** Watches the catalog bucket; until it exists (a Go runtime not started yet), tries again every resync. */
  async #watchCatalog(): Promise<void> {
    while (!this.#closed) {
      try {
        const kv = await new Kvm(this.nc).open(GO_CATALOG_BUCKET);
        const w = await kv.watch({ key: ">" });
        this.#watch = w;
        if (this.#closed) w.stop();
        for await (const e of w) {
          const sid = sessionOfCatalogKey(e.key);
          if (sid === undefined || e.operation !== "PUT") continue;
          try {
            const meta = JSON.parse(e.string()) as unknown;
            if (meta !== null && typeof meta === "object" && !Array.isArray(meta)) this.handlers.meta(sid, meta as Record<string, unknown>);
          } catch {
            // An entry Go's catalog would refuse is no session's meta; its stream still finds the session.
          }
          this.handlers.session(sid, "catalog");
        }
      } catch (e) {
        if (this.#closed) return;
        if (!/stream not found/i.test((e as Error).message)) this.handlers.error(e as Error);
      }
      if (!this.#closed) await new Promise((r) => setTimeout(r, this.resyncMs).unref?.());
    }
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#watch?.stop();
    for (const s of this.#subs) s.unsubscribe();
  }
}
