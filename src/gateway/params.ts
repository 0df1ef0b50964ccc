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

/** `from_journal_seq`: inclusive; absent, empty or 0 is the start. */
export function fromSeqParam(q: URLSearchParams): number | typeof INVALID {
  const raw = q.get("from_journal_seq");
  if (raw === null || raw === "") return 0;
  return int(raw, DIGITS);
}
