/**
 * The enduring part of a partitioned durable group (README.md here): this member's share
 * of the partitions, each a durable consumer on the partitioned stream run by a
 * DurableSource, taken and given back as the group's live members change.
 */
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager, type StreamInfo } from "@nats-io/jetstream";
import { randomUUID } from "node:crypto";
import { NotProvisionedError, OptionsError, SubscriptionError } from "../errors.js";
import type { ParkedStore } from "../parking/parked-store.js";
import { checkPartitions } from "../partition/partition.js";
import { groupFigures } from "../streams/consumer-figures.js";
import { defaultMembersStreamName, defaultPartitionedStreamName, PARTITIONS_METADATA_KEY } from "../streams/declared.js";
import { partitionFilter } from "../subjects/subjects.js";
import { consumerError } from "../journal/consumer-errors.js";
import { DurableSource } from "../sources/durable-source.js";
import type { DurableSettings, StartPosition, SubscribeSettings } from "../sources/options.js";
import type { Source, SourceContext } from "../sources/source.js";
import { ownedPartitions, partitionOwner } from "./assignment.js";
import type { GroupReport } from "./groups-report.js";
import { Membership } from "./membership.js";
import { partitionedOrigin } from "./origin.js";
import { parsePartitionDurable, partitionDurable } from "../partition/partition-durable.js";

/** A partition's pull requests live this long (NATS.js's default is 30 s): one left open by a member that gave the partition away ends soon. */
const PULL_EXPIRES_MS = 2000;

export type GroupSettings = NonNullable<SubscribeSettings["group"]>;


/** What a member knows of its group now. */
export interface GroupStatus {
  readonly member: string;
  readonly partitions: number;
  readonly members: readonly string[];
  readonly owned: readonly number[];
}

export class GroupSource<E> implements Source {
  readonly #ctx: SourceContext<E>;
  readonly #group: string;
  readonly #settings: GroupSettings;
  readonly #start: StartPosition;
  readonly #parked: ParkedStore;
  #subjects: readonly string[];
  readonly #stream: string;
  /** The journal's shard streams, by shard index: the partitioned stream sources each. */
  readonly #journals: readonly string[];
  #partitions = 0;
  /** When the partitioned stream this member started on was created: another one is another split. */
  #created = "";
  #membership: Membership | undefined;
  readonly #running = new Map<number, DurableSource<E>>();
  #members: string[] = [];
  #timer: NodeJS.Timeout | undefined;
  #renewTimer: NodeJS.Timeout | undefined;
  #cycle: Promise<void> = Promise.resolve();
  #stopped = false;

  /**
   * `journals`: every shard stream of the namespace (the group reads the partitioned copy
   * of all of them, so one group serves sessions of every shard); `subjects`: the filter's
   * journal subjects, of whichever shards it selects.
   */
  constructor(ctx: SourceContext<E>, journals: readonly string[], group: string, subjects: readonly string[], start: StartPosition, parked: ParkedStore, settings: GroupSettings) {
    this.#ctx = ctx;
    this.#journals = journals;
    this.#group = group;
    this.#subjects = subjects;
    this.#start = start;
    this.#parked = parked;
    this.#settings = settings;
    this.#stream = defaultPartitionedStreamName(ctx.decode.namespace);
  }

