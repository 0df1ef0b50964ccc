/**
 * A bounded, ordered read of the journal: the events a filter selects (the filter of
 * `subscribeEvents`, its enduring part) from a sequence to a sequence, or to the end of the
 * journal as it stood when the replay began; then it ends. It reads through the same path
 * as a feed subscription's history (journal-read.ts).
 */
import type { BusContext } from "../bus-context.js";
import { OptionsError } from "../errors.js";
import type { EventRegistry } from "../events/registry.js";
import type { Delivery } from "./delivery.js";
import { type EventFilter, resolveFilter } from "./filter.js";
import { oneShard } from "./shard-scope.js";
import { type JournalReader, readDeliveries } from "./journal-read.js";
import { parseReplayOptions, type ReplayOptions } from "./options.js";

export type { ReplayOptions };

/** What the journal never holds, named for the filter part that asked for it. */
const NEVER_STORED = "previews are never stored in the journal, so replay cannot return them (subscribeEvents delivers them as they happen)";

/**
 * Refuses a filter a replay cannot serve: one with an ephemeral part (an `ephemeral`
 * scope, a preview type, a family of previews only) would select nothing, silently; one
 * without an enduring part reads nothing. Returns the filter with its lists read once
 * (an iterable may be a generator).
 */
export function checkReplayFilter(registry: EventRegistry<unknown>, filter: EventFilter): EventFilter {
  if (filter.ephemeral !== undefined) throw new OptionsError("ephemeral", NEVER_STORED);
  if (filter.enduring === undefined) throw new OptionsError("enduring", 'replay reads the journal: give "all" or { loops: [...] }');
  const types = filter.types === undefined ? undefined : [...filter.types];
  const families = filter.families === undefined ? undefined : [...filter.families];
  for (const t of types ?? []) {
    if (registry.get(t)?.class === "ephemeral") throw new OptionsError("types", `${t} is a live preview: ${NEVER_STORED}`);
  }
  for (const f of families ?? []) {
    const members = [...registry.types()].filter((d) => d.family === f);
    if (members.length > 0 && members.every((d) => d.class === "ephemeral")) throw new OptionsError("families", `${f} holds live previews only: ${NEVER_STORED}`);
  }
  return { ...filter, types, families };
}

/** Checks the filter and options now (OptionsError), then reads. */
export function replay<E>(bus: BusContext<E>, filter: EventFilter, options: ReplayOptions = {}): AsyncGenerator<Delivery<E>, void, undefined> {
  const { fromSeq, toSeq, batch, onReport } = parseReplayOptions(options);
  const resolved = resolveFilter(bus.settings.namespace, checkReplayFilter(bus.registry, filter), bus.registry, bus.shards.count);
  const home = oneShard(bus.shards, resolved, "replay");
  const reader: JournalReader<E> = {
    journal: home.journal,
    decode: bus.decoding(resolved.includeInternal),
    log: bus.log.child({ component: "replay" }),
    report: (r) => onReport?.(r),
  };
  return readDeliveries(reader, { subjects: resolved.journalSubjects, from: { seq: fromSeq }, toSeq, batch }, "starting a replay");
}
