/** Path ids and query parameters, read as the Go handlers read them (reference §1, §4, §5). */

const UUID_ANY_CASE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** A path id in 8-4-4-4-12 form, hex in either case, as its lower-case form; else undefined. */
export function pathId(raw: string): string | undefined {
  return UUID_ANY_CASE.test(raw) ? raw.toLowerCase() : undefined;
}

/** The parameter was given but is not valid: the caller answers 400 invalid_parameter. */
export const INVALID = Symbol("invalid");

// Go's strconv.Atoi takes a sign; ParseUint (from_journal_seq) takes digits only.
const SIGNED = /^[+-]?[0-9]+$/;
const DIGITS = /^[0-9]+$/;

function int(raw: string, pattern: RegExp): number | typeof INVALID {
  if (!pattern.test(raw)) return INVALID;
  const n = Number(raw);
  return Number.isSafeInteger(n) ? n : INVALID;
}

/** `limit`: default 100, valid 1..1000. */
export function limitParam(q: URLSearchParams): number | typeof INVALID {
  const raw = q.get("limit");
  if (raw === null || raw === "") return 100;
  const n = int(raw, SIGNED);
  return n === INVALID || n < 1 || n > 1000 ? INVALID : n;
}

/** `skip`: default 0, at least 0, no cap. */
export function skipParam(q: URLSearchParams): number | typeof INVALID {
  const raw = q.get("skip");
  if (raw === null || raw === "") return 0;
  const n = int(raw, SIGNED);
  return n === INVALID || n < 0 ? INVALID : n;
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

/** `from_journal_seq`: inclusive; absent, empty or 0 is the start. */
export function fromSeqParam(q: URLSearchParams): number | typeof INVALID {
  const raw = q.get("from_journal_seq");
  if (raw === null || raw === "") return 0;
  return journalSeq(raw);
}

/** `Last-Event-ID` (header or query): the last sequence the client has; absent or empty is none. */
export function lastEventIdParam(raw: string | undefined): number | undefined | typeof INVALID {
  return raw === undefined || raw === "" ? undefined : journalSeq(raw);
}
