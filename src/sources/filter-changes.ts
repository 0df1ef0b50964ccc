/**
 * A durable's filter changes, kept on its consumer (docs/scale.md, "Readers during a
 * commit"). When `updateFilter` widens or switches a durable, the server judges every
 * message after its consumer's position with the new filter, and that position is in no
 * reply: it lies between the last sequence the consumer had delivered before the update
 * (`from`) and the journal's end read after the update's reply (`at`). A turn begun by `at`
 * counts as before the change for what the change adds: of such a turn, only what the old
 * filter selects is delivered; what only the new one selects is acknowledged as seen. A
 * turn begun after `at` is the new filter's, whole. Every change is kept (A → A+B → A+B+C
 * inside one turn: each addition is judged by its own change), as a list in the consumer's
 * metadata, so every process that opens the durable later, every redelivery and a consumer
 * recreated after it vanished skip the same parts. A change that only narrows adds nothing
 * and is not kept; a change is forgotten once the consumer's ack floor is a turn's reach
 * past it (nothing it concerns can come again).
 *
 * A loop the change removes is cut where the server's position was: a turn of it in
 * progress is not delivered on (the reader asked for it no more).
 */
import { OptionsError } from "../errors.js";
import { filterSelects } from "../subjects/subjects.js";
import { begunBefore, TURN_REACH, type TurnSpan } from "../journal/turn-span.js";

/** Consumer metadata key: a JSON list of `[from, at, oldSubjects]` (`at` null while the change's end is not read yet). */
export const FILTER_CHANGES_KEY = "jetloop_filter_changes";
/** Changes kept at most, and their encoded size: the server's metadata is 128 KiB in all. */
export const MAX_FILTER_CHANGES = 32;
export const MAX_FILTER_CHANGES_BYTES = 32 * 1024;

export interface FilterChange {
  /** The last sequence the consumer had delivered before the change: messages at or before it were judged by an older filter. */
  readonly from: number;
  /** The journal's end read after the change: its position is at or before it. Undefined while not read (a process stopped in between): every turn counts as begun before it. */
  readonly at: number | undefined;
  /** The subject filters before the change. */
  readonly old: readonly string[];
}

const SEQ = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

export function encodeFilterChanges(changes: readonly FilterChange[]): string {
  return JSON.stringify(changes.map((c) => [c.from, c.at ?? null, c.old]));
}

/**
 * The changes a consumer's metadata records; none when it records none. A value jetloop
 * never writes is refused: read as none, the durable would hand out the half turns it must
 * skip.
 */
export function readFilterChanges(durable: string, metadata: Readonly<Record<string, string>> | undefined): FilterChange[] {
  const value = metadata?.[FILTER_CHANGES_KEY];
  if (value === undefined) return [];
  const refuse = () =>
    new OptionsError("durable", `durable ${durable}'s metadata ${FILTER_CHANGES_KEY} is not the list of filter changes jetloop writes: delete the durable to create it anew`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw refuse();
  }
  if (!Array.isArray(parsed) || parsed.length > MAX_FILTER_CHANGES) throw refuse();
  return parsed.map((entry: unknown) => {
    if (!Array.isArray(entry) || entry.length !== 3) throw refuse();
    const [from, at, old] = entry as unknown[];
    if (!SEQ(from) || !(at === null || (SEQ(at) && at >= from)) || !Array.isArray(old) || old.length === 0 || !old.every((s) => typeof s === "string" && s.length > 0)) throw refuse();
    return { from, at: at ?? undefined, old: old as string[] };
  });
}

/**
 * Refuses (OptionsError) changes recorded past the journal's end `end` (its last sequence,
 * read now): jetloop records a change's bounds from ends it read, so such a record is one
 * it never wrote. Read, it would count every later turn as begun before the change and
 * skip it, acknowledged and never delivered; and, its end always ahead of the ack floor, it
 * would never be forgotten.
 */
