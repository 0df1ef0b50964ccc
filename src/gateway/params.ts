/** Path ids and query parameters, read as the Go handlers read them (reference §1, §4, §5). */
import type { QueryParams } from "./query.js";

const UUID_ANY_CASE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** A path id in 8-4-4-4-12 form, hex in either case, as its lower-case form; else undefined. */
export function pathId(raw: string): string | undefined {
  return UUID_ANY_CASE.test(raw) ? raw.toLowerCase() : undefined;
}

/** The parameter was given but is not valid: the caller answers 400 invalid_parameter. */
export const INVALID = Symbol("invalid");

// Go's strconv.Atoi takes a sign; ParseUint (from_journal_seq) takes digits only. Neither
// takes whitespace, underscores (base 10) or an empty number; both take leading zeros.
const SIGNED = /^[+-]?[0-9]+$/;
const DIGITS = /^[0-9]+$/;

/** Go's int on the runtime's 64-bit platforms: strconv.Atoi's range. */
const GO_INT_MIN = -(2n ** 63n);
const GO_INT_MAX = 2n ** 63n - 1n;
/** strconv.ParseUint(raw, 10, 64)'s range. */
const GO_UINT64_MAX = 2n ** 64n - 1n;

/** strconv.Atoi exactly: the value, or undefined where Go returns an error (syntax, or out of int64's range). */
export function goAtoi(raw: string): bigint | undefined {
  if (!SIGNED.test(raw)) return undefined;
  const n = BigInt(raw);
  return n < GO_INT_MIN || n > GO_INT_MAX ? undefined : n;
}

/** strconv.ParseUint(raw, 10, 64) exactly: the value, or undefined where Go returns an error. */
export function goParseUint64(raw: string): bigint | undefined {
  if (!DIGITS.test(raw)) return undefined;
  const n = BigInt(raw);
  return n > GO_UINT64_MAX ? undefined : n;
}

function int(raw: string, pattern: RegExp): number | typeof INVALID {
  if (!pattern.test(raw)) return INVALID;
  const n = Number(raw);
  return Number.isSafeInteger(n) ? n : INVALID;
}

/** `limit`: default 100, valid 1..1000 (Atoi: a sign and leading zeros are taken). */
export function limitParam(q: QueryParams): number | typeof INVALID {
  const raw = q.get("limit");
  if (raw === null || raw === "") return 100;
  const n = goAtoi(raw);
  return n === undefined || n < 1n || n > 1000n ? INVALID : Number(n);
}

/**
 * `skip`: default 0, at least 0, no cap but Go's int (Atoi): up to 2^63 - 1, which a
 * JavaScript number cannot hold, so it is kept exact (the list echoes it). Past every
 * session is an empty page, done, as Go answers it.
 */
export function skipParam(q: QueryParams): bigint | typeof INVALID {
  const raw = q.get("skip");
  if (raw === null || raw === "") return 0n;
  const n = goAtoi(raw);
  return n === undefined || n < 0n ? INVALID : n;
}

/**
 * The largest journal sequence a request may name. One rule for `from_journal_seq` and
 * `Last-Event-ID`: a decimal with no sign, at most 2^53 - 2, so that the next sequence
 * (`+ 1`, where a resume starts) is still exact in a JavaScript number. Anything larger is
 * 400, as a malformed value is; a JetStream stream never reaches it.
 */
export const MAX_JOURNAL_SEQ = Number.MAX_SAFE_INTEGER - 1;

/** A journal sequence given by the client: digits only, 0..MAX_JOURNAL_SEQ. */
export function journalSeq(raw: string): number | typeof INVALID {
  const n = int(raw, DIGITS);
  return n === INVALID || n > MAX_JOURNAL_SEQ ? INVALID : n;
}

/** A `from_journal_seq` past every sequence a stream can hold: the page is empty and done, as Go answers it. */
export const PAST_THE_JOURNAL = Symbol("past the journal");

/**
 * `from_journal_seq`: inclusive; absent, empty or 0 is the start. Go's ParseUint: any
 * uint64, digits only. Past MAX_JOURNAL_SEQ no stream holds an event (so the Go handler
 * answers an empty page): PAST_THE_JOURNAL.
 */
export function fromSeqParam(q: QueryParams): number | typeof PAST_THE_JOURNAL | typeof INVALID {
  const raw = q.get("from_journal_seq");
  if (raw === null || raw === "") return 0;
  const n = goParseUint64(raw);
  if (n === undefined) return INVALID;
  return n > BigInt(MAX_JOURNAL_SEQ) ? PAST_THE_JOURNAL : Number(n);
}

/** `Last-Event-ID` (header or query): the last sequence the client has; absent or empty is none. */
export function lastEventIdParam(raw: string | undefined): number | undefined | typeof INVALID {
  return raw === undefined || raw === "" ? undefined : journalSeq(raw);
}
