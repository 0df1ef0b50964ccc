/**
 * The event filter of a subscription, after the Go runtime's `event.EventFilter`: an ephemeral and
 * an enduring loop scope, narrowed by session, type or family. Every part becomes a
 * server-side subject filter, so a subscriber to one loop never receives another
 * loop's messages over the wire. Visibility is the one client-side part: it is in the
 * payload, not the subject (see README.md).
 */
import { OptionsError } from "../errors.js";
import { idProblem } from "../events/ids.js";
import type { EventRegistry } from "../events/registry.js";
import { type Channel, filterSubject, type JournalShard, NO_LOOP, type SubjectSelector } from "../subjects/subjects.js";
import { allShards, shardOfSession } from "../streams/shards.js";

/** Which loops' events of one class to deliver. Session-scoped events always pass. */
export type LoopScope = "all" | { readonly loops: Iterable<string> };

/** Which events a subscription delivers: journal events and previews, each for all loops or some, selected by subject on the server. */
export interface EventFilter {
  /** Previews (ToolCallStarted, …). Omitted: none. */
  readonly ephemeral?: LoopScope | undefined;
  /** Journal events. Omitted: none. */
  readonly enduring?: LoopScope | undefined;
  /** Sessions to follow. Default: all sessions (a session handle fixes its own). */
  readonly sessions?: "all" | Iterable<string> | undefined;
  /** Only these event types. */
  readonly types?: Iterable<string> | undefined;
  /** Only these families (tool, gate, step, turn, loop, session, or an application's). */
  readonly families?: Iterable<string> | undefined;
  /** Deliver `internal` events too. For trusted callers only. Default false. */
  readonly includeInternal?: boolean | undefined;
}

/** Above this many filter subjects a consumer gets measurably slower (nats-server 4888, 7014). */
export const MANY_FILTER_SUBJECTS = 16;

/** The journal part of a filter in one shard: its subjects there, and theirs on the feed. */
export interface ShardFilter {
  readonly shard: JournalShard;
  readonly journalSubjects: readonly string[];
  readonly feedSubjects: readonly string[];
}

export interface ResolvedFilter {
  /** Every shard's journal subjects together (those of the one shard of a namespace not split). */
  readonly journalSubjects: readonly string[];
  /** The journal part split by shard: only shards the filter selects a session of, in shard order. */
  readonly shards: readonly ShardFilter[];
  /** The same selection on the stream's republished feed (what feed subscriptions follow). */
  readonly feedSubjects: readonly string[];
  readonly previewSubjects: readonly string[];
  readonly includeInternal: boolean;
}

function ids(what: string, values: Iterable<string>): string[] {
  const list = [...new Set(values)];
  for (const v of list) {
    const problem = idProblem(v);
    if (problem) throw new OptionsError(what, `${JSON.stringify(v)} ${problem}`);
  }
  return list;
}

function typeSelectors(filter: EventFilter, registry: EventRegistry<unknown>): { family?: string; type?: string }[] {
  const families = filter.families === undefined ? undefined : [...new Set(filter.families)];
  const types = filter.types === undefined ? undefined : [...new Set(filter.types)];
  if (families === undefined && types === undefined) return [{}];
  const known = registry.families();
  const selectors: { family?: string; type?: string }[] = [];
  for (const f of families ?? []) {
    if (!known.has(f)) throw new OptionsError("families", `${JSON.stringify(f)} is not a known event family`);
    selectors.push({ family: f });
  }
  for (const t of types ?? []) {
    const def = registry.get(t);
    if (!def) throw new OptionsError("types", `${JSON.stringify(t)} is not a known event type`);
    // A type inside a selected family is already covered; overlapping filters are refused by the server.
    if (!families?.includes(def.family)) selectors.push({ family: def.family, type: t });
  }
  if (selectors.length === 0) throw new OptionsError("types", "an empty type or family list selects nothing");
  return selectors;
}

