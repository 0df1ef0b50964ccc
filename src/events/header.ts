import { z } from "zod";
import { withValueCodec } from "../wire/wire.js";
import { uuidSchema } from "./ids.js";
import { text } from "./text.js";

/** `public` events reach product streams; `internal` ones only trusted subscribers. */
export const VISIBILITIES: readonly Visibility[] = ["public", "internal"];
/** `public` events reach product streams; `internal` ones only trusted subscribers. */
export type Visibility = "public" | "internal";

/**
 * Visibility is a number on the wire (0 public, 1 internal). Anything else decodes to a
 * value the enum refuses, so validation names the field ("visibility is invalid").
 */
export const visibilitySchema = withValueCodec(z.enum(VISIBILITIES).default("public"), {
  toWire: (v) => {
    const i = VISIBILITIES.indexOf(v as Visibility);
    return i >= 0 ? i : v;
  },
  fromWire: (v) => (v === 0 || v === 1 ? VISIBILITIES[v] : `wire value ${JSON.stringify(v)}`),
  jsonSchema: { type: "integer", enum: [0, 1], description: "0 public (omitted when written), 1 internal" },
});

/** Who caused an event: 0 the machine, 1 a user (the runtime's uint8; other values are kept). */
export const AGENCY_MACHINE = 0;
/** Agency of an event a user caused (Cause.agency). */
export const AGENCY_USER = 1;
export const agencySchema = z.number().int().min(0).max(255);

/** What caused an event: a command, another event, a tool call, and where it happened. */
export interface Cause {
  sessionId?: string | undefined;
  loopId?: string | undefined;
  turnId?: string | undefined;
  stepId?: string | undefined;
  /** The command that caused it (an answer, an input). */
  commandId?: string | undefined;
  /** The event that caused it. */
  eventId?: string | undefined;
  /** The tool call that caused it. */
  toolExecutionId?: string | undefined;
  /** Who: 0 the machine (AGENCY_MACHINE), 1 a user (AGENCY_USER); other values are kept. */
  agency?: number | undefined;
}

export const causeSchema = z.object({
  sessionId: uuidSchema.optional(),
  loopId: uuidSchema.optional(),
  turnId: uuidSchema.optional(),
  stepId: uuidSchema.optional(),
  commandId: uuidSchema.optional(),
  eventId: uuidSchema.optional(),
  toolExecutionId: uuidSchema.optional(),
  agency: agencySchema.optional(),
});

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
/** Go's zero time, which its writer omits. */
const ZERO_TIME = "0001-01-01T00:00:00Z";

/** The number written by `n` ASCII digits at `at`, or -1. */
function digitsAt(v: string, at: number, n: number): number {
  let x = 0;
  for (let i = at; i < at + n; i++) {
    const d = v.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    x = x * 10 + d;
  }
  return x;
}

// The last timestamp found valid: decoding normalizes a time and validation checks it
// again, so the second look is a comparison.
let lastValid = "";

/**
 * A timestamp in the form Go's RFC3339Nano writer gives it, or undefined when `v` is not a
 * time both runtimes read and write the same way: RFC 3339 as Go's time.Parse reads it
 * (the runtime's Go has time.Time's strict RFC 3339 check switched off): an hour of one
 * digit or two, a fraction after '.' or ',', of any length, cut to nanoseconds; a numeric
 * offset with a colon, its hour up to 24 and its minute up to 60 ("as some people do write
 * offsets of 24 hours or 60 minutes"), or Z. Go reads 2024-02-30 and 24:00:00 as errors and
 * so does this; it reads an offset of 24 hours or more (+24:00, +23:60) but cannot write
 * it back, so jetloop refuses that too. Parsed in place: this runs on every publish and
 * every delivery.
 */
