import { v5 as uuidv5, v7 as uuidv7 } from "uuid";
import { z } from "zod";
import { withValueCodec } from "../wire/wire.js";

/** The zero UUID: the wire's way of saying "no id". */
export const NIL_UUID = "00000000-0000-0000-0000-000000000000";

/**
 * `value === NIL_UUID`, answered without comparing the text when two of its characters
 * already differ. The decoder's ids are slices of the event's text, and V8 compares a
 * slice with another string of the same length in its runtime (about 80 ns here), where
 * two char codes cost a few; an event's ids go through this a dozen or more times.
 */
export function isNilUuid(value: unknown): boolean {
  return typeof value === "string" && value.length === 36 && value.charCodeAt(35) === 48 && value.charCodeAt(9) === 48 && value === NIL_UUID;
}

const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A canonical lowercase, non-nil UUID: safe as a NATS subject token. */
export function isCanonicalUuid(value: unknown): value is string {
  return typeof value === "string" && CANONICAL_UUID.test(value) && !isNilUuid(value);
}

/**
 * Why `value` cannot be an id (a subject token), or undefined when it can. The nil UUID
 * has its own reason: it is well formed but means "no id".
 */
export function idProblem(value: unknown): string | undefined {
  if (isNilUuid(value)) return "is the nil UUID, which names nothing";
  return isCanonicalUuid(value) ? undefined : "is not a canonical lowercase UUID";
}

/** The namespace of the ids jetloop derives by name (`derivedId`). */
const DERIVED_NAMESPACE = "6f1c2e9a-3b7d-5c41-9e2a-7d0b5f3c8a16";

/**
 * An id derived from its parts (a name-based v5 UUID): the same parts give the same id,
 * so a request retried under one idempotency key is one command.
 */
export function derivedId(...parts: string[]): string {
  return uuidv5(parts.join("\n"), DERIVED_NAMESPACE);
}

/** A new time-ordered (v7) id: event ids sort by creation time. */
export function newId(): string {
  return uuidv7();
}

/**
 * A UUID in the canonical lowercase form the Go runtime writes. Go also reads upper-case
 * hex (and writes it back lower-case); jetloop refuses it, since ids are subject tokens
 * and one id must have one spelling.
 */
export const uuidSchema = withValueCodec(
  z
    .string()
    .regex(CANONICAL_UUID, "must be a canonical lowercase UUID")
    .refine((v) => !isNilUuid(v), "must not be the nil UUID"),
  // The nil UUID is the wire's zero for a UUID field, and only for a UUID field: a text
  // field that happens to hold the same characters is text, kept on both sides.
  {
    toWire: (v) => (isNilUuid(v) ? undefined : v),
    fromWire: (v) => (isNilUuid(v) ? undefined : v),
    // The nil UUID matches the pattern: it is the wire's "no id", read as absent.
    jsonSchema: { type: "string", pattern: CANONICAL_UUID.source, description: "a canonical lowercase UUID; the nil UUID means absent" },
    wireZero: NIL_UUID,
  },
);
