/**
 * One session's catalog entry: its KV key, its JSON value, and the order the list sorts
 * entries in. The value takes the Go catalog's `SessionMeta` fields where they mean the
 * same (names, order, omitted when zero), then one object of jetloop's own, `jetloop`,
 * which the exactly-once update needs: the last journal sequence of the session folded in
 * (every record, applied or not), its shard, and the gates the fold knows. Pure.
 */
import { z } from "zod";
import { CatalogEntryError } from "../errors.js";
import { isCanonicalUuid } from "../events/ids.js";
import type { LedgerGate } from "../projection/gate-ledger.js";
import { goJson } from "../wire/wire.js";
import { parseStrictJson, StrictJsonError } from "../wire/strict-json.js";
import { type FoldState, GATES_KEPT, isDerivedTitle, type StatusFold, TITLE_MAX_RUNES } from "./fold.js";

/**
 * The most bytes an entry's value can take, by construction: every field is bounded (ids
 * are canonical UUIDs, times Go's RFC 3339 of at most 35 bytes, the title 80 runes of at
 * most 6 bytes each as Go escapes them, counts and sequences 16 digits) and the fold keeps
 * at most GATES_KEPT gates of 116 bytes each: about 6.5 KB at most. Far under any
 * max_payload a JetStream server is run with (1 MiB by default; 64 KiB is small). The
 * catalog writes nothing larger (it would mark the session, `too_large`), and a server
 * whose max_payload is below it may refuse the largest entries: those sessions are
 * marked, never the namespace's update held (catalog/README.md).
 */
export const ENTRY_MAX_BYTES = 8192;

/**
 * Why a session's entry is a mark rather than its fold: `too_large` (the entry would pass
 * ENTRY_MAX_BYTES or the server's max_payload, or the server refused its size),
 * `fold_failed` (folding one of its records threw), `unreadable` (the entry the fold made
 * would not read back as written). The session costs only itself: it is listed with the
 * mark, its later records are passed over, and `jetloop catalog rebuild` tries it again.
 */
export type PoisonReason = "too_large" | "fold_failed" | "unreadable";

/** The mark on a catalog entry that could not be the fold of its session's journal (too large, a fold that threw, unreadable). */
export interface Poisoned {
  readonly reason: PoisonReason;
  /** The last journal sequence of the session folded when it could not be kept. */
  readonly journalSeq: number;
}

/** The key prefix of session entries (`sessions.<uuid>`): a watch of `sessions.>` reads them all, nothing else. */
export const ENTRY_PREFIX = "sessions.";

export function entryKey(sessionId: string): string {
  return `${ENTRY_PREFIX}${sessionId}`;
}

/** The session id of an entry key; undefined for any other key (a checkpoint, or one nobody should have written). */
export function keySession(key: string): string | undefined {
  if (!key.startsWith(ENTRY_PREFIX)) return undefined;
  const sid = key.slice(ENTRY_PREFIX.length);
  return isCanonicalUuid(sid) ? sid : undefined;
}

/** A session's entry in the session catalog: what its journal folds to (state, title, gates, times), where it lives and how far it is folded. */
export interface CatalogEntry extends FoldState {
  readonly sessionId: string;
  /** The journal shard the session lives in (`foldedSeq` is a position in its stream). */
  readonly shard: number;
  /** The last journal sequence of the session folded in: an update at or below it changes nothing. */
  readonly foldedSeq: number;
  /** Set on a mark: the fields above are then empty (catalog/README.md). */
  readonly poisoned?: Poisoned | undefined;
}

/** What the list shows of an entry, and what it sorts by. */
export interface CatalogRow {
  readonly sessionId: string;
  readonly state: CatalogEntry["state"];
  readonly title: string;
  readonly createdAt: string | undefined;
  readonly lastActiveAt: string | undefined;
  /** Why the session's entry is a mark (its other fields then empty); undefined for a fold. */
  readonly poisoned?: Poisoned | undefined;
}

export function entryOf(sessionId: string, shard: number, foldedSeq: number, f: StatusFold): CatalogEntry {
  return {
    sessionId,
    shard,
    foldedSeq,
    state: f.state,
    lastJournalSeq: f.lastJournalSeq,
    activeTurnId: f.activeTurnId,
    waitingGateId: f.waitingGateId,
    createdAt: f.createdAt,
    lastActiveAt: f.lastActiveAt,
    title: f.title,
    status: f.status,
    loopCount: f.loopCount,
    gates: f.gates(),
  };
}

