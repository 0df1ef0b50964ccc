/**
 * The session catalog: one KV entry per session (catalog/entry.ts) in a bucket per
 * namespace, kept current from the journal exactly once by journal sequence, and the
 * sorted index the list pages over. README.md (this folder) says who updates it, the
 * bound on consumers, and what a reader trusts.
 */
import { Kvm, type KV, type KvWatchEntry } from "@nats-io/kv";
import { jetstream } from "@nats-io/jetstream";
import type { QueuedIterator } from "@nats-io/nats-core";
import type { Jetloop } from "../bus.js";
import { CatalogEntryError, CatalogEntryPoisonedError, CatalogError } from "../errors.js";
import type { JetloopEvent } from "../events/catalogue.js";
import { defaultCatalogBucketName } from "../streams/declared.js";
import { permissionRefusal } from "../journal/consumer-errors.js";
import type { Delivery } from "../sources/delivery.js";
import { type CatalogEntry, type CatalogRow, compareKeyed, ENTRY_MAX_BYTES, ENTRY_PREFIX, decodeEntry, encodeEntry, entryKey, entryOf, type Keyed, keyed, keySession, markedEntry, type Poisoned, rowOf } from "./entry.js";
import { StatusFold } from "./fold.js";
import { type CatalogSettings, parseCatalogOptions, parseListOptions } from "./options.js";

/** What a catalog tells its owner besides its answers. */
export type CatalogReport =
  /** An entry the index or an update could not read (left out of the list; the update folds the session again). */
  | { readonly kind: "entry_invalid"; readonly key: string; readonly error: CatalogEntryError }
  /** An entry an update could not write: the checkpoint stays, so the next update tries again. */
  | { readonly kind: "update_failed"; readonly sessionId: string; readonly error: unknown }
  /** A session whose entry could not be its fold (too large, a fold that threw, unreadable): marked, listed with the mark; the checkpoints move on. */
  | { readonly kind: "entry_poisoned"; readonly sessionId: string; readonly error: CatalogEntryPoisonedError };

/** The session catalog's options: where its reports go, and how long a list waits for the index. */
export interface SessionCatalogOptions {
  /** Entries refused, sessions marked and updates that failed. Default: the bus's log (warn). */
  readonly onReport?: ((report: CatalogReport) => void) | undefined;
  /** How long a list waits for the index to reach what the bucket holds before it fails (CatalogError). Default 10000 ms. */
  readonly syncTimeoutMs?: number | undefined;
}

/** A page of the session list: how many to skip and return, and which sessions the caller may see. */
export interface SessionListOptions {
  /** Entries passed over, in the list's order. Default 0. */
  readonly skip?: number | undefined;
  /** Entries returned at most, 1 to 1000. Default 100. */
  readonly limit?: number | undefined;
  /** Which sessions the reader may see (the gateway's principal); the others are passed over without counting. Default: all. */
  readonly visible?: ((sessionId: string) => boolean) | undefined;
}

/** One page of the session list, in Go's order (last activity first). */
export interface SessionPage {
  readonly sessions: readonly CatalogRow[];
  readonly skip: number;
  readonly limit: number;
}

/** What one update did. */
export interface CatchUpReport {
  /** Journal records read. */
  readonly read: number;
  /** Entries written (marks included). */
  readonly written: number;
  /** Sessions this update marked instead of writing their fold (`entry_poisoned`), in the order marked. */
  readonly marked: readonly string[];
  /** Sessions whose entry this update could not write at all (`update_failed`): the checkpoints stayed, the next update tries them again. */
  readonly unwritten: readonly string[];
}

/** What a rebuild did: an update from sequence 1, and the entries no journal backs removed. */
export interface RebuildReport extends CatchUpReport {
  readonly removed: number;
  /** Sessions whose entry is a mark after the rebuild (marked by it, or by another updater meanwhile), and why: the list shows them marked. */
  readonly poisoned: readonly { readonly sessionId: string; readonly poisoned: Poisoned }[];
}

/** The key of a shard's checkpoint: every session's events up to it are folded into their entries. */
const checkpointKey = (shard: number) => `checkpoint.${shard}`;
/** Entries loaded or written at once (each a request on the bus's connection). */
const CONCURRENCY = 256;
/** Journal records folded before their entries are written (bounds the entries held). */
const CHUNK = 2048;
/** Compare-and-set attempts on one entry before its update is reported as failed (Go: 8). */
const CAS_ATTEMPTS = 8;
/** Bytes a KV write's headers take beside the value (the expected-revision header, with room). */
const WRITE_HEADROOM = 256;

