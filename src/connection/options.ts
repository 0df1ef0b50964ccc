import type { ConnectionOptions } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { z } from "zod";
import { DEFAULT_MAX_EVENT_BYTES } from "../codec/codec.js";
import { EventRegistry } from "../events/registry.js";
import { OptionsError } from "../errors.js";
import { instanceOption, parseOptions, parseSplit } from "../options.js";
import { checkNamespace, defaultStreamName, MAX_SHARDS } from "../subjects/subjects.js";
import { feedModeSchema, type FeedMode } from "../subjects/feed-mode.js";

/** How to reach NATS: servers, auth and TLS pass straight through to NATS.js. */
export interface ConnectionSettings {
  /** Server URLs. Default: `NATS_URL` from the environment, else `nats://127.0.0.1:4222`. */
  servers?: string | string[] | undefined;
  /** Client name shown by the server's monitoring. Default `jetloop`. */
  name?: string | undefined;
  /** User and password authentication; the two go together. Default: none. */
  user?: string | undefined;
  /** The password of `user`. */
  pass?: string | undefined;
  /** Token authentication. Default: none. */
  token?: string | undefined;
  /** An nkey seed (`SU…`), for nkey authentication. Default: none. */
  nkeySeed?: string | undefined;
  /** A credentials file (JWT + seed), for decentralized auth. Default: none. */
  credsFile?: string | undefined;
  /** TLS files; `handshakeFirst` for servers that require TLS before INFO. Default: none (plain, or as the URL says). */
  tls?: TlsFiles | undefined;
  /**
   * Anything else NATS.js accepts (its own options, checked by NATS.js); jetloop's own
   * settings win where both are given. Default: `maxReconnectAttempts: -1` (reconnect
   * forever) and `noAsyncTraces: true` (no caller's stack captured per request).
   */
  natsOptions?: Partial<ConnectionOptions> | undefined;
}

/** The TLS files of a connection (`ConnectionSettings.tls`). */
export interface TlsFiles {
  /** The certificate authority to trust. */
  caFile?: string | undefined;
  /** The client's certificate, with `keyFile`, for mutual TLS. */
  certFile?: string | undefined;
  /** The client certificate's key. */
  keyFile?: string | undefined;
  /** TLS before the server's INFO, for servers that require it. */
  handshakeFirst?: boolean | undefined;
}

/** A pool of consumer names of this process's own for every journal read (`BusOptions.readConsumers`). */
export interface ReadConsumersOption {
  /** The names' prefix: 1-32 characters of [A-Za-z0-9-]. */
  prefix: string;
  /** How many names: 1-64. */
  size: number;
  /** How long a read waits for a free name, in ms. Default 30000. */
  waitMs?: number | undefined;
}

/** A bus's settings: its namespace and journal, append limits, how reads reach the stream, its catalogue and logger. */
export interface BusOptions<E> {
  /** First subject token(s) of every jetloop subject. Default `jetloop`. */
  namespace?: string | undefined;
  /**
   * The events stream. Default `{namespace with . → _}_journal`. A namespace split over
   * S > 1 shards names its streams `{stream}_{k}_of_{S}`.
   */
  stream?: string | undefined;
  /**
   * How many streams (shards) the namespace's journal is split over, as provisioned
   * (`provision --shards S`; src/streams/shards.ts). Default: `connect` reads it from the
   * server (1 when the account may not list streams); `fromConnection` takes 1. A bus
   * assuming another count than the journal has addresses subjects no stream captures, so
   * its appends and reads are refused, never stored in the wrong shard.
   */
  shards?: number | undefined;
  /** Byte cap of one encoded event, and the stream's max_msg_size. Default 1 MiB. */
  maxEventBytes?: number | undefined;
  /** How long to wait for one ack before resending with the same message id. Default 2000 ms. */
  ackTimeoutMs?: number | undefined;
  /** How long an append may keep retrying before PublishTimeoutError. Default 30000 ms. */
  publishDeadlineMs?: number | undefined;
  /**
   * Appends awaiting their ack at once, per shard; more wait for a slot. Each shard of a
   * split namespace has its own writer, so a bus may have up to S × maxInFlight appends in
   * flight. Default 1024.
   */
  maxInFlight?: number | undefined;
  /**
   * How feed subscriptions follow the feed (docs/subscribe.md). `loop`: a core
   * subscription per followed loop or session, shared within the bus, filtered by the
   * server (least subscribe rights). `namespace`: one core subscription on `{ns}.feed.>`
   * for all of them, dispatched in the process, every event in journal order even when
   * the feed lost one; for a process with many viewers (the gateway). A subscription's own
   * `feed` option overrides it. Default `loop`.
   */
  feed?: FeedMode | undefined;
  /**
   * How journal reads (replay, a feed subscription's history and gap repair, reconcile)
   * reach the stream. `pull`: ordered pull consumers, deleted when a read ends. `push`:
   * ordered push consumers delivering below the connection's inbox prefix, for a user
   * confined to its session (deploy/nats/permissions.example.conf): it needs no grant that
   * names another consumer, so it cannot pull from or delete a durable; each read's
   * consumer expires 5 min after it ends instead of being deleted. Default `pull`.
   */
  journalReads?: "pull" | "push" | undefined;
  /**
   * A pool of consumer names of this process's own for every journal read: `{prefix}_0` …
   * `{prefix}_{size-1}`. A user confined to its session is then granted exactly these
   * names (create with its session's filter, pull, info, delete), never a free name token:
   * deploy/nats/permissions.example.conf. Reads are pulled (so `journalReads` must stay
   * `pull`) and delete their consumer when they end; a read waits up to `waitMs` (default
   * 30000) for a free name, then fails with ReadConsumersBusyError. One prefix per
   * process: names another process holds are never taken over. Default: none (each read
   * names its consumer at random).
   */
  readConsumers?: ReadConsumersOption | undefined;
  /** The event catalogue. Default: the built-in types. */
  registry?: EventRegistry<E> | undefined;
  /** A pino logger; jetloop logs through children of it. Default: pino at `warn` on stderr. */
  logger?: Logger | undefined;
}

