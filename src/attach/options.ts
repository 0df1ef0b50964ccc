/** The attach's options (`attach(bus, options)`), strict, with their defaults. */
import { z } from "zod";
import { functionOption, parseOptions } from "../options.js";
import type { AttachReport } from "./session-follower.js";

/** The runtime's HTTP surface, for the live parts (go-live.ts). */
export const goHttpShape = z.strictObject({
  /** The runtime's base URL (http or https; the routes are under its /v1). */
  url: z.string().min(1),
  /** Bearer token for the runtime, sent to that URL's origin only (redirects are not followed); never logged. */
  token: z.string().min(1).optional(),
  /** Previews from each session's /events. Default true. */
  previews: z.boolean().default(true),
  /** Be the gate actor and controls of each session, forwarding to the runtime. Default true. */
  answers: z.boolean().default(true),
  /** How long a POST to the runtime waits for its whole answer. Default 3000 ms (under the gateway's 5 s answer wait). */
  requestTimeoutMs: z.number().int().min(50).max(120_000).default(3000),
  /** How long /events may take to send its headers (Go sends them with its first frame or its 20 s ping). Default 30000 ms. */
  eventsConnectTimeoutMs: z.number().int().min(50).max(600_000).default(30_000),
  /** The largest runtime answer read (a POST's body, one SSE frame). Default 1 MiB. */
  maxResponseBytes: z.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
  /** After a 202, how long the answer waits for the gate's GateResolved in the journal before saying "not known yet, repeat". Default 1500 ms. */
  resolvedWaitMs: z.number().int().min(0).max(120_000).default(1500),
  /** Answers and controls forwarded at once; past it a command is told to repeat (503 retryable at the gateway). Default 64. */
  maxInFlight: z.number().int().min(1).max(10_000).default(64),
  /** The /events reconnect backoff: first wait, doubled per failure up to the last. Defaults 250 ms and 15000 ms. */
  minBackoffMs: z.number().int().min(10).max(60_000).default(250),
  maxBackoffMs: z.number().int().min(10).max(600_000).default(15_000),
});
export type GoHttpSettings = z.output<typeof goHttpShape>;

/** `attach()`'s `goHttp` option: the runtime's HTTP surface, for previews and answers. */
export interface GoHttpOptions {
  /** The runtime's base URL (http or https; the routes are under its /v1). */
  readonly url: string;
  /** Bearer token for the runtime, sent to that URL's origin only (redirects are not followed); never logged. */
  readonly token?: string | undefined;
  /** Previews from each session's /events. Default true. */
  readonly previews?: boolean | undefined;
  /** Be the gate actor and controls of each session, forwarding to the runtime. Default true. */
  readonly answers?: boolean | undefined;
  /** How long a POST to the runtime waits for its whole answer, 50 ms to 2 min. Default 3000 ms. */
  readonly requestTimeoutMs?: number | undefined;
  /** How long /events may take to send its headers, 50 ms to 10 min. Default 30000 ms. */
  readonly eventsConnectTimeoutMs?: number | undefined;
  /** The largest runtime answer read (a POST's body, one SSE frame), 1 KiB to 64 MiB. Default 1 MiB. */
  readonly maxResponseBytes?: number | undefined;
  /** After a 202, how long the answer waits for the gate's GateResolved in the journal, up to 2 min. Default 1500 ms. */
  readonly resolvedWaitMs?: number | undefined;
  /** Answers and controls forwarded at once, 1 to 10,000. Default 64. */
  readonly maxInFlight?: number | undefined;
  /** The /events reconnect backoff's first wait. Default 250 ms. */
  readonly minBackoffMs?: number | undefined;
  /** The /events reconnect backoff's longest wait. Default 15000 ms. */
  readonly maxBackoffMs?: number | undefined;
}

export const attachShape = z.strictObject({
  /** Sessions found, records parked, id collisions, errors, sessions stopped. Default: the bus's log (parked and errors warn, the rest info). */
  onReport: functionOption<(report: AttachReport) => void>().optional(),
  /** How long a caught-up session waits for a wake-up (an append seen on its subject) before it reads its ledger again. Default 2000 ms. */
  pollMs: z.number().int().min(10).max(600_000).default(2000),
  /** How often the Go session streams are listed again (discovery, lag). Default 10000 ms. */
  resyncMs: z.number().int().min(50).max(3_600_000).default(10_000),
  /** Sessions reading their ledger at once. Default 16. */
  readers: z.number().int().min(1).max(1024).default(16),
  /** How long an append waits for the journal's acknowledgement before it is tried again (fenced: safe). Default 5000 ms. */
  ackTimeoutMs: z.number().int().min(100).max(120_000).default(5000),
  /** The runtime's HTTP surface: previews from /events, answers and controls forwarded (go-live.ts). Default none. */
  goHttp: goHttpShape.optional(),
  /** One active attach among several: a lease in the namespace's `{ns}_attach` bucket. Default: none (every attach works; the fence keeps them exact). */
  lease: z
    .strictObject({
      /** How long a lease lasts unrenewed: a dead holder's is taken over within 4/3 of it. Default 10000 ms. */
      leaseMs: z.number().int().min(1500).max(600_000).default(10_000),
      /** This attach's name in the lease. Default: host, process id and a unique suffix. */
      holder: z.string().min(1).max(256).optional(),
    })
    .optional(),
});

/** `attach()`'s options, each optional, with its default; checked when `attach()` is called (OptionsError). */
export interface AttachOptions {
  /** Sessions found, records parked, id collisions, errors, sessions stopped. Default: the bus's log (parked and errors warn, the rest info). */
  readonly onReport?: ((report: AttachReport) => void) | undefined;
  /** How long a caught-up session waits for a wake-up (an append seen on its subject) before it reads its ledger again, 10 ms to 10 min. Default 2000 ms. */
  readonly pollMs?: number | undefined;
  /** How often the Go session streams are listed again (discovery, lag), 50 ms to 1 h. Default 10000 ms. */
  readonly resyncMs?: number | undefined;
  /** Sessions reading their ledger at once, 1 to 1024. Default 16. */
  readonly readers?: number | undefined;
  /** How long an append waits for the journal's acknowledgement before it is tried again (fenced: safe), 100 ms to 2 min. Default 5000 ms. */
  readonly ackTimeoutMs?: number | undefined;
  /** The runtime's HTTP surface: previews from /events, answers and controls forwarded to it. Default none (the store only). */
  readonly goHttp?: GoHttpOptions | undefined;
  /**
   * One active attach among several: a lease in the namespace's `{ns}_attach` KV bucket,
   * renewed every third of `leaseMs` (1.5 s to 10 min, default 10 s; every attach of a
   * namespace uses one); the others stand by and take it over within 4/3 of `leaseMs` when
   * its holder dies, at once when it closes. `holder` names this attach in the lease
   * (default: host, process id and a unique suffix). Default: no lease (every attach
   * works; the fence keeps them exact).
   */
  readonly lease?: { readonly leaseMs?: number | undefined; readonly holder?: string | undefined } | undefined;
}
export type AttachSettings = z.output<typeof attachShape>;

export function parseAttachOptions(options: unknown): AttachSettings {
  return parseOptions(attachShape, options ?? {});
}
