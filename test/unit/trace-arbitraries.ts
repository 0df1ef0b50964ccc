/** fast-check arbitraries for W3C trace context: valid values, and the whole family of near misses. */
import fc from "fast-check";
import { MAX_TRACESTATE_LENGTH } from "../../src/telemetry/traceparent.js";

const hex = (n: number) => fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: n, maxLength: n });

export const traceIdArb = hex(32).filter((s) => /[1-9a-f]/.test(s));
export const spanIdArb = hex(16).filter((s) => /[1-9a-f]/.test(s));
export const flagsArb = fc.integer({ min: 0, max: 255 });

export const traceParentArb = fc.record({ traceId: traceIdArb, spanId: spanIdArb, traceFlags: flagsArb });

const lc = "abcdefghijklmnopqrstuvwxyz";
const keyTail = `${lc}0123456789_-*/`;
const keyArb = fc.oneof(
  fc.tuple(fc.constantFrom(...lc), fc.string({ unit: fc.constantFrom(...keyTail), maxLength: 20 })).map(([a, b]) => a + b),
  fc
    .tuple(fc.constantFrom(...`${lc}0123456789`), fc.string({ unit: fc.constantFrom(...keyTail), maxLength: 10 }), fc.constantFrom(...lc), fc.string({ unit: fc.constantFrom(...keyTail), maxLength: 8 }))
    .map(([a, b, c, d]) => `${a}${b}@${c}${d}`),
);
/** Printable ASCII but "," and "="; the last one not a space. */
const valueChars = Array.from({ length: 0x7e - 0x20 + 1 }, (_, i) => String.fromCharCode(0x20 + i)).filter((c) => c !== "," && c !== "=");
const valueArb = fc
  .tuple(fc.string({ unit: fc.constantFrom(...valueChars), maxLength: 30 }), fc.constantFrom(...valueChars.filter((c) => c !== " ")))
  .map(([a, b]) => a + b);

/** A valid tracestate (distinct keys, at most 32 members, at most 512 characters), as jetloop writes it. */
export const traceStateArb = fc
  .uniqueArray(fc.tuple(keyArb, valueArb), { minLength: 1, maxLength: 32, selector: ([k]) => k })
  .map((members) => members.map(([k, v]) => `${k}=${v}`).join(","))
  .filter((s) => s.length <= MAX_TRACESTATE_LENGTH);

/** A valid tracestate of exactly 512 characters: the longest a header can carry. */
export const longestTraceState = `a=${"x".repeat(256)},b=${"y".repeat(MAX_TRACESTATE_LENGTH - 258 - 3)}`;