/** A write the client or the server refuses for its size: the same entry would be refused again. */
const isTooLarge = (e: unknown) => {
  const code = (e as { api_error?: { err_code?: number } } | undefined)?.api_error?.err_code;
  // 10054: the stream's max_msg_size; the client's own check against the server's max_payload.
  return code === 10054 || (e instanceof Error && /max_payload size exceeded|message size exceeds/i.test(e.message));
};

/** One session's entry as an update holds it: the fold, and the revision its write compares against (0: no entry). */
interface Held {
  readonly sessionId: string;
  readonly shard: number;
  fold: StatusFold;
  foldedSeq: number;
  revision: number;
  dirty: boolean;
  /** Set when the session's entry is a mark, or is to be written as one: its records are passed over from then on. */
  poisoned: Poisoned | undefined;
  /** Why it was marked in this update (reported once the mark is written). */
  poisonCause?: unknown;
}

async function inBatches<T>(items: readonly T[], f: (t: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += CONCURRENCY) await Promise.all(items.slice(i, i + CONCURRENCY).map(f));
}

const isConflict = (e: unknown) => {
  const code = (e as { api_error?: { err_code?: number } } | undefined)?.api_error?.err_code;
  // 10071: wrong last sequence (the revision moved); 10164: create of a key that exists (KV `create` reports it as 10071 too on older servers).
  return code === 10071 || code === 10164 || (e instanceof Error && /wrong last sequence|key exists/i.test(e.message));
};

/**
 * The namespace's session catalog (`openSessionCatalog`). Keep one open where lists are
 * served: its index is loaded once (one watch of the bucket) and each list then costs its
 * page; a one-shot reader (the CLI) pays the index's load once.
 */
export interface SessionCatalog {
  /** The KV bucket, `{namespace with . → _}_catalog`. */
  readonly bucket: string;
  /**
   * Brings every entry up to the journal's end as it is when the update begins: reads each
   * shard from its checkpoint, folds each session's records above the sequence its entry
   * has folded (none twice), writes each changed entry with compare-and-set, then moves
   * the checkpoints. One update runs at a time per catalog; a call during one waits for
   * the next, which starts when it ends (so it sees everything stored before the call).
   */
  catchUp(): Promise<CatchUpReport>;
  /**
   * Rebuilds every entry from the journal from sequence 1, whatever the entries held
   * (corrupt, forged, stale or marks), and deletes the entries of sessions the journal has
   * no event of. `jetloop catalog rebuild`, which exits non-zero when `poisoned` or
   * `unwritten` names any session.
   */
  rebuild(): Promise<RebuildReport>;
  /**
   * A page of the list, in Go's order (last activity descending, then session id), after
   * an update (`catchUp`): what the journal held when the call was made is in it. The page
   * is read from the index, in work proportional to `skip + limit` (plus the sessions
   * `visible` hides). CatalogError for options out of range or an index that cannot be read.
   */
  list(options?: SessionListOptions): Promise<SessionPage>;
  /** Stops the index's watch. Idempotent; the bus stays open. */
  close(): Promise<void>;
}

class SessionCatalogImpl implements SessionCatalog {
  readonly bucket: string;
  readonly #bus: Jetloop;
  readonly #kv: KV;
  readonly #report: (r: CatalogReport) => void;
  readonly #syncTimeoutMs: number;
  /** The index: every readable entry's row, by session, and sorted in the list's order. */
  readonly #rows = new Map<string, Keyed>();
  readonly #sorted: Keyed[] = [];
  #watch: QueuedIterator<KvWatchEntry> | undefined;
  #watching: Promise<void> | undefined;
  /** The highest bucket revision the index has seen, and who waits for one. */
  #seen = 0;
  readonly #waiters = new Set<{ revision: number; resolve: () => void }>();
  /** The update running, and whether another was asked for while it ran (it starts when this one ends). */
  #running: Promise<CatchUpReport> | undefined;
  #next: Promise<CatchUpReport> | undefined;
  #closed = false;