// The checking side of the interfaces above (documented there; test/unit/public-types.test.ts
// keeps each shape's input type and its interface the same).
export const busShape = z.strictObject({
  namespace: z
    .string()
    .default("jetloop")
    .refine((ns) => {
      try {
        checkNamespace(ns);
        return true;
      } catch {
        return false;
      }
    }, "must be 1-4 dot-separated tokens of [A-Za-z0-9-]"),
  stream: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,255}$/, "must be a valid stream name")
    .optional(),
  shards: z.number().int().min(1).max(MAX_SHARDS).optional(),
  maxEventBytes: z.number().int().min(1024).max(64 * 1024 * 1024).default(DEFAULT_MAX_EVENT_BYTES),
  ackTimeoutMs: z.number().int().min(10).max(600_000).default(2000),
  publishDeadlineMs: z.number().int().min(10).max(3_600_000).default(30_000),
  maxInFlight: z.number().int().min(1).max(100_000).default(1024),
  feed: feedModeSchema.default("loop"),
  journalReads: z.enum(["pull", "push"]).default("pull"),
  readConsumers: z
    .strictObject({
      prefix: z.string().regex(/^[A-Za-z0-9-]{1,32}$/, "must be 1-32 characters of [A-Za-z0-9-]"),
      size: z.number().int().min(1).max(64),
      waitMs: z.number().int().min(0).max(600_000).default(30_000),
    })
    .optional(),
  registry: instanceOption((v): v is EventRegistry<unknown> => v instanceof EventRegistry, "must be an EventRegistry").optional(),
  logger: instanceOption((v): v is Logger => typeof (v as Logger | null)?.child === "function", "must be a pino logger").optional(),
});
export const connectionShape = z.strictObject({
  servers: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
  name: z.string().optional(),
  user: z.string().optional(),
  pass: z.string().optional(),
  token: z.string().optional(),
  nkeySeed: z.string().optional(),
  credsFile: z.string().optional(),
  tls: z
    .strictObject({
      caFile: z.string().optional(),
      certFile: z.string().optional(),
      keyFile: z.string().optional(),
      handshakeFirst: z.boolean().optional(),
    })
    .optional(),
  natsOptions: instanceOption((v): v is Partial<ConnectionOptions> => typeof v === "object" && v !== null && !Array.isArray(v), "must be an object of NATS.js connection options").optional(),
});

export const connectShape = z.strictObject({ ...busShape.shape, ...connectionShape.shape });

/** A bus's settings as read (`bus.settings`): every default filled in (BusOptions says what each is). */
export interface BusSettings {
  namespace: string;
  stream: string;
  shards: number;
  maxEventBytes: number;
  ackTimeoutMs: number;
  publishDeadlineMs: number;
  maxInFlight: number;
  feed: FeedMode;
  journalReads: "pull" | "push";
  readConsumers?: { prefix: string; size: number; waitMs: number } | undefined;
}

/** Checks bus options eagerly; throws OptionsError naming the option. */
export function parseBusOptions(options: unknown): BusSettings {
  const { registry: _r, logger: _l, ...s } = parseOptions(busShape, options);
  if (s.readConsumers && s.journalReads === "push") throw new OptionsError("readConsumers", 'reads under pool names are pulled: leave journalReads at "pull"');
  return { ...s, stream: s.stream ?? defaultStreamName(s.namespace), shards: s.shards ?? 1 };
}

/**
 * Checks `connect`'s options (the connection's and the bus's) before dialing, and splits
 * what was read: the connection's part and the bus's (the bus parses it again, idempotent).
 */
export function parseConnectOptions<E>(options: ConnectionSettings & BusOptions<E>): { connection: ConnectionSettings; bus: BusOptions<E> } {
  const [connection, bus] = parseSplit(connectShape, options, connectionShape);
  return { connection: connection as ConnectionSettings, bus: bus as BusOptions<E> };
}
