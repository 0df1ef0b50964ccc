/**
 * The parked store (`streams/parked.json`): one entry per durable, state and journal
 * sequence. Parking writes an entry; replay moves held entries to the replay state, where
 * the durable's subscriptions pick them up (durable-source.ts) and remove them once
 * acknowledged; drop deletes them. Operators reach it through the SDK
 * (`bus.parked`) and `jetloop parked`.
 */
import { JetStreamApiCodes, JetStreamApiError, jetstream, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { NotProvisionedError, OptionsError, ParkingError } from "../errors.js";
import { checkPartitions, sessionPartition } from "../partition/partition.js";
import { parsePartitionDurable, partitionDurable } from "../partition/partition-durable.js";
import { defaultPartitionedStreamName, PARTITIONS_METADATA_KEY } from "../streams/declared.js";
import { durableNameSchema, type JournalShard, parkedFilter, parkedSubject, parseEventSubject, parseParkedSubject, shardOfJournalSubject, UNSHARDED } from "../subjects/subjects.js";
import { entryHeaders, parkHeaders, readParkedAt, type ParkedEntry, type ParkInput } from "./parked-entry.js";

/**
 * Which entries of a durable an operation applies to: all, or one journal sequence. A
 * journal sequence is its shard's, so where one owner has entries of that sequence in
 * several shards (a group's partitions read every shard) `shard` (its index) says which;
 * without it such a selection is refused, never applied to all of them.
 */
export type ParkedSelection = { readonly seq: number; readonly shard?: number | undefined } | "all";

/**
 * Whose entries: a durable by name, or a partitioned group (`{ group }`): the entries its
 * partitions parked, each under its partition's durable, without naming that durable.
 */
export type ParkedOwner = string | { readonly group: string };

/**
 * Whose entries an owner names, checked: a durable's name, or exactly `{ group }` with a
 * group's name. Anything else (`{ group: undefined }` from an unset flag, `{}`, a number)
 * is refused: read as "no owner" it would reach every durable's entries.
 */
function ownerOf(owner: unknown): { readonly durable?: string; readonly group?: string } {
  if (typeof owner === "string") {
    const named = durableNameSchema.safeParse(owner);
    if (!named.success) throw new OptionsError("durable", `${JSON.stringify(owner)} ${named.error.issues[0]!.message}`);
    return { durable: owner };
  }
  if (typeof owner !== "object" || owner === null || Array.isArray(owner)) throw new OptionsError("owner", "must be a durable's name or { group }");
  const keys = Object.keys(owner);
  if (keys.length !== 1 || keys[0] !== "group") throw new OptionsError("owner", `must be a durable's name or { group }, not an object with ${keys.length === 0 ? "no keys" : keys.map((k) => JSON.stringify(k)).join(", ")}`);
  const group: unknown = (owner as { group: unknown }).group;
  const named = durableNameSchema.safeParse(group);
  if (!named.success) throw new OptionsError("group", `${JSON.stringify(group) ?? String(group)} ${named.error.issues[0]!.message}`);
  return { group: named.data };
}

/** The parked store as `bus.parked` offers it: list, show, replay, drop (the store's own bookkeeping stays inside). */
export type Parked = Omit<ParkedStore, "remove">;

/** Built by the bus; users reach it as `bus.parked` (`Parked`). */
export class ParkedStore {
  readonly #nc: NatsConnection;
  readonly #jsm: () => Promise<JetStreamManager>;
  readonly namespace: string;
  readonly stream: string;

  /** The namespace's journal shard count: entries of a namespace split in S > 1 are kept under their shard. */
  readonly #shards: number;

  constructor(nc: NatsConnection, jsm: () => Promise<JetStreamManager>, namespace: string, stream: string, shards = 1) {
    this.#shards = shards;
    this.#nc = nc;
    this.#jsm = jsm;
    this.namespace = namespace;
    this.stream = stream;
  }

  /** Keeps a copy of a delivery; resolves once the store acknowledged it. */
  async park(p: ParkInput): Promise<void> {
    // Its journal sequence is a sequence of the shard its subject is in: kept under that
    // shard. A namespace never split keeps every entry as it did before shards.
    const shard = this.#shards === 1 ? UNSHARDED : shardOfJournalSubject(this.namespace, p.subject);
    if (!shard || shard.count !== this.#shards) throw new ParkingError(p.durable, p.journalSeq, `its subject ${JSON.stringify(p.subject)} is on no journal shard root of namespace ${this.namespace} (${this.#shards} shards), so its shard is unknown`);
    const subject = parkedSubject(this.namespace, p.durable, "held", p.journalSeq, shard);
    try {
      await jetstream(this.#nc).publish(subject, p.data, { headers: parkHeaders(p, new Date()), expect: { streamName: this.stream } });
    } catch (e) {
      throw new ParkingError(p.durable, p.journalSeq, `the parked store ${this.stream} did not take it (${(e as Error).message})`, { cause: e });
    }
  }

  /**
   * Every parked entry (held or being replayed) of one durable, of one group's partitions,
   * or of all: by durable, then journal order (a group's: in journal order).
   */
  async list(owner?: ParkedOwner): Promise<ParkedEntry[]> {
    const { durable, group } = owner === undefined ? {} : ownerOf(owner);
    const jsm = await this.#jsm();
    let subjects = await this.#subjects(jsm, parkedFilter(this.namespace, durable));
    if (group !== undefined) subjects = subjects.filter((s) => parsePartitionDurable(parseParkedSubject(this.namespace, s).durable)?.group === group);
    const entries: ParkedEntry[] = [];
    for (const subject of subjects) {
      const e = await this.#read(jsm, subject);
      // A plain durable may be named like a partition's: only the entry's own header says it is the group's.
      if (e && (group === undefined || e.group?.name === group)) entries.push(e);
    }
    // Journal order is per shard: a group's entries by shard, then sequence.
    return group === undefined
      ? entries.sort((a, b) => a.durable.localeCompare(b.durable) || a.shard.index - b.shard.index || a.journalSeq - b.journalSeq || a.storeSeq - b.storeSeq)
      : entries.sort((a, b) => a.shard.index - b.shard.index || a.journalSeq - b.journalSeq || a.storeSeq - b.storeSeq);
  }

  /**
   * One durable's (or group's) entry for a journal sequence (held first), or undefined;
   * `shard` (an index) where the owner has entries of that sequence in several shards
   * (refused without it: OptionsError).
   */
  async show(owner: ParkedOwner, journalSeq: number, shard?: number): Promise<ParkedEntry | undefined> {
    const of = await this.#select(owner, { seq: journalSeq, shard }, false);
    return of.find((e) => e.state === "held") ?? of[0];
  }

  /** Parked entries per durable; with `shard`, only that shard's (a plain durable's entries are its shard's). */
  async counts(shard?: JournalShard): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const subject of await this.#subjects(await this.#jsm(), parkedFilter(this.namespace))) {
      const at = parseParkedSubject(this.namespace, subject);
      if (shard !== undefined && (at.shard.index !== shard.index || at.shard.count !== shard.count)) continue;
      counts.set(at.durable, (counts.get(at.durable) ?? 0) + 1);
    }
    return counts;
  }

  /** Deletes the selected entries (held or being replayed); returns what was dropped. */
  async drop(owner: ParkedOwner, selection: ParkedSelection): Promise<ParkedEntry[]> {
    const entries = await this.#select(owner, selection, false);
    for (const e of entries) await this.remove(e.storeSeq);
    return entries;
  }

  /**
   * Sends the selected held entries back to the durable's handlers (a group's: each to its
   * partition's), in journal order: each is written in the replay state before its held
   * copy is deleted, so a failure between the two leaves it parked twice, never lost.
   * Returns what was sent.
   */
  async replay(owner: ParkedOwner, selection: ParkedSelection): Promise<ParkedEntry[]> {
    const all = await this.#select(owner, selection, false);
    const partitions = all.some((e) => e.group) ? await this.#partitionCount() : undefined;
    // Held entries; and a group's entries left in the replay state of a partition the stream
    // no longer has (provisioned again with fewer): no member runs it, so none would take them.
    const selected = all.filter((e) => e.state === "held" || (e.group !== undefined && partitions !== undefined && e.group.partition >= partitions));
    const entries = this.#routed(selected, partitions);
    const js = jetstream(this.#nc);
    for (const [i, e] of entries.entries()) {
      await js.publish(parkedSubject(this.namespace, e.durable, "replay", e.journalSeq, e.shard), e.data, { headers: entryHeaders(e), expect: { streamName: this.stream } });
      await this.remove(selected[i]!.storeSeq);
    }
    return entries;
  }

  /**
   * Where each entry goes back to. A group's entry goes to its session's partition as the
   * partitioned stream splits the sessions now: that stream provisioned again with another
   * count makes the partition it was parked in another session's, or one no member runs
   * (the entry would wait in the replay state forever, or run beside its session's events).
   * Checked for all before any is moved; `partitions`: the stream's count, read when any entry is a group's.
   */
  #routed(entries: readonly ParkedEntry[], partitions: number | undefined): ParkedEntry[] {
    return entries.map((e) => {
      if (!e.group || partitions === undefined) return e;
      let session: string;
      try {
        session = parseEventSubject(this.namespace, e.subject).sessionId;
      } catch (cause) {
        throw new ParkingError(e.durable, e.journalSeq, `its subject ${JSON.stringify(e.subject)} names no session, so its partition is unknown; nothing was replayed`, { cause });
      }
      const partition = sessionPartition(session, partitions);
      return { ...e, durable: partitionDurable(e.group.name, partition), group: { name: e.group.name, partition } };
    });
  }

  /** The partitioned stream's partition count now. */
  async #partitionCount(): Promise<number> {
    const stream = defaultPartitionedStreamName(this.namespace);
    let n: unknown;
    try {
      n = Number((await (await this.#jsm()).streams.info(stream)).config.metadata?.[PARTITIONS_METADATA_KEY]);
    } catch (e) {
      if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) {
        throw new NotProvisionedError(stream, `a group's parked entries go back to their partitions, and stream ${stream} does not exist; run \`jetloop provision --partitions N\` first (nothing was replayed)`);
      }
      throw e;
    }
    return checkPartitions(n, `${stream} metadata ${PARTITIONS_METADATA_KEY}`);
  }

  /** Deletes one stored entry; one already gone is fine. A durable's settlement uses it: not on `Parked`. */
  async remove(storeSeq: number): Promise<void> {
    const jsm = await this.#jsm();
    try {
      await jsm.streams.deleteMessage(this.stream, storeSeq, false);
    } catch (e) {
      // Gone already: dropped meanwhile, or replaced by parking the same delivery again.
      if (e instanceof JetStreamApiError && (e.code === JetStreamApiCodes.NoMessageFound || /no message found|sequence \d+ not found/i.test(e.message))) return;
      throw this.#error(e);
    }
  }

  async #select(owner: ParkedOwner, selection: ParkedSelection, heldOnly: boolean): Promise<ParkedEntry[]> {
    // An owner is required here: list() without one is every durable's entries.
    ownerOf(owner);
    // A shard the namespace does not have is a mistake, not a selection of nothing.
    if (selection !== "all" && selection.shard !== undefined && (!Number.isSafeInteger(selection.shard) || selection.shard < 0 || selection.shard >= this.#shards)) {
      throw new OptionsError("shard", `${String(selection.shard)} is not a shard index of namespace ${this.namespace} (${this.#shards} shard${this.#shards === 1 ? "" : "s"}: 0 to ${this.#shards - 1})`);
    }
    const all = (await this.list(owner)).filter((e) => !heldOnly || e.state === "held");
    if (selection === "all") return all;
    const { seq, shard } = selection;
    const of = all.filter((e) => e.journalSeq === seq && (shard === undefined || e.shard.index === shard));
    const shards = new Set(of.map((e) => e.shard.index));
    if (shards.size > 1) {
      throw new OptionsError("shard", `journal sequence ${seq} has entries in shards ${[...shards].sort((a, b) => a - b).join(", ")}: a sequence is its shard's, so name the shard (nothing was changed)`);
    }
    return of;
  }

  async #subjects(jsm: JetStreamManager, filter: string): Promise<string[]> {
    try {
      const info = await jsm.streams.info(this.stream, { subjects_filter: filter });
      return Object.keys(info.state.subjects ?? {});
    } catch (e) {
      throw this.#error(e);
    }
  }

  async #read(jsm: JetStreamManager, subject: string): Promise<ParkedEntry | undefined> {
    try {
      const m = await jsm.streams.getMessage(this.stream, { last_by_subj: subject });
      // Its headers say whose it is and which event; they must agree with where it is kept.
      return m ? readParkedAt(this.namespace, subject, m.seq, m.header, m.data) : undefined;
    } catch (e) {
      if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.NoMessageFound) return undefined;
      throw this.#error(e);
    }
  }

  #error(e: unknown): unknown {
    if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) {
      return new NotProvisionedError(this.stream, `parked store ${this.stream} does not exist; run \`jetloop provision\``);
    }
    return e;
  }
}