  constructor(bus: Jetloop, kv: KV, bucket: string, settings: CatalogSettings) {
    this.#bus = bus;
    this.#kv = kv;
    this.bucket = bucket;
    this.#report = (settings.onReport as ((r: CatalogReport) => void) | undefined) ?? ((r) => bus.log.warn({ report: r.kind, key: "key" in r ? r.key : r.sessionId, err: r.error }, "session catalog"));
    this.#syncTimeoutMs = settings.syncTimeoutMs;
  }

  catchUp(): Promise<CatchUpReport> {
    if (this.#running === undefined) return this.#start(false);
    this.#next ??= this.#running.catch(() => undefined).then(() => {
      this.#next = undefined;
      return this.#start(false);
    });
    return this.#next;
  }

  async rebuild(): Promise<RebuildReport> {
    await this.#running?.catch(() => undefined);
    const p = this.#start(true);
    const report = await p;
    let removed = 0;
    const keys = await this.#kv.keys(`${ENTRY_PREFIX}>`);
    const unfolded: string[] = [];
    for await (const key of keys) {
      const sid = keySession(key);
      if (sid === undefined || !this.#rebuilt.has(sid)) unfolded.push(key);
    }
    const stale = await this.#stale(unfolded, this.#rebuildEnds);
    // What the rebuild wrote or took is in the index: the marks among it.
    const poisoned = [...this.#rebuilt].flatMap((sessionId) => {
      const mark = this.#rows.get(sessionId)?.row.poisoned;
      return mark ? [{ sessionId, poisoned: mark }] : [];
    });
    await inBatches(stale, async ([key, revision]) => {
      try {
        // Only the revision read: an entry another updater wrote since is theirs to keep.
        await this.#kv.delete(key, { previousSeq: revision });
        removed++;
      } catch (e) {
        if (!isConflict(e)) throw e;
      }
    });
    this.#rebuilt.clear();
    return { ...report, removed, poisoned };
  }

  /** The sessions a rebuild folded (the others' entries are removed after it). */
  readonly #rebuilt = new Set<string>();
  /** The journal's end per shard the last rebuild folded to. */
  #rebuildEnds: readonly number[] = [];

  /**
   * Of the entries a rebuild did not fold (`keys`), those no journal backs, with the
   * revision read: every one, except an entry whose session another updater folded past the
   * rebuild's end (`ends`) and no further than the journal's end now. Such a session's
   * first records were stored after the rebuild read its ends, and that updater's checkpoint
   * is past them: removed, it would be listed by nobody until it wrote again.
   */
  async #stale(keys: readonly string[], ends: readonly number[]): Promise<[string, number][]> {
    if (keys.length === 0) return [];
    const jsm = await this.#bus.jetstreamManager();
    const now = await Promise.all(this.#bus.journals().map(async (j) => (await jsm.streams.info(j.stream)).state.last_seq));
    const stale: [string, number][] = [];
    await inBatches(keys, async (key) => {
      const got = await this.#kv.get(key);
      if (got === null || got.operation !== "PUT") return;
      let entry: CatalogEntry | undefined;
      try {
        entry = decodeEntry(key, got.string());
      } catch (e) {
        if (!(e instanceof CatalogEntryError)) throw e;
      }
      const later = entry !== undefined && entry.shard < now.length && entry.foldedSeq > (ends[entry.shard] ?? 0) && entry.foldedSeq <= now[entry.shard]!;
      if (!later) stale.push([key, got.revision]);
    });
    return stale;
  }

  #start(fresh: boolean): Promise<CatchUpReport> {
    const run = this.#run(fresh).finally(() => {
      if (this.#running === run) this.#running = undefined;
    });
    this.#running = run;
    return run;
  }

  async #run(fresh: boolean): Promise<CatchUpReport> {
    const bus = this.#bus;
    const jsm = await bus.jetstreamManager();
    const shards = bus.journals();
    // Checkpoints first, then the ends: an honest checkpoint is then never past the end read.
    const read = fresh ? shards.map(() => ({ seq: 0, revision: 0 })) : await Promise.all(shards.map((_, k) => this.#checkpoint(k)));
    const ends = await Promise.all(shards.map(async (j) => (await jsm.streams.info(j.stream)).state.last_seq));
    if (fresh) this.#rebuildEnds = ends;
    // One past the journal's end was not written by an updater: read as none (every record offered again, which changes nothing).
    const marks = read.map((m, k) => (m.seq > ends[k]! ? { seq: 0, revision: m.revision } : m));
    if (!fresh && marks.every((m, k) => m.seq >= ends[k]!)) return { read: 0, written: 0, marked: [], unwritten: [] };
    const held = new Map<string, Held>();
    let folded = 0;
    let written = 0;
    const marked: string[] = [];
    const unwritten = new Set<string>();
    let chunk: Delivery<JetloopEvent>[] = [];
    const flush = async () => {
      const sids = [...new Set(chunk.map((d) => d.event.sessionId))].filter((s): s is string => s !== undefined && !held.has(s) && !unwritten.has(s));
      await inBatches(sids, async (sid) => {
        try {
          held.set(sid, fresh ? await this.#freshHeld(sid) : await this.#load(sid, ends));
        } catch (error) {
          // Its entry could not be read (the bucket, the session's journal): its records wait for the next update, the others' do not.
          this.#report({ kind: "update_failed", sessionId: sid, error });
          unwritten.add(sid);
        }
      });
      for (const d of chunk) {
        const h = held.get(d.event.sessionId);
        if (h !== undefined) this.#foldInto(h, d);
      }
      chunk = [];
      const dirty = [...held.values()].filter((h) => h.dirty);
      await inBatches(dirty, async (h) => {
        const done = await this.#write(h, ends);
        if (done === false) unwritten.add(h.sessionId);
        else written++;
        if (done === "marked") marked.push(h.sessionId);
      });
    };
    const deliveries = bus.replay({ enduring: "all", includeInternal: true }, { after: marks.map((m, k) => Math.min(m.seq, ends[k]!)) });
    for await (const d of deliveries) {
      if (d.journalSeq > ends[d.shard]!) continue; // past the end this update read: the next one folds it
      const sid = d.event.sessionId;
      // A record of a session stored in another shard than its own is not the session's (its own shard's reader never sees it).
      if (sid === undefined || bus.journalOf(sid).shard.index !== d.shard) continue;
      folded++;
      chunk.push(d);
      if (chunk.length >= CHUNK) await flush();
    }
    await flush();
    if (fresh) for (const sid of [...held.keys(), ...unwritten]) this.#rebuilt.add(sid);
    // A write that failed (not a mark: the session's data is not why) leaves its session below where the checkpoint would claim: the checkpoints stay, and the next update folds again (skipping what is folded).
    if (unwritten.size === 0) await Promise.all(shards.map((_, k) => this.#advance(k, ends[k]!)));
    return { read: folded, written, marked, unwritten: [...unwritten] };
  }

  /**
   * One record into its session's held entry, above what the entry has folded (exactly
   * once). A fold that throws marks the session (`fold_failed`) instead of failing the
   * update; a marked session's records are passed over.
   */
  #foldInto(h: Held, d: Delivery<JetloopEvent>): void {
    if (d.journalSeq <= h.foldedSeq || h.poisoned !== undefined) return;
    try {
      h.fold.apply(d);
    } catch (error) {
      h.poisoned = { reason: "fold_failed", journalSeq: d.journalSeq };
      h.poisonCause = error;
    }
    h.foldedSeq = d.journalSeq;
    h.dirty = true;
  }

  async #freshHeld(sid: string): Promise<Held> {
    const e = await this.#kv.get(entryKey(sid));
    return { sessionId: sid, shard: this.#bus.journalOf(sid).shard.index, fold: new StatusFold(), foldedSeq: 0, revision: e?.revision ?? 0, dirty: false, poisoned: undefined };
  }

  /**
   * A session's entry to fold on: as stored, or, when it cannot be trusted, refolded from
   * its journal (missing after a delete, unreadable, of another shard, or claiming more
   * than the journal holds).
   */
  async #load(sid: string, ends: readonly number[]): Promise<Held> {
    const shard = this.#bus.journalOf(sid).shard.index;
    const got = await this.#kv.get(entryKey(sid));
    if (got === null) return { sessionId: sid, shard, fold: new StatusFold(), foldedSeq: 0, revision: 0, dirty: false, poisoned: undefined };
    const entry = got.operation === "PUT" ? this.#trusted(got.key, got.string(), ends) : undefined;
    if (entry !== undefined) return { sessionId: sid, shard, fold: StatusFold.resume(entry), foldedSeq: entry.foldedSeq, revision: got.revision, dirty: false, poisoned: entry.poisoned };
    // Deleted or unreadable: whatever it held is not known, so the session is folded from its start.
    return this.#refold(sid, shard, got.revision, ends);
  }

  #trusted(key: string, text: string, ends: readonly number[]): CatalogEntry | undefined {
    try {
      const e = decodeEntry(key, text);
      const sid = e.sessionId;
      if (e.shard !== this.#bus.journalOf(sid).shard.index) throw new CatalogEntryError(key, `names shard ${e.shard}, not the session's`);
      if (e.foldedSeq > ends[e.shard]!) throw new CatalogEntryError(key, `claims journal sequence ${e.foldedSeq}, past the journal's end ${ends[e.shard]!}`);
      return e;
    } catch (err) {
      if (!(err instanceof CatalogEntryError)) throw err;
      this.#report({ kind: "entry_invalid", key, error: err });
      return undefined;
    }
  }

  /** Refolds run one at a time (a consumer each): the bound on consumers holds however many entries need one. */
  #refolds: Promise<unknown> = Promise.resolve();

  /** One session folded from `from` (an entry's state) to the journal's end: one consumer, that session's subjects. */
  #refold(sid: string, shard: number, revision: number, ends: readonly number[], from?: CatalogEntry): Promise<Held> {
    const next = this.#refolds.then(() => this.#refoldNow(sid, shard, revision, ends, from));
    this.#refolds = next.catch(() => undefined);
    return next;
  }

  async #refoldNow(sid: string, shard: number, revision: number, ends: readonly number[], from?: CatalogEntry): Promise<Held> {
    const h: Held = { sessionId: sid, shard, fold: from ? StatusFold.resume(from) : new StatusFold(), foldedSeq: from?.foldedSeq ?? 0, revision, dirty: from === undefined, poisoned: from?.poisoned };
    // A mark is not folded on: nothing past it is read (`jetloop catalog rebuild` folds the session again).
    if (h.foldedSeq >= ends[shard]! || h.poisoned !== undefined) return h;
    for await (const d of this.#bus.session(sid).replay({ enduring: "all", includeInternal: true }, { fromSeq: h.foldedSeq + 1, toSeq: ends[shard]! })) {
      this.#foldInto(h, d);
      if (h.poisoned !== undefined) break;
    }
    return h;
  }

  /**
   * Writes a held entry with compare-and-set. When another updater moved it: the stored
   * one is taken when it has folded at least as far; else the session is folded on from
   * the stored one (what this update folded on top of an older read is dropped), and
   * written again. `marked` when what was written is a mark made now (reported); false when
   * nothing could be written (reported).
   */
  async #write(h: Held, ends: readonly number[]): Promise<"written" | "marked" | false> {
    let cur = h;
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      const [value, entry] = this.#encoded(cur);
      try {
        const revision = cur.revision === 0 ? await this.#kv.create(entryKey(cur.sessionId), value) : await this.#kv.update(entryKey(cur.sessionId), value, cur.revision);
        cur.revision = revision;
        cur.dirty = false;
        this.#adopt(h, cur);
        this.#indexEntry(entry, revision);
        if (cur.poisonCause === undefined || cur.poisoned === undefined) return "written";
        this.#report({ kind: "entry_poisoned", sessionId: cur.sessionId, error: new CatalogEntryPoisonedError(cur.sessionId, cur.poisoned.reason, cur.poisoned.journalSeq, { cause: cur.poisonCause }) });
        cur.poisonCause = undefined;
        return "marked";
      } catch (e) {
        if (isTooLarge(e) && cur.poisoned === undefined) {
          // The server holds less than the bound: this session's entry is marked, and the mark (a few hundred bytes) written instead.
          cur.poisoned = { reason: "too_large", journalSeq: cur.foldedSeq };
          cur.poisonCause = e;
          continue;
        }
        if (!isConflict(e)) {
          this.#report({ kind: "update_failed", sessionId: cur.sessionId, error: e });
          return false;
        }
      }
      const got = await this.#kv.get(entryKey(cur.sessionId));
      const stored = got?.operation === "PUT" ? this.#trusted(got.key, got.string(), ends) : undefined;
      if (got !== null && stored !== undefined && stored.foldedSeq >= cur.foldedSeq) {
        this.#adopt(h, { ...cur, fold: StatusFold.resume(stored), foldedSeq: stored.foldedSeq, revision: got.revision, dirty: false, poisoned: stored.poisoned, poisonCause: undefined });
        this.#indexEntry(stored, got.revision);
        return "written";
      }
      cur = await this.#refold(cur.sessionId, cur.shard, got?.revision ?? 0, ends, stored);
      cur.dirty = true;
    }
    this.#report({ kind: "update_failed", sessionId: h.sessionId, error: new CatalogError(`session ${h.sessionId}: the entry moved under ${CAS_ATTEMPTS} writes in a row`) });
    return false;
  }

  /**
   * The value to write for a held entry, and the entry it reads back as: its fold when that
   * is within the bound (ENTRY_MAX_BYTES, and what the server's max_payload carries) and
   * reads back as written; else the session's mark, and the held entry is marked.
   */
  #encoded(h: Held): [string, CatalogEntry] {
    if (h.poisoned === undefined) {
      const value = encodeEntry(entryOf(h.sessionId, h.shard, h.foldedSeq, h.fold));
      const limit = Math.min(ENTRY_MAX_BYTES, (this.#bus.nc.info?.max_payload ?? Infinity) - WRITE_HEADROOM);
      const bytes = Buffer.byteLength(value);
      if (bytes > limit) {
        h.poisoned = { reason: "too_large", journalSeq: h.foldedSeq };
        h.poisonCause = new CatalogError(`the entry of session ${h.sessionId} takes ${bytes} bytes, past the ${limit} an entry may take here`);
      } else {
        try {
          return [value, decodeEntry(entryKey(h.sessionId), value)];
        } catch (e) {
          if (!(e instanceof CatalogEntryError)) throw e;
          h.poisoned = { reason: "unreadable", journalSeq: h.foldedSeq };
          h.poisonCause = e;
        }
      }
    }
    const mark = markedEntry(h.sessionId, h.shard, h.foldedSeq, h.poisoned);
    return [encodeEntry(mark), mark];
  }

  /** The update goes on from what was written or taken. */
  #adopt(h: Held, from: Held): void {
    h.fold = from.fold;
    h.foldedSeq = from.foldedSeq;
    h.revision = from.revision;
    h.dirty = false;
    h.poisoned = from.poisoned;
  }

  async #checkpoint(shard: number): Promise<{ seq: number; revision: number }> {
    const got = await this.#kv.get(checkpointKey(shard));
    if (got === null || got.operation !== "PUT") return { seq: 0, revision: got?.revision ?? 0 };
    const text = got.string();
    // Anything but a decimal sequence is read as none: the update then folds from the start, skipping what entries hold.
    return { seq: /^(0|[1-9]\d{0,15})$/.test(text) ? Number(text) : 0, revision: got.revision };
  }

  /**
   * Moves a checkpoint forward only (compare-and-set): one another updater moved further
   * meanwhile stays, unless it is past the journal's end now (nobody folded that far).
   */
  async #advance(shard: number, seq: number): Promise<void> {
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      const cur = await this.#checkpoint(shard);
      if (cur.seq === seq) return;
      if (cur.seq > seq) {
        const end = (await (await this.#bus.jetstreamManager()).streams.info(this.#bus.journals()[shard]!.stream)).state.last_seq;
        if (cur.seq <= end) return;
      }
      try {
        if (cur.revision === 0) await this.#kv.create(checkpointKey(shard), String(seq));
        else await this.#kv.update(checkpointKey(shard), String(seq), cur.revision);
        return;
      } catch (e) {
        if (!isConflict(e)) throw e;
      }
    }
  }

  async list(options: SessionListOptions = {}): Promise<SessionPage> {
    const { skip, limit, visible } = parseListOptions(options);
    await this.catchUp();
    await this.#synced();
    const sessions: CatalogRow[] = [];
    let passed = 0;
    for (const k of this.#sorted) {
      if (visible !== undefined && !visible(k.row.sessionId)) continue;
      if (passed++ < skip) continue;
      sessions.push(k.row);
      if (sessions.length === limit) break;
    }
    return { sessions, skip, limit };
  }

  /** The index reaches what the bucket holds now: the watch started once (one consumer for the catalog's life), then its position compared with the bucket's. */
  async #synced(): Promise<void> {
    this.#watching ??= this.#startWatch();
    await this.#watching;
    const info = await (await this.#bus.jetstreamManager()).streams.info(`KV_${this.bucket}`);
    const target = info.state.last_seq;
    if (this.#seen >= target) return;
    await new Promise<void>((resolve, reject) => {
      const w = { revision: target, resolve: () => (clearTimeout(timer), resolve()) };
      const timer = setTimeout(() => {
        this.#waiters.delete(w);
        reject(new CatalogError(`the catalog index did not reach revision ${target} of ${this.bucket} in ${this.#syncTimeoutMs} ms (at ${this.#seen})`));
      }, this.#syncTimeoutMs);
      this.#waiters.add(w);
    });
  }

  async #startWatch(): Promise<void> {
    const watch = await this.#kv.watch({ key: ">" });
    this.#watch = watch;
    void (async () => {
      for await (const e of watch) {
        if (e.operation === "PUT") this.#indexed(e.key, e.string(), e.revision);
        else this.#deleted(e.key, e.revision);
        this.#saw(e.revision);
      }
    })().catch((err: unknown) => {
      if (!this.#closed) this.#bus.log.warn({ err }, "session catalog: the index's watch ended; the next list starts it again");
      this.#watching = undefined;
    });
  }

  #saw(revision: number): void {
    if (revision <= this.#seen) return;
    this.#seen = revision;
    for (const w of this.#waiters) {
      if (w.revision <= revision) {
        this.#waiters.delete(w);
        w.resolve();
      }
    }
  }

  /** An entry into the index (a checkpoint or any other key is no entry and is ignored). */
  #indexed(key: string, text: string, revision: number): void {
    const sid = keySession(key);
    if (sid === undefined) return;
    // Writes this catalog made reach the index at once and again through the watch: the newer revision wins.
    if ((this.#revisions.get(sid) ?? 0) >= revision) return;
    let entry: CatalogEntry;
    try {
      entry = decodeEntry(key, text);
    } catch (err) {
      if (!(err instanceof CatalogEntryError)) throw err;
      this.#report({ kind: "entry_invalid", key, error: err });
      this.#unindex(key);
      this.#revisions.set(sid, revision);
      return;
    }
    this.#indexEntry(entry, revision);
  }

  /** An entry read (or written) at `revision` into the index, unless the index has a newer one. */
  #indexEntry(entry: CatalogEntry, revision: number): void {
    const sid = entry.sessionId;
    if ((this.#revisions.get(sid) ?? 0) >= revision) return;
    const key = entryKey(sid);
    this.#unindex(key);
    this.#revisions.set(sid, revision);
    const k = keyed(rowOf(entry));
    this.#rows.set(sid, k);
    this.#sorted.splice(this.#position(k), 0, k);
  }

  /** The revision each session's row is of: a write seen twice (at once, and through the watch) or late changes nothing. */
  readonly #revisions = new Map<string, number>();

  #deleted(key: string, revision: number): void {
    const sid = keySession(key);
    if (sid === undefined || (this.#revisions.get(sid) ?? 0) >= revision) return;
    this.#revisions.set(sid, revision);
    this.#unindex(key);
  }

  #unindex(key: string): void {
    const sid = keySession(key);
    if (sid === undefined) return;
    const k = this.#rows.get(sid);
    if (k === undefined) return;
    this.#rows.delete(sid);
    const at = this.#position(k);
    if (this.#sorted[at] === k) this.#sorted.splice(at, 1);
  }

  /** Where `k` is, or goes, in the sorted index (binary search: the order is total, session ids being unique). */
  #position(k: Keyed): number {
    let lo = 0;
    let hi = this.#sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareKeyed(this.#sorted[mid]!, k) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#watch?.stop();
    await this.#running?.catch(() => undefined);
  }
}

/** Opens the namespace's session catalog, creating its bucket when missing (one value per key, file storage, one replica). */
export async function openSessionCatalog(bus: Jetloop, options: SessionCatalogOptions = {}): Promise<SessionCatalog> {
  const settings = parseCatalogOptions(options);
  const bucket = defaultCatalogBucketName(bus.namespace);
  try {
    // No account-info check ($JS.API.INFO): a restricted user is granted the bucket's own subjects only.
    const kv = await new Kvm(jetstream(bus.nc, { checkAPI: false })).create(bucket, { history: 1 });
    return new SessionCatalogImpl(bus, kv, bucket, settings);
  } catch (e) {
    const refused = permissionRefusal(e);
    throw refused !== e ? refused : new CatalogError(`could not open the session catalog ${bucket}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
}