export function goTimestamp(v: string): string | undefined {
  if (v === lastValid) return v;
  const n = v.length;
  const h = v[12] === ":" ? 1 : 2; // the hour's digits: Go reads `T1:15:30` as 01:15:30
  const m = 11 + h; // the ':' after the hour
  if (n < 18 + h || v[4] !== "-" || v[7] !== "-" || v[10] !== "T" || v[m] !== ":" || v[m + 3] !== ":") return undefined;
  const year = digitsAt(v, 0, 4);
  const month = digitsAt(v, 5, 2);
  const day = digitsAt(v, 8, 2);
  const hour = digitsAt(v, 11, h);
  const minute = digitsAt(v, m + 1, 2);
  const second = digitsAt(v, m + 4, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return undefined;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  if (day > (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!)) return undefined;
  let i = m + 6;
  const fractionAt = i + 1;
  let end = i; // of the fraction digits kept
  let canonical = h === 2;
  if (v[i] === "." || v[i] === ",") {
    if (v[i] === ",") canonical = false;
    const start = ++i;
    while (i < n && v.charCodeAt(i) >= 48 && v.charCodeAt(i) <= 57) i++;
    if (i === start) return undefined;
    end = Math.min(i, start + 9);
    while (end > start && v[end - 1] === "0") end--;
    if (end !== i) canonical = false;
  }
  let zone: string;
  if (v[i] === "Z" && i + 1 === n) zone = "Z";
  else if ((v[i] === "+" || v[i] === "-") && i + 6 === n && v[i + 3] === ":") {
    const oh = digitsAt(v, i + 1, 2);
    const om = digitsAt(v, i + 4, 2);
    if (oh < 0 || om < 0 || oh > 24 || om > 60) return undefined;
    const minutes = oh * 60 + om;
    if (minutes >= 24 * 60) return undefined; // Go's writer refuses an offset of 24 hours
    zone = minutes === 0 ? "Z" : `${v[i]}${pad2(Math.floor(minutes / 60))}:${pad2(minutes % 60)}`;
    if (zone !== v.slice(i)) canonical = false;
  } else return undefined;
  const out = canonical ? v : `${v.slice(0, 11)}${pad2(hour)}${v.slice(m, m + 6)}${end > fractionAt ? `.${v.slice(fractionAt, end)}` : ""}${zone}`;
  lastValid = out;
  return out;
}

function pad2(x: number): string {
  return x < 10 ? `0${x}` : String(x);
}

/** Minutes from 0000-01-01 to 0001-01-01 (year 0 is a leap year). */
const ZERO_MINUTES = 366 * 24 * 60;

/**
 * Whether a timestamp in Go's form (goTimestamp's output) is Go's zero time, the instant
 * time.Time's IsZero reports in whatever offset it is written (`0001-01-01T01:00:00+01:00`
 * too): the runtime's writer omits it (omitzero), so jetloop does.
 */
function isZeroInstant(t: string): boolean {
  if (t === ZERO_TIME) return true;
  // Only years 0 and 1 reach it within an offset of less than a day; and only whole minutes.
  if (!t.startsWith("000") || (t[3] !== "0" && t[3] !== "1") || t.slice(17, 19) !== "00" || t[19] === ".") return false;
  const year = t.charCodeAt(3) - 48;
  const month = digitsAt(t, 5, 2);
  let days = year === 1 ? 366 : 0;
  for (let k = 0; k < month - 1; k++) days += k === 1 && year === 0 ? 29 : DAYS_IN_MONTH[k]!;
  days += digitsAt(t, 8, 2) - 1;
  let minutes = days * 24 * 60 + digitsAt(t, 11, 2) * 60 + digitsAt(t, 14, 2);
  if (t[19] !== "Z") minutes -= (t[19] === "-" ? -1 : 1) * (digitsAt(t, 20, 2) * 60 + digitsAt(t, 23, 2));
  return minutes === ZERO_MINUTES;
}

function timestampToWire(v: unknown): unknown {
  if (typeof v !== "string") return v;
  const t = goTimestamp(v);
  return t !== undefined && isZeroInstant(t) ? undefined : (t ?? v);
}

/**
 * RFC 3339 with up to nanosecond fractions and the writer's own offset (the Go runtime
 * stamps local time). Written in Go's form: trailing fraction zeros dropped, +00:00 as Z.
 */
export const timestampSchema = withValueCodec(
  z
    .string()
    .refine((v) => goTimestamp(v) !== undefined, "must be an RFC 3339 timestamp")
    // Validated events carry the time as the journal will: what a publisher gets back is
    // what a subscriber reads.
    .transform((v) => goTimestamp(v)!),
  // An unreadable time passes through unchanged, for validation to name it. Go's
  // time.Time reads the quoted bytes themselves: an escaped time is refused by the reader.
  {
    toWire: timestampToWire,
    fromWire: timestampToWire,
    readsAs: "quoted",
    // goTimestamp's form; the calendar (a 30 February) and the offset's range are the codec's.
    jsonSchema: {
      type: "string",
      pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{1,2}:[0-9]{2}:[0-9]{2}([.,][0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$",
      description: "RFC 3339 with up to nanoseconds and the writer's offset, as Go's time.Time reads it",
    },
  },
);

export const COORDINATES: readonly Coordinate[] = ["loopId", "turnId", "stepId"];
/** The coordinates below a session, in order: loop, turn, step. */
export type Coordinate = "loopId" | "turnId" | "stepId";

/** The header fields every event carries, flattened beside its body. */
export const headerShape = {
  sessionId: uuidSchema,
  loopId: uuidSchema.optional(),
  turnId: uuidSchema.optional(),
  stepId: uuidSchema.optional(),
  agentName: text().optional(),
  eventId: uuidSchema,
  createdAt: timestampSchema.optional(),
  cause: causeSchema.optional(),
  visibility: visibilitySchema,
};

/** Keys a body may not use: they belong to the header or the envelope. */
export const RESERVED_KEYS: ReadonlySet<string> = new Set([...Object.keys(headerShape), "type", "v"]);

/**
 * The header every event carries, flattened beside its body. Which of `loopId`, `turnId`
 * and `stepId` an event has is its type's (each event interface says: a tool event has all
 * three, a turn event no step, a session event none).
 */
export interface EventHeader {
  /** The session the event belongs to (a UUID, as every id here). */
  sessionId: string;
  /** The loop (an agent's run inside the session), when the event belongs to one. */
  loopId?: string | undefined;
  /** The turn of the loop, when the event belongs to one. */
  turnId?: string | undefined;
  /** The step of the turn (one model response and its tool calls), when the event belongs to one. */
  stepId?: string | undefined;
  /** The agent that wrote it. */
  agentName?: string | undefined;
  /** The event's own id: its message id in the journal, so a resend is stored once. */
  eventId: string;
  /** When it was created, RFC 3339 in Go's form (the writer's offset, trailing zeros dropped). */
  createdAt?: string | undefined;
  /** What caused it. */
  cause?: Cause | undefined;
  /** `public` events reach product streams; `internal` ones only trusted subscribers. */
  visibility: Visibility;
}