/** A session's mark: no fold fields, only why and where (a few hundred bytes whatever the session holds). */
export function markedEntry(sessionId: string, shard: number, foldedSeq: number, poisoned: Poisoned): CatalogEntry {
  return {
    sessionId,
    shard,
    foldedSeq,
    poisoned,
    state: undefined,
    lastJournalSeq: 0,
    activeTurnId: undefined,
    waitingGateId: undefined,
    createdAt: undefined,
    lastActiveAt: undefined,
    title: "",
    status: undefined,
    loopCount: 0,
    gates: [],
  };
}

/** Go's field order and omissions (`omitempty`/`omitzero`), then jetloop's object. */
export function encodeEntry(e: CatalogEntry): string {
  if (e.poisoned) {
    const mark = `{"reason":${goJson(e.poisoned.reason)},"journal_seq":${e.poisoned.journalSeq}}`;
    return `{"session_id":${goJson(e.sessionId)},"jetloop":{"shard":${e.shard},"folded_seq":${e.foldedSeq},"gates":[],"poisoned":${mark}}}`;
  }
  const p = [`"session_id":${goJson(e.sessionId)}`];
  if (e.title !== "") p.push(`"title":${goJson(e.title)}`);
  if (e.createdAt) p.push(`"created_at":${goJson(e.createdAt)}`);
  if (e.lastActiveAt) p.push(`"last_active_at":${goJson(e.lastActiveAt)}`);
  if (e.status) p.push(`"status":${goJson(e.status)}`);
  if (e.loopCount > 0) p.push(`"loop_count":${e.loopCount}`);
  if (e.state) p.push(`"state":${goJson(e.state)}`);
  if (e.lastJournalSeq > 0) p.push(`"last_journal_seq":${e.lastJournalSeq}`);
  if (e.activeTurnId) p.push(`"active_turn_id":${goJson(e.activeTurnId)}`);
  if (e.waitingGateId) p.push(`"waiting_gate_id":${goJson(e.waitingGateId)}`);
  const gates = e.gates.map((g) => `{"gate_id":${goJson(g.gateId)}${g.loopId ? `,"loop_id":${goJson(g.loopId)}` : ""}${g.resolved ? `,"resolved":true` : ""}}`);
  p.push(`"jetloop":{"shard":${e.shard},"folded_seq":${e.foldedSeq},"gates":[${gates.join(",")}]}`);
  return `{${p.join(",")}}`;
}

const uuid = z.string().refine(isCanonicalUuid, "is not a canonical lowercase UUID");
const seq = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
/** A time as Go's encoding/json writes a time.Time (RFC 3339, fraction optional); one the sort cannot read is refused. */
const time = z.string().regex(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)$/).refine((t) => Number.isFinite(instant(t)[0]), "is not a time");

const valueShape = z.strictObject({
  session_id: uuid,
  title: z.string().refine(isDerivedTitle, `is not a title the fold derives (one trimmed line of at most ${TITLE_MAX_RUNES} runes)`).optional(),
  created_at: time.optional(),
  last_active_at: time.optional(),
  status: z.enum(["active", "stopped"]).optional(),
  loop_count: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
  state: z.enum(["running", "waiting_on_gate", "idle", "failed", "interrupted", "stopped"]).optional(),
  last_journal_seq: seq.min(1).optional(),
  active_turn_id: uuid.optional(),
  waiting_gate_id: uuid.optional(),
  jetloop: z.strictObject({
    shard: z.number().int().min(0),
    folded_seq: seq,
    gates: z.array(z.strictObject({ gate_id: uuid, loop_id: uuid.optional(), resolved: z.literal(true).optional() })).max(GATES_KEPT),
    poisoned: z.strictObject({ reason: z.enum(["too_large", "fold_failed", "unreadable"]), journal_seq: seq.min(1) }).optional(),
  }),
});

/** The fields a mark leaves empty: a value with both is not one the catalog writes. */
const FOLD_FIELDS = ["title", "created_at", "last_active_at", "status", "loop_count", "state", "last_journal_seq", "active_turn_id", "waiting_gate_id"] as const;