  status(): GroupStatus {
    return { member: this.#membership?.member ?? "", partitions: this.#partitions, members: [...this.#members], owned: [...this.#running.keys()].sort((a, b) => a - b) };
  }

  /**
   * Each partition's consumer figures as the server has them, with its owner by this
   * member's last reading of the members, and the group's sums.
   */
  async figures(): Promise<GroupReport> {
    const durables = Array.from({ length: this.#partitions }, (_, p) => partitionDurable(this.#group, p));
    try {
      const f = await groupFigures(await this.#ctx.jsm(), this.#stream, durables, this.#parked);
      const members = [...this.#members];
      const partitions = f.partitions.map((p) => ({ ...p, owner: members.length > 0 ? partitionOwner(members, p.partition) : undefined }));
      return { ...f, group: this.#group, partitionCount: this.#partitions, members, partitions };
    } catch (e) {
      throw consumerError(e, this.#stream, `reading group ${this.#group}'s consumers`);
    }
  }

  async start(): Promise<void> {
    const jsm = await this.#ctx.jsm();
    try {
      const info = await jsm.streams.info(this.#stream);
      this.#partitions = checkPartitions(Number(info.config.metadata?.[PARTITIONS_METADATA_KEY]), "partitions");
      this.#created = info.created;
      const unsourced = this.#journals.filter((j) => !info.config.sources?.some((s) => s.name === j));
      if (unsourced.length > 0) {
        throw new NotProvisionedError(this.#stream, `stream ${this.#stream} does not source the journal ${unsourced.join(", ")}; run \`jetloop provision --partitions N\``);
      }
    } catch (e) {
      if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) {
        throw new NotProvisionedError(this.#stream, `stream ${this.#stream} does not exist; run \`jetloop provision --partitions N\` for partitioned groups`);
      }
      if (e instanceof NotProvisionedError) throw e;
      throw consumerError(e, this.#stream, `reading the partitioned stream for group ${this.#group}`);
    }
    // Renewals prove this member live to its own partitions (durable-source.ts, #unproven),
    // judged against two thirds of the shortest ack wait: one every fifth of it, a proof when
    // answered within a sixth, so a live member's last proof is at most 11/30 of it old.
    const proofMs = Math.min(this.#settings.leaseMs, this.#shortestAckWaitMs);
    this.#membership = new Membership(this.#ctx.js, () => this.#ctx.jsm(), defaultMembersStreamName(this.#ctx.decode.namespace), this.#ctx.decode.namespace, this.#group, this.#settings.member ?? randomUUID().replaceAll("-", ""), this.#settings.leaseMs, proofMs / 6);
    await this.#refusePlainNamesakes(jsm);
    // Every partition's consumer exists from the start, so one first owned later starts where the group did.
    await Promise.all(Array.from({ length: this.#partitions }, (_, p) => this.#source(p).prepare()));
    await this.#membership.renew();
    await this.#rebalance();
    if (this.#stopped) {
      // stop() came while this started: it found no lease nor partitions to end, so a ghost
      // member would hold its share of the partitions for a lease time, its timers running on.
      await this.#release();
      return;
    }
    // Renewing runs apart from rebalancing: giving a partition away can wait for a handler.
    const period = Math.max(100, Math.floor(this.#settings.leaseMs / 3));
    this.#renewTimer = setInterval(() => void this.#renew(), Math.max(50, Math.floor(proofMs / 5)));
    this.#timer = setInterval(() => {
      this.#cycle = this.#cycle.then(() => this.#tick());
    }, period);
    this.#renewTimer.unref();
    this.#timer.unref();
  }

  /**
   * A plain durable of the journal named like one of this group's partition consumers would
   * share that partition's parked entries and replay consumer (durable-source.ts refuses the
   * other way round).
   */
  async #refusePlainNamesakes(jsm: JetStreamManager): Promise<void> {
    for (const journal of this.#journals) {
      try {
        for await (const c of jsm.consumers.list(journal)) {
          const named = parsePartitionDurable(c.name, this.#partitions);
          if (named?.group === this.#group) {
            throw new OptionsError("durable", `group ${this.#group}'s partition ${named.partition} consumer would be named ${c.name}, a plain durable of ${journal}: the two would share its parked entries and replays`);
          }
        }
      } catch (e) {
        if (e instanceof OptionsError) throw e;
        throw consumerError(e, journal, `checking group ${this.#group}'s names against the journal's durables`);
      }
    }
  }

  /**
   * A partition consumer vanished. Recreated on the stream this member started on, it
   * resumes where it was; but a partitioned stream deleted (or provisioned again, maybe with
   * another count) has other sequences and splits, where this member's positions would skip
   * events or repeat them and its partitions would be the old count's. That fails the
   * subscription (a member started again reads the new stream); a transient failure to read
   * the stream lets the recreation go on.
   */
  async #sameStream(): Promise<void> {
    let info: StreamInfo;
    try {
      info = await (await this.#ctx.jsm()).streams.info(this.#stream);
    } catch (e) {
      if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) {
        throw new NotProvisionedError(this.#stream, `group ${this.#group}: stream ${this.#stream} was deleted under its members; run \`jetloop provision --partitions N\` and start the member again`);
      }
      return;
    }
    const partitions = Number(info.config.metadata?.[PARTITIONS_METADATA_KEY]);
    if (info.created !== this.#created || partitions !== this.#partitions) {
      throw new SubscriptionError(`group ${this.#group}: stream ${this.#stream} was provisioned again under its members (${partitions} partitions, this member has ${this.#partitions}); its positions are the old stream's, so it stops: start the member again`);
    }
  }

  async update(subjects: readonly string[]): Promise<void> {
    this.#subjects = subjects;
    await Promise.all([...this.#running].map(([p, s]) => s.update(this.#filters(p))));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    clearInterval(this.#renewTimer);
    await this.#cycle;
    await this.#release();
  }

  /** Drains the partitions this member runs and removes its lease. */
  async #release(): Promise<void> {
    const running = [...this.#running.values()];
    this.#running.clear();
    await Promise.all(running.map((s) => s.drain(this.#drainMs)));
    await this.#membership?.leave().catch((e: unknown) => this.#ctx.log.debug({ err: e }, "removing the lease failed; it goes stale"));
  }

  /** The partition consumers' ack wait (the first backoff step when they redeliver by backoff). */
  get #shortestAckWaitMs(): number {
    const own = this.#ctx.settings as DurableSettings;
    return own.ackWaitMs ?? (own.backoffMs === undefined ? this.#settings.leaseMs : Math.min(...own.backoffMs));
  }

  /** How long a partition given away waits for its delivery to be settled. */
  get #drainMs(): number {
    return this.#settings.leaseMs;
  }

  async #renew(): Promise<void> {
    if (this.#stopped) return;
    // A member that cannot renew for a lease time loses its partitions to the others.
    await this.#membership!.renew().catch((e: unknown) => this.#ctx.log.warn({ group: this.#group, err: (e as Error).message }, "renewing the group lease failed"));
  }

  async #tick(): Promise<void> {
    if (this.#stopped) return;
    try {
      await this.#rebalance();
    } catch (e) {
      this.#ctx.log.warn({ group: this.#group, err: (e as Error).message }, "group rebalance failed; trying again");
    }
  }

  async #rebalance(): Promise<void> {
    const members = await this.#membership!.live();
    if (this.#stopped) return;
    this.#members = members;
    const want = new Set(ownedPartitions(members, this.#membership!.member, this.#partitions));
    const release = [...this.#running].filter(([p]) => !want.has(p));
    for (const [p] of release) this.#running.delete(p);
    const take = [...want].filter((p) => !this.#running.has(p));
    await Promise.all([
      ...release.map(([, s]) => s.drain(this.#drainMs)),
      ...take.map(async (p) => {
        const s = this.#source(p);
        this.#running.set(p, s);
        try {
          await s.start();
        } catch (e) {
          this.#running.delete(p);
          await s.stop();
          throw e;
        }
      }),
    ]);
    if (release.length + take.length > 0) this.#ctx.log.debug({ group: this.#group, members: members.length, owned: [...want] }, "group partitions moved");
  }

  /** The filter's journal subjects in one partition: those of several shards can be one (every session's), and overlapping filters are refused by the server. */
  #filters(partition: number): string[] {
    return [...new Set(this.#subjects.map((s) => partitionFilter(this.#ctx.decode.namespace, partition, s)))];
  }

  #source(partition: number): DurableSource<E> {
    const own = this.#ctx.settings as DurableSettings;
    // A group's ack wait defaults to its lease: a delivery lost with a member (or taken by
    // a pull request left open by a member that gave its partition away) comes again within
    // it; a held one is extended meanwhile, so a long handler is not cut short.
    const ackWaitMs = own.ackWaitMs ?? (own.backoffMs === undefined ? this.#settings.leaseMs : undefined);
    const settings: DurableSettings = { ...own, maxAckPending: 1, batch: 1, ...(ackWaitMs === undefined ? {} : { ackWaitMs }) };
    // The subscription's context on the partitioned stream, with the partition's settings.
    const base = this.#ctx;
    const ctx: SourceContext<E> = {
      nc: base.nc,
      js: base.js,
      shard: base.shard,
      journal: base.journal,
      jsm: () => base.jsm(),
      stream: this.#stream,
      journalState: (subjects) => base.journalState(subjects),
      decode: base.decode,
      queue: base.queue,
      settings,
      log: base.log,
      report: (r) => base.report(r),
      seen: (shard, seq) => base.seen(shard, seq),
      fail: (e) => base.fail(e),
    };
    return new DurableSource(ctx, partitionDurable(this.#group, partition), this.#filters(partition), this.#start, this.#parked, {
      origin: partitionedOrigin(ctx.decode.namespace, this.#journals, partition),
      pullExpiresMs: PULL_EXPIRES_MS,
      // A member's late settlement must not release the partition to the next event while
      // the delivery is in another member's hands (durable-settlement.ts, Lease).
      fenced: true,
      group: { name: this.#group, partition },
      liveSince: () => this.#membership?.provenAt ?? 0,
      recreatable: () => this.#sameStream(),
      // Its copies' turns are the journal's: a "new" partition consumer records every shard's end (new-start.ts).
      journalEnds: () => this.#journalEnds(),
    });
  }

  /** Each journal shard's last sequence now, by shard index. */
  async #journalEnds(): Promise<Map<number, number>> {
    const jsm = await this.#ctx.jsm();
    return new Map(await Promise.all(this.#journals.map(async (j, k) => [k, (await jsm.streams.info(j)).state.last_seq] as const)));
  }
}