export function refuseChangesPastEnd(durable: string, changes: readonly FilterChange[], end: number): void {
  const past = changes.find((c) => c.from > end || (c.at !== undefined && c.at > end));
  if (past === undefined) return;
  throw new OptionsError(
    "durable",
    `durable ${durable}'s metadata ${FILTER_CHANGES_KEY} records a filter change at ${past.at ?? past.from}, past the journal's end (${end}): jetloop never wrote it; delete the durable to create it anew`,
  );
}

export function anySelects(filters: readonly string[], subject: string): boolean {
  return filters.some((f) => filterSelects(f, subject));
}

/** Whether going from `old` to `next` can add a subject: some filter of `next` is not one of `old`'s. */
export function widens(old: readonly string[], next: readonly string[]): boolean {
  return next.some((f) => !old.some((o) => o === f || filterCovers(o, f)));
}

/** Whether everything filter `f` selects is selected by `o` (token by token). */
function filterCovers(o: string, f: string): boolean {
  const a = o.split(".");
  const b = f.split(".");
  for (let i = 0; i < a.length; i++) {
    if (a[i] === ">") return b.length > i;
    if (i >= b.length || b[i] === ">" || (a[i] !== "*" && (b[i] === "*" || a[i] !== b[i]))) return false;
  }
  return a.length === b.length;
}

/** The changes still of use once the consumer's ack floor is `ackFloor`: a change whose turns all end by then is forgotten. */
export function pruneFilterChanges(changes: readonly FilterChange[], ackFloor: number): FilterChange[] {
  return changes.filter((c) => c.at === undefined || c.at + TURN_REACH > ackFloor);
}

/**
 * `changes` without a change made at exactly the position of the one before it (both
 * bounds equal: a quiet journal, everything delivered): the filter between them judged
 * nothing, and the earlier change's older filter stands. Repeated changes on a quiet
 * journal so keep one entry, not one each.
 */
export function mergeExact(changes: readonly FilterChange[]): FilterChange[] {
  const out: FilterChange[] = [];
  for (const c of changes) {
    const prev = out.at(-1);
    if (prev && prev.from === prev.at && c.from === c.at && c.at === prev.at) continue;
    out.push(c);
  }
  return out;
}

/** `changes` plus one; refused (OptionsError) past the bounds, so a change is never kept half. */
export function withFilterChange(durable: string, changes: readonly FilterChange[], change: FilterChange): FilterChange[] {
  const next = [...changes, change];
  if (next.length > MAX_FILTER_CHANGES || encodeFilterChanges(next).length > MAX_FILTER_CHANGES_BYTES) {
    throw new OptionsError(
      "filter",
      `durable ${durable} keeps its filter changes of the last ${TURN_REACH + 1} journal positions past its ack floor (at most ${MAX_FILTER_CHANGES}, ${MAX_FILTER_CHANGES_BYTES} bytes): acknowledge what it delivered, or let the journal move on, before changing its filter again`,
    );
  }
  return next;
}

/**
 * Whether the message at `seq` on `subject`, of turn `span`, is not the durable's:
 * acknowledged as seen, not delivered. A message at or before a change's `from` was judged
 * before it, by the filter before it (the first such change's `old`, `changes` being in the
 * order made): it is the durable's only if that filter selects it. (The server judged it
 * so and never hands it over otherwise; but a consumer recreated from a delivery still owed
 * below the change reads every subject of the filter now from there.) A message after a
 * change's `from` is skipped when it is of a turn begun by the change and on a subject the
 * change added.
 */
export function skippedAtFilterChange(changes: readonly FilterChange[], seq: number, subject: string, span: () => TurnSpan | undefined): boolean {
  let turn: TurnSpan | undefined | null = null;
  for (const c of changes) {
    if (seq <= c.from) return !anySelects(c.old, subject);
    const at = c.at ?? Number.MAX_SAFE_INTEGER;
    if (seq > at + TURN_REACH || anySelects(c.old, subject)) continue;
    if (turn === null) turn = span();
    if (begunBefore(turn, at)) return true;
  }
  return false;
}
