import type { Logger } from "pino";
import { z } from "zod";
import { DEFAULT_MAX_EVENT_BYTES } from "../codec/codec.js";
import { OptionsError } from "../errors.js";
import { EventRegistry } from "../events/registry.js";
import { checkNamespace } from "../subjects/subjects.js";
import { feedModeSchema } from "../subscribe/options.js";
import { defaultStreamName } from "../streams/declared.js";

const busShape = z.object({
  /** First subject token(s) of every jetloop subject. Default `jetloop`. */
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
  /** The events stream. Default `{namespace with . → _}_journal`. */
  stream: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,255}$/, "must be a valid stream name")
    .optional(),
  /** Byte cap of one encoded event, and the stream's max_msg_size. Default 1 MiB. */
  maxEventBytes: z.number().int().min(1024).max(64 * 1024 * 1024).default(DEFAULT_MAX_EVENT_BYTES),
  /** How long to wait for one ack before resending with the same message id. Default 2000 ms. */
  ackTimeoutMs: z.number().int().min(10).max(600_000).default(2000),
  /** How long an append may keep retrying before PublishTimeoutError. Default 30000 ms. */
  publishDeadlineMs: z.number().int().min(10).max(3_600_000).default(30_000),
  /** Appends awaiting their ack at once; more wait for a slot. Default 1024. */
  maxInFlight: z.number().int().min(1).max(100_000).default(1024),
  /**
   * How live subscriptions follow the stream's feed (README, "Live subscriptions: the
   * feed"). `loop`: a core subscription per followed loop or session, shared within the
   * bus, filtered by the server (least subscribe rights). `namespace`: one core
   * subscription on `{ns}.feed.>` for all of them, dispatched in the process, every event
   * in journal order even when the feed lost one; for a process with many viewers (the
   * gateway). A subscription's own `feed` option overrides it. Default `loop`.
   */
  feed: feedModeSchema.default("loop"),
  /**
   * How journal reads (replay, a feed subscription's history and gap repair, reconcile)
   * reach the stream. `pull`: ordered pull consumers, deleted when a read ends. `push`:
   * ordered push consumers delivering below the connection's inbox prefix, for a user
   * confined to its session (deploy/nats/permissions.example.conf): it needs no grant that
   * names another consumer, so it cannot pull from or delete a durable; each read's
   * consumer expires 5 min after it ends instead of being deleted. Default `pull`.
   */
  journalReads: z.enum(["pull", "push"]).default("pull"),
});

export type BusSettings = z.output<typeof busShape> & { stream: string };

export interface BusOptions<E> extends z.input<typeof busShape> {
  /** The event catalogue. Default: the built-in types. */
  registry?: EventRegistry<E>;
  /** A pino logger; jetloop logs through children of it. Default: pino at `warn` on stderr. */
  logger?: Logger;
}

/** Checks bus options eagerly; throws OptionsError naming the option. */
export function parseBusOptions(options: Record<string, unknown>): BusSettings {
  const result = busShape.safeParse(options);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new OptionsError(issue.path.join(".") || "options", issue.message);
  }
  if (options.registry !== undefined && !(options.registry instanceof EventRegistry)) {
    throw new OptionsError("registry", "must be an EventRegistry");
  }
  const s = result.data;
  return { ...s, stream: s.stream ?? defaultStreamName(s.namespace) };
}
