/** The attach's options (`attach(bus, options)`), strict, with their defaults. */
import { z } from "zod";
import { functionOption, parseOptions } from "../options.js";
import type { AttachReport } from "./session-follower.js";

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
