import { z } from "zod";
import { withValueCodec } from "../codec/wire.js";
import { uuidSchema } from "./ids.js";
import { limits, text } from "./text.js";

/**
 * Enum fields the Go runtime writes as numbers. Anything else on the wire decodes to a
 * value the enum refuses, so validation names the field ("visibility is invalid").
 */
function numberedEnum<const T extends readonly [string, ...string[]]>(values: T) {
  return withValueCodec(z.enum(values).default(values[0] as T[0] & z.util.EnumValue), {
    toWire: (v) => {
      const i = values.indexOf(v as string);
      return i >= 0 ? i : v;
    },
    // The wire carries numbers only: a name ("internal") is as invalid there as 7 is.
    fromWire: (v) => (typeof v === "number" && Number.isInteger(v) && values[v] !== undefined ? values[v] : `wire value ${JSON.stringify(v)}`),
  });
}

/** `public` events reach product streams; `internal` ones only trusted subscribers. */
export const visibilitySchema = numberedEnum(["public", "internal"] as const);
export type Visibility = z.output<typeof visibilitySchema>;

/** Who caused an event: the machine (default) or a user. */
export const agencySchema = numberedEnum(["machine", "user"] as const);
export type Agency = z.output<typeof agencySchema>;

export const causeSchema = z
  .object({
    commandId: uuidSchema.optional(),
    eventId: uuidSchema.optional(),
    toolExecutionId: uuidSchema.optional(),
    agency: agencySchema,
    sessionId: uuidSchema.optional(),
    loopId: uuidSchema.optional(),
    turnId: uuidSchema.optional(),
    stepId: uuidSchema.optional(),
  })
  // A cause with nothing set is no cause: the wire omits it, so the model does too.
  .transform((c) => (Object.values(c).some((v) => v !== undefined && v !== "machine") ? c : undefined));
export type Cause = z.input<typeof causeSchema>;

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?Z$/;

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

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * A calendar date and a clock time that exist. Date.parse alone is not enough: it rolls
 * 2024-02-30 over to March 1 and accepts 24:00:00, both of which Go's time.Parse refuses.
 * The shape is TIMESTAMP's (checked before this); the fields are read in place, since this
 * runs on every publish and every delivery.
 */
function isRealTimestamp(v: string): boolean {
  const year = digitsAt(v, 0, 4);
  const month = digitsAt(v, 5, 2);
  const day = digitsAt(v, 8, 2);
  const hour = digitsAt(v, 11, 2);
  const minute = digitsAt(v, 14, 2);
  const second = digitsAt(v, 17, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return false;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return day <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!);
}

/** RFC 3339 in UTC with up to nanosecond fractions, as both runtimes write it. */
export const timestampSchema = z
  .string()
  .regex(TIMESTAMP, "must be an RFC 3339 UTC timestamp")
  .refine(isRealTimestamp, "must be a real date");

export const COORDINATES = ["loopId", "turnId", "stepId"] as const;
export type Coordinate = (typeof COORDINATES)[number];

/** The header fields every event carries, flattened beside its body. */
export const headerShape = {
  sessionId: uuidSchema,
  loopId: uuidSchema.optional(),
  turnId: uuidSchema.optional(),
  stepId: uuidSchema.optional(),
  agentName: text(limits.name).optional(),
  eventId: uuidSchema,
  createdAt: timestampSchema,
  cause: causeSchema.optional(),
  visibility: visibilitySchema,
};

/** Keys a body may not use: they belong to the header or the envelope. */
export const RESERVED_KEYS: ReadonlySet<string> = new Set([...Object.keys(headerShape), "type", "v"]);

export type EventHeader = z.output<z.ZodObject<typeof headerShape>>;