function subjectsFor(
  ns: string,
  channel: Channel,
  scope: LoopScope | undefined,
  sessions: (string | undefined)[],
  selectors: { family?: string; type?: string }[],
  shard?: JournalShard,
): string[] {
  if (scope === undefined) return [];
  const loops: (string | undefined)[] = scope === "all" ? [undefined] : [...ids(`${channel === "live" ? "ephemeral" : "enduring"}.loops`, scope.loops), NO_LOOP];
  const out: string[] = [];
  for (const sessionId of sessions) {
    for (const loopId of loops) {
      for (const sel of selectors) {
        const s: SubjectSelector = { sessionId, loopId, ...sel };
        out.push(filterSubject(ns, channel, s, shard));
      }
    }
  }
  return out;
}

const FILTER_KEYS = new Set(["ephemeral", "enduring", "sessions", "types", "families", "includeInternal"]);

const SCOPE_KEYS = new Set(["loops"]);

/** A key of `o` (own or inherited, as reading it would find) that is not in `known`. */
function strayKey(o: object, known: ReadonlySet<string>): string | undefined {
  for (const k in o) if (!known.has(k)) return k;
  return undefined;
}

/**
 * The journal part per shard of a namespace split in `count`: a named session in its own
 * shard, every session (`undefined`) in each.
 */
function shardFilters(ns: string, count: number, scope: LoopScope | undefined, sessions: (string | undefined)[], selectors: { family?: string; type?: string }[]): ShardFilter[] {
  if (scope === undefined) return [];
  return allShards(count).flatMap((shard) => {
    const here = sessions.filter((s) => s === undefined || shardOfSession(s, count).index === shard.index);
    if (here.length === 0) return [];
    return [{ shard, journalSubjects: subjectsFor(ns, "journal", scope, here, selectors, shard), feedSubjects: subjectsFor(ns, "feed", scope, here, selectors) }];
  });
}

/** Turns a filter into subject filters (journal ones for `shards` shards); throws OptionsError for an invalid filter. */
export function resolveFilter(ns: string, filter: EventFilter, registry: EventRegistry<unknown>, shards = 1): ResolvedFilter {
  // A misspelt or stray key (`sessionId`, `loops`) would otherwise widen the filter silently.
  const stray = strayKey(filter, FILTER_KEYS);
  if (stray !== undefined) throw new OptionsError("filter", `${JSON.stringify(stray)} is not a filter field (${[...FILTER_KEYS].join(", ")})`);
  if (filter.enduring === undefined && filter.ephemeral === undefined) {
    throw new OptionsError("filter", "select at least one of enduring and ephemeral");
  }
  for (const [name, scope] of [["enduring", filter.enduring], ["ephemeral", filter.ephemeral]] as const) {
    if (scope !== undefined && scope !== "all" && (typeof scope !== "object" || scope === null || !("loops" in scope))) {
      throw new OptionsError(name, 'must be "all" or { loops: [...] }');
    }
    const strayInScope = typeof scope === "object" ? strayKey(scope, SCOPE_KEYS) : undefined;
    if (strayInScope !== undefined) throw new OptionsError(name, `${JSON.stringify(strayInScope)} is not a loop scope field (loops only)`);
  }
  const sessions = filter.sessions === undefined || filter.sessions === "all" ? [undefined] : ids("sessions", filter.sessions);
  if (sessions.length === 0) throw new OptionsError("sessions", "an empty session list selects nothing");
  const selectors = typeSelectors(filter, registry);
  const byShard = shardFilters(ns, shards, filter.enduring, sessions, selectors);
  return {
    journalSubjects: byShard.flatMap((f) => f.journalSubjects),
    shards: byShard,
    feedSubjects: subjectsFor(ns, "feed", filter.enduring, sessions, selectors),
    previewSubjects: subjectsFor(ns, "live", filter.ephemeral, sessions, selectors),
    includeInternal: filter.includeInternal === true,
  };
}
