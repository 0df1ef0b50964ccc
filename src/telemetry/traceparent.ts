/**
 * W3C Trace Context (`traceparent`, `tracestate`) read and written by jetloop itself, not
 * by a registered propagator: what travels in a message header must be the same whatever
 * the application configured, and a header jetloop cannot read exactly is ignored, never
 * half-read or passed on.
 */

/** The header names, as the W3C spelling and NATS.js's case-sensitive lookup want them. */
export const TRACEPARENT = "traceparent";
export const TRACESTATE = "tracestate";

/** `00-<32 hex>-<16 hex>-<2 hex>`: the only version-00 length. */
export const TRACEPARENT_LENGTH = 55;
/** The longest `tracestate` jetloop writes or accepts (W3C: carriers keep at least 512). */
export const MAX_TRACESTATE_LENGTH = 512;
/** W3C: at most 32 list members. */
const MAX_TRACESTATE_MEMBERS = 32;

/**
 * The most bytes the two trace headers add to a NATS header block (`key: value\r\n` each):
 * part of every journal append's and preview's header room, so an event at the codec's cap
 * still fits max_payload with its trace context.
 */
export const TRACE_HEADER_ROOM = TRACEPARENT.length + 2 + TRACEPARENT_LENGTH + 2 + (TRACESTATE.length + 2 + MAX_TRACESTATE_LENGTH + 2);

export interface TraceParent {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
}

const TRACEPARENT_RE = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = "0".repeat(32);
const ZERO_SPAN = "0".repeat(16);

/**
 * A version-00 `traceparent`, or undefined: wrong length, case, version, an all-zero id,
 * anything else. (A future version's longer form is not read: jetloop forwards only what
 * it can read exactly.)
 */
export function parseTraceParent(value: string | undefined): TraceParent | undefined {
  if (value === undefined || value.length !== TRACEPARENT_LENGTH) return undefined;
  const m = TRACEPARENT_RE.exec(value);
  if (m === null || m[1] === ZERO_TRACE || m[2] === ZERO_SPAN) return undefined;
  return { traceId: m[1]!, spanId: m[2]!, traceFlags: parseInt(m[3]!, 16) };
}

/** The header value of a valid context; undefined for ids that are not lowercase hex of the right length or are all zero. */
export function formatTraceParent(p: TraceParent): string | undefined {
  const flags = (p.traceFlags & 0xff).toString(16).padStart(2, "0");
  const value = `00-${p.traceId}-${p.spanId}-${flags}`;
  return parseTraceParent(value) === undefined ? undefined : value;
}

// W3C list member: key "=" value. key: lcalpha then [a-z0-9_\-*/], up to 256, or
// tenant@system; value: printable ASCII without "," and "=", not ending in a space.
const KEY = String.raw`(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})`;
const VALUE = String.raw`[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]`;
const MEMBER_RE = new RegExp(`^${KEY}=${VALUE}$`);
const OWS_EDGES = /^[ \t]+|[ \t]+$/g;

/**
 * A `tracestate` jetloop passes on: at most 512 characters and 32 members, each a valid
 * `key=value`, no key twice; empty members (",,") are allowed by W3C and dropped here.
 * Anything else is undefined (the whole header is left out, the traceparent still goes).
 */
export function parseTraceState(value: string | undefined): string | undefined {
  if (value === undefined || value.length > MAX_TRACESTATE_LENGTH) return undefined;
  const members: string[] = [];
  const keys = new Set<string>();
  for (const raw of value.split(",")) {
    // W3C OWS is space and tab only: other whitespace (NBSP, BOM, ...) is not trimmed into a valid member.
    const member = raw.replace(OWS_EDGES, "");
    if (member === "") continue;
    if (!MEMBER_RE.test(member)) return undefined;
    const key = member.slice(0, member.indexOf("="));
    if (keys.has(key)) return undefined;
    keys.add(key);
    members.push(member);
  }
  if (members.length === 0 || members.length > MAX_TRACESTATE_MEMBERS) return undefined;
  return members.join(",");
}