/**
 * Reads an entry as the catalog wrote it, or throws CatalogEntryError: malformed or
 * ambiguous JSON (strict: duplicate keys refused), an unknown field, a value out of its
 * range, or a `session_id` that is not the key's. Anyone who may write the bucket can
 * store such a value; it costs that entry only (the list leaves it out and says so, the
 * next update folds the session again from its journal).
 */
export function decodeEntry(key: string, text: string): CatalogEntry {
  const sid = keySession(key);
  if (sid === undefined) throw new CatalogEntryError(key, "is not a session entry key");
  let raw: unknown;
  try {
    raw = parseStrictJson(text);
  } catch (e) {
    if (e instanceof StrictJsonError) throw new CatalogEntryError(key, `is not strict JSON: ${e.message}`, { cause: e });
    throw e;
  }
  const r = valueShape.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new CatalogEntryError(key, `${issue.path.join(".") || "value"} ${issue.message}`, { cause: r.error });
  }
  const v = r.data;
  if (v.session_id !== sid) throw new CatalogEntryError(key, `holds session ${v.session_id}`);
  if (v.last_journal_seq !== undefined && v.last_journal_seq > v.jetloop.folded_seq) throw new CatalogEntryError(key, "last_journal_seq is past folded_seq");
  const mark = v.jetloop.poisoned;
  if (mark !== undefined) {
    const filled = FOLD_FIELDS.find((f) => v[f] !== undefined);
    if (filled !== undefined || v.jetloop.gates.length > 0) throw new CatalogEntryError(key, `is marked poisoned and holds ${filled ?? "gates"}`);
    if (mark.journal_seq > v.jetloop.folded_seq) throw new CatalogEntryError(key, "jetloop.poisoned.journal_seq is past folded_seq");
    return markedEntry(sid, v.jetloop.shard, v.jetloop.folded_seq, { reason: mark.reason, journalSeq: mark.journal_seq });
  }
  const gates: LedgerGate[] = v.jetloop.gates.map((g) => ({
    sessionId: sid,
    gateId: g.gate_id,
    loopId: g.loop_id,
    kind: undefined,
    toolExecutionId: undefined,
    turnId: undefined,
    stepId: undefined,
    resolved: g.resolved === true,
  }));
  return {
    sessionId: sid,
    shard: v.jetloop.shard,
    foldedSeq: v.jetloop.folded_seq,
    state: v.state,
    lastJournalSeq: v.last_journal_seq ?? 0,
    activeTurnId: v.active_turn_id,
    waitingGateId: v.waiting_gate_id,
    createdAt: v.created_at,
    lastActiveAt: v.last_active_at,
    title: v.title ?? "",
    status: v.status,
    loopCount: v.loop_count ?? 0,
    gates,
  };
}

export function rowOf(e: CatalogEntry): CatalogRow {
  const row = { sessionId: e.sessionId, state: e.state, title: e.title, createdAt: e.createdAt, lastActiveAt: e.lastActiveAt };
  return e.poisoned ? { ...row, poisoned: e.poisoned } : row;
}

/**
 * A timestamp in Go's form as [epoch seconds, nanoseconds], comparable across offsets and
 * fraction lengths; none is before every time.
 */
export function instant(t: string | undefined): readonly [number, number] {
  if (t === undefined) return [-Infinity, 0];
  const dot = t[19] === "." ? 20 : -1;
  const zoneAt = t.search(/(?:Z|[+-]\d\d:\d\d)$/);
  const nanos = dot < 0 ? 0 : Number(t.slice(dot, zoneAt).padEnd(9, "0"));
  return [Date.parse(`${t.slice(0, 19)}${t.slice(zoneAt)}`) / 1000, nanos];
}

const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** A row with its sort key read once. */
export interface Keyed {
  readonly row: CatalogRow;
  readonly at: readonly [number, number];
}

export function keyed(row: CatalogRow): Keyed {
  return { row, at: instant(row.lastActiveAt) };
}

/** The list's order (reference §5, Go's): last activity descending (as instants, as Go's time.Time sorts), then session id ascending. */
export function compareKeyed(a: Keyed, b: Keyed): number {
  return b.at[0] - a.at[0] || b.at[1] - a.at[1] || byCodePoint(a.row.sessionId, b.row.sessionId);
}
