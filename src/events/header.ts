import { z } from "zod";
import { withValueCodec } from "../codec/wire.js";
import { uuidSchema } from "./ids.js";
import { text } from "./text.js";

/** `public` events reach product streams; `internal` ones only trusted subscribers. */
export const VISIBILITIES = ["public", "internal"] as const;
export type Visibility = (typeof VISIBILITIES)[number];

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
});

/** Who caused an event: 0 the machine, 1 a user (the runtime's uint8; other values are kept). */
export const AGENCY_MACHINE = 0;
export const AGENCY_USER = 1;
export const agencySchema = z.number().int().min(0).max(255);

/** What caused an event: a command, another event, a tool call, and where it happened. */
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
export type Cause = z.input<typeof causeSchema>;

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
 * time both runtimes read and write the same way: RFC 3339 as Go's time.Parse reads it (a
 * fraction after '.' or ',', of any length; a numeric offset with a colon, or Z). Go reads
 * 2024-02-30 and 24:00:00 as errors and so does this; it reads an offset of +24:00 but
 * cannot write it back, so jetloop refuses that too. Parsed in place: this runs on every
 * publish and every delivery.
 */
export function goTimestamp(v: string): string | undefined {
  if (v === lastValid) return v;
  const n = v.length;
  if (n < 20 || v[4] !== "-" || v[7] !== "-" || v[10] !== "T" || v[13] !== ":" || v[16] !== ":") return undefined;
  const year = digitsAt(v, 0, 4);
  const month = digitsAt(v, 5, 2);
  const day = digitsAt(v, 8, 2);
  const hour = digitsAt(v, 11, 2);
  const minute = digitsAt(v, 14, 2);
  const second = digitsAt(v, 17, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return undefined;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  if (day > (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!)) return undefined;
  let i = 19;
  let end = i; // of the fraction digits kept
  let canonical = true;
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
    if (oh < 0 || om < 0 || oh > 23 || om > 59) return undefined;
    zone = oh === 0 && om === 0 ? "Z" : v.slice(i);
    if (zone === "Z") canonical = false;
  } else return undefined;
  const out = canonical ? v : `${v.slice(0, 19)}${end > 20 ? `.${v.slice(20, end)}` : ""}${zone}`;
  lastValid = out;
  return out;
}

function timestampToWire(v: unknown): unknown {
  if (typeof v !== "string") return v;
  const t = goTimestamp(v);
  return t === ZERO_TIME ? undefined : (t ?? v);
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
  { toWire: timestampToWire, fromWire: timestampToWire, readsAs: "quoted" },
);

export const COORDINATES = ["loopId", "turnId", "stepId"] as const;
export type Coordinate = (typeof COORDINATES)[number];

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

export type EventHeader = z.output<z.ZodObject<typeof headerShape>>;
