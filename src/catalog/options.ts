/** The session catalog's options (`openSessionCatalog`) and a list's (`list`), strict, with their defaults. */
import { z } from "zod";
import { functionOption, parseOptions } from "../options.js";

/** What a catalog tells its owner besides its answers (catalog.ts `CatalogReport`), as an option takes it. */
type Report = (report: never) => void;

export const catalogShape = z.strictObject({
  /** Entries refused (`entry_invalid`), sessions marked (`entry_poisoned`) and updates that failed (`update_failed`). Default: the bus's log (warn). */
  onReport: functionOption<Report>().optional(),
  /** How long a list waits for the index to reach the bucket's last revision before CatalogError. Default 10000 ms. */
  syncTimeoutMs: z.number().int().min(1).max(2 ** 31 - 1).default(10_000),
});

export const listShape = z.strictObject({
  /** Sessions passed over, in the list's order. Default 0. */
  skip: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).default(0),
  /** Sessions returned at most, 1 to 1000. Default 100. */
  limit: z.number().int().min(1).max(1000).default(100),
  /** Which sessions the reader may see; the others are passed over without counting. Default: all. */
  visible: functionOption<(sessionId: string) => boolean>().optional(),
});

export type CatalogSettings = z.output<typeof catalogShape>;
export type ListSettings = z.output<typeof listShape>;

export function parseCatalogOptions(options: unknown): CatalogSettings {
  return parseOptions(catalogShape, options ?? {});
}

export function parseListOptions(options: unknown): ListSettings {
  return parseOptions(listShape, options ?? {});
}
