/**
 * Where a durable created at `"new"` started, kept on its consumer (docs/scale.md, "Readers
 * during a commit"). Such a durable is created at an explicit sequence, after the journal's
 * end as read just before, and that end is recorded per journal shard in the consumer's
 * metadata: a turn begun by then was being committed as the durable started, and each of
 * its messages the durable is handed is acknowledged as seen, never delivered
 * (turn-span.ts `begunBefore`). On the server, so every process that opens the durable
 * later, and every redelivery, skips the same turns. A plain durable reads one shard; a
 * group's partition consumer reads copies of every shard, and records each shard's end.
 */
import { OptionsError } from "../errors.js";
import { begunBefore, TURN_REACH, type TurnSpan } from "../journal/turn-span.js";

/** Consumer metadata key: `shard:seq` per journal shard, comma-separated, e.g. `0:1200,1:873`. */
export const NEW_START_KEY = "jetloop_new_at";

/** Per journal shard (by index), the journal's last sequence when the durable was created. */
export type NewStart = ReadonlyMap<number, number>;

const ENTRY = /^(0|[1-9][0-9]{0,3}):(0|[1-9][0-9]{0,15})$/;

export function encodeNewStart(start: NewStart): string {
  return [...start.entries()]
    .sort(([a], [b]) => a - b)
    .map(([k, seq]) => `${k}:${seq}`)
    .join(",");
}

/**
 * The start a consumer's metadata records; undefined when it records none (a durable created
 * otherwise: at another start, by hand, or before jetloop kept it). A value jetloop never
 * writes is refused: read as none, the durable would hand out the turn tails it must skip.
 */
export function readNewStart(durable: string, metadata: Readonly<Record<string, string>> | undefined): NewStart | undefined {
  const value = metadata?.[NEW_START_KEY];
  if (value === undefined) return undefined;
  const start = new Map<number, number>();
  for (const entry of value.split(",")) {
    const m = ENTRY.exec(entry);
    const seq = m ? Number(m[2]) : NaN;
    if (!m || !Number.isSafeInteger(seq) || start.has(Number(m[1]))) {
      throw new OptionsError("durable", `durable ${durable}'s metadata ${NEW_START_KEY} is ${JSON.stringify(value)}, not where a durable created at "new" started (shard:seq, comma-separated): delete the durable to create it anew`);
    }
    start.set(Number(m[1]), seq);
  }
  return start;
}

/**
 * Refuses (OptionsError) a start recorded past its shard's end in `ends` (each shard's last
 * sequence, read now), or on a shard `ends` does not name: jetloop records ends it read, so
 * such a start is one it never wrote. Read, it would count every later turn as begun before
 * the start and skip it, acknowledged and never delivered.
 */
export function refuseStartPastEnds(durable: string, start: NewStart, ends: NewStart): void {
  for (const [shard, at] of start) {
    const end = ends.get(shard);
    if (end !== undefined && at <= end) continue;
    throw new OptionsError(
      "durable",
      `durable ${durable}'s metadata ${NEW_START_KEY} records a start at ${at} on journal shard ${shard}, ${end === undefined ? "a shard this durable does not read" : `past its end (${end})`}: jetloop never wrote it; delete the durable to create it anew`,
    );
  }
}

/**
 * Whether the message at `seq` of journal shard `shard`, of turn `span`, is of a turn begun
 * by the durable's start there: acknowledged as seen, not delivered. Only a message within
 * a batch's reach of the start can be.
 */
export function skippedAtNewStart(start: NewStart | undefined, shard: number, seq: number, span: () => TurnSpan | undefined): boolean {
  const at = start?.get(shard);
  return at !== undefined && seq <= at + TURN_REACH && begunBefore(span(), at);
}
