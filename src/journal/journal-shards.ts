/**
 * The namespace's journal as its readers see it: one shard (a namespace never split) or
 * several (streams/shards.ts), each with where its reads go and where it ends now.
 */
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { inboxPrefixOf } from "../connection/inbox.js";
import type { BusSettings } from "../connection/options.js";
import { supports } from "../subjects/server-features.js";
import { streamSubjects } from "../subjects/subjects.js";
import { JournalPosition, type JournalPositions } from "../streams/position.js";
import { allShards, type JournalShard, shardOfSession, shardStreamName } from "../streams/shards.js";
import type { JournalSource } from "./journal-range.js";
import type { OpenReads } from "./open-reads.js";
import { OwnFilterPosition } from "./own-position.js";
import { ReadConsumerPool } from "./read-consumers.js";

/** One shard of the namespace's journal: its stream, where reads of it go, where it ends now. */
export interface ShardJournal {
  readonly shard: JournalShard;
  readonly stream: string;
  /** Where the shard's reads go (replay, history, gap repair, reconcile): journal/journal-range.ts. */
  readonly journal: JournalSource;
  /** Where subscriptions that start at "new" begin (the stream's info, or a restricted user's own consumer: streams/position.ts). */
  readonly position: JournalPositions;
}

/** The namespace's journal shards: one (the namespace never split) or `count`. */
export interface JournalShards {
  readonly count: number;
  readonly all: readonly ShardJournal[];
  /** The shard session `sessionId` lives in. */
  of(sessionId: string): ShardJournal;
}

/** What the journal's shards are opened over: the bus's connection, its one JetStream client and its open reads. */
export interface JournalConnection {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly settings: BusSettings;
  readonly log: Logger;
  readonly serverVersion: string;
  /** Every journal read in progress, over all shards: stopped when the bus closes. */
  readonly reads: OpenReads;
  jetstreamManager(): Promise<JetStreamManager>;
}

/** The namespace's journal shards as the bus's readers see them (one when it is not split). */
export function openJournalShards(conn: JournalConnection): JournalShards {
  const { nc, js, settings, log, reads } = conn;
  const jsm = () => conn.jetstreamManager();
  const inboxPrefix = inboxPrefixOf(nc);
  const all = allShards(settings.shards).map((shard): ShardJournal => {
    const stream = shardStreamName(settings.stream, shard);
    const pool = settings.readConsumers ? new ReadConsumerPool(settings.readConsumers, stream, jsm) : undefined;
    // A user reading under a pool of her own consumer names is confined to her sessions:
    // she reads positions through them, never the stream's info (which lists every subject).
    const info = new JournalPosition(jsm, stream);
    const position: JournalPositions = pool ? new OwnFilterPosition(pool, streamSubjects(settings.namespace, shard)[0]!, info, log) : info;
    const journal: JournalSource = {
      placement: { leader: () => position.leader(), log },
      lastSeq: async (subjects) => (await position.state(subjects)).lastSeq,
      maxPayload: () => nc.info?.max_payload,
      turns: supports(conn.serverVersion, "atomicBatch"),
      js,
      stream,
      journalReads: settings.journalReads,
      inboxPrefix,
      reads,
      ...(pool ? { pool } : {}),
    };
    return { shard, stream, journal, position };
  });
  return { count: all.length, all, of: (sessionId) => all[shardOfSession(sessionId, all.length).index]! };
}
