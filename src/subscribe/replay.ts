/**
 * A bounded, ordered read of the journal: the events a filter selects (the filter of
 * `subscribeEvents`, its enduring part) from a sequence to a sequence, or to the end of the
 * journal as it stood when the replay began; then it ends. It reads through the same path
 * as a feed subscription's history (journal-read.ts).
 */
import type { SubscribeContext } from "./context.js";
import { OptionsError } from "../errors.js";
import type { EventRegistry } from "../events/registry.js";
import type { Delivery } from "../sources/delivery.js";
import type { ShardJournal } from "../journal/journal-shards.js";
import { type EventFilter, resolveFilter, type ShardFilter } from "../sources/filter.js";
import type { JournalRange } from "../journal/journal-range.js";
import { checkPositions, checkPositionsReached, shardEnds } from "../sources/shard-scope.js";
import { type JournalReader, readDeliveries } from "../sources/journal-read.js";
import { parseReplayOptions, type ReplayOptions } from "../sources/options.js";

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

/**
 * Checks the filter and options now (OptionsError), then reads. A filter over sessions of
 * one shard reads that shard (`fromSeq`/`toSeq` are its positions); one over several reads
 * them shard by shard, in shard order, each in its own order to its end as it stood when the
 * replay began (no order across shards), from `after` (a position per shard) or the start.
 */
export function replay<E>(bus: SubscribeContext<E>, filter: EventFilter, options: ReplayOptions = {}): AsyncGenerator<Delivery<E>, void, undefined> {
  const { fromSeq, toSeq, after, batch, onReport } = parseReplayOptions(options);
  const resolved = resolveFilter(bus.settings.namespace, checkReplayFilter(bus.registry, filter), bus.registry, bus.shards.count);
  if (after !== undefined) checkPositions("after", after, bus.shards.count);
  const reader = (home: ShardJournal): JournalReader<E> => ({
    shard: home.shard,
    journal: home.journal,
    decode: bus.decoding(resolved.includeInternal),
    log: bus.log.child({ component: "replay" }),
    // On a namespace split in shards a report names the shard its sequence is a position in, as a subscription's does.
    report: bus.shards.count === 1 ? (r) => onReport?.(r) : (r) => onReport?.({ ...r, shard: home.shard.index }),
  });
  const range = (f: ShardFilter, end: number | undefined) => ({
    subjects: f.journalSubjects,
    from: { seq: after === undefined ? (fromSeq ?? 1) : after[f.shard.index]! + 1 },
    toSeq: end ?? toSeq ?? Number.MAX_SAFE_INTEGER,
    batch,
  });
  if (resolved.shards.length === 1) {
    const f = resolved.shards[0]!;
    // Its end is the journal's when it began (the consumer's count) unless toSeq bounds it:
    // a turn it ends inside is read to its end, never past toSeq.
    const read = () => readDeliveries(reader(bus.shards.all[f.shard.index]!), range(f, undefined), "starting a replay", toSeq);
    return after === undefined ? read() : checkedAfter(bus, after, resolved.shards, read);
  }
  for (const [option, given] of [["fromSeq", fromSeq], ["toSeq", toSeq]] as const) {
    if (given !== undefined) {
      throw new OptionsError(option, `is a position in one journal shard, and the filter selects sessions of ${resolved.shards.length} of the namespace's ${bus.shards.count} shards: give after (one position per shard), or name sessions of one shard`);
    }
  }
  const read = () => acrossShards(bus, resolved.shards, reader, range);
  return after === undefined ? read() : checkedAfter(bus, after, resolved.shards, read);
}

/** A replay after a position vector: refused (OptionsError) when an entry is past its shard's end. */
async function* checkedAfter<E>(bus: SubscribeContext<E>, after: readonly number[], filter: readonly ShardFilter[], read: () => AsyncGenerator<Delivery<E>, void, undefined>): AsyncGenerator<Delivery<E>, void, undefined> {
  await checkPositionsReached("after", after, bus.shards.all, filter);
  yield* read();
}

/** The shards' replays one after the other, each ending where its journal ended when the replay began (or at the end of a turn it ended inside). */
async function* acrossShards<E>(
  bus: SubscribeContext<E>,
  shards: readonly ShardFilter[],
  reader: (home: ShardJournal) => JournalReader<E>,
  range: (f: ShardFilter, end: number) => JournalRange & { readonly from: { readonly seq: number } },
): AsyncGenerator<Delivery<E>, void, undefined> {
  const homes = shards.map((f) => bus.shards.all[f.shard.index]!);
  const ends = await shardEnds(homes, "starting a replay", shards.map((f) => f.journalSubjects));
  for (const [i, f] of shards.entries()) {
    const r = range(f, ends[i]!);
    if (r.from.seq <= r.toSeq) yield* readDeliveries(reader(homes[i]!), r, "starting a replay");
  }
}
