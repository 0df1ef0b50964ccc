// The trace context rule: jetloop reads a traceparent/tracestate only when it can read it
// exactly (W3C version 00, lowercase hex, non-zero ids; tracestate ≤ 512 characters, ≤ 32
// valid members, no key twice) and passes on only what it read; anything else leaves the
// delivery untraced, never failed, and is never propagated.
import fc from "fast-check";
import { headers } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { remoteContext, traceEntries } from "../../src/telemetry/propagation.js";
import { formatTraceParent, MAX_TRACESTATE_LENGTH, parseTraceParent, parseTraceState, TRACE_HEADER_ROOM } from "../../src/telemetry/traceparent.js";
import { longestTraceState, traceParentArb, traceStateArb } from "./trace-arbitraries.js";
import { trace, TraceFlags } from "@opentelemetry/api";

const VALID = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** Near misses of a valid traceparent: one character changed, cut, lengthened, upper-cased, another version, zero ids. */
const mutatedParentArb = fc.tuple(traceParentArb, fc.nat(), fc.string({ minLength: 1, maxLength: 3 }), fc.constantFrom("replace", "cut", "extend", "upper", "version", "zero-trace", "zero-span", "pad")).map(([p, i, s, how]) => {
  const v = formatTraceParent(p)!;
  const at = i % v.length;
  switch (how) {
    case "replace":
      return v.slice(0, at) + s + v.slice(at + 1);
    case "cut":
      return v.slice(0, at);
    case "extend":
      return v + s;
    case "upper":
      return v.toUpperCase();
    case "version":
      return `ff${v.slice(2)}`;
    case "zero-trace":
      return `00-${"0".repeat(32)}-${p.spanId}-01`;
    case "zero-span":
      return `00-${p.traceId}-${"0".repeat(16)}-01`;
    default:
      return ` ${v}`;
  }
});

describe("traceparent", () => {
  it("round-trips every valid context", () => {
    fc.assert(
      fc.property(traceParentArb, (p) => {
        const v = formatTraceParent(p)!;
        expect(v).toMatch(VALID);
        expect(parseTraceParent(v)).toEqual(p);
      }),
    );
  });

  it("reads nothing from a near miss or any other string, and never throws", () => {
    fc.assert(
      fc.property(fc.oneof(mutatedParentArb, fc.string({ maxLength: 80 }), fc.string({ unit: "binary", maxLength: 80 })), (v) => {
        const p = parseTraceParent(v);
        if (p !== undefined) {
          // Only an exact version-00 value with non-zero ids is read, and it reads back to itself.
          expect(v).toMatch(VALID);
          expect(formatTraceParent(p)).toBe(v);
        }
      }),
    );
  });

  it("refuses zero ids and ids of the wrong shape when writing", () => {
    expect(formatTraceParent({ traceId: "0".repeat(32), spanId: "1".repeat(16), traceFlags: 1 })).toBeUndefined();
    expect(formatTraceParent({ traceId: "A".repeat(32), spanId: "1".repeat(16), traceFlags: 1 })).toBeUndefined();
    expect(formatTraceParent({ traceId: "a".repeat(31), spanId: "1".repeat(16), traceFlags: 1 })).toBeUndefined();
  });
});

describe("tracestate", () => {
  it("keeps every valid list as it is", () => {
    fc.assert(
      fc.property(traceStateArb, (s) => {
        expect(parseTraceState(s)).toBe(s);
      }),
    );
    expect(parseTraceState(longestTraceState)).toBe(longestTraceState);
  });

  it("passes on nothing longer than 512 characters, with a key twice, or a malformed member; never throws", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 700 }), traceStateArb.map((s) => `${s},${s}`), traceStateArb.map((s) => `${s},Bad=1`), fc.constant(`${longestTraceState}x`)), (s) => {
        const out = parseTraceState(s);
        if (out === undefined) return;
        expect(out.length).toBeLessThanOrEqual(MAX_TRACESTATE_LENGTH);
        expect(s.length).toBeLessThanOrEqual(MAX_TRACESTATE_LENGTH);
        expect(parseTraceState(out)).toBe(out);
      }),
    );
    expect(parseTraceState(`${longestTraceState}x`)).toBeUndefined();
    expect(parseTraceState("a=1,a=2")).toBeUndefined();
  });
});

describe("headers of a received message", () => {
  const carrier = (entries: [string, string][]) => {
    const h = headers();
    for (const [k, v] of entries) h.append(k, v);
    return { headers: h };
  };

  it("give the context exactly when the traceparent is valid and single; a bad tracestate is dropped, not the context", () => {
    fc.assert(
      fc.property(
        fc.oneof(traceParentArb.map((p) => formatTraceParent(p)!), mutatedParentArb),
        fc.option(fc.oneof(traceStateArb, fc.string({ maxLength: 600 })), { nil: undefined }),
        fc.boolean(),
        (parent, state, twice) => {
          const entries: [string, string][] = [["traceparent", parent]];
          if (twice) entries.push(["traceparent", parent]);
          if (state !== undefined) entries.push(["tracestate", state]);
          const sc = remoteContext(carrier(entries));
          if (twice || parseTraceParent(parent.trim()) === undefined) {
            expect(sc).toBeUndefined();
            return;
          }
          expect(sc).toMatchObject({ ...parseTraceParent(parent.trim()), isRemote: true });
          expect(sc!.traceState?.serialize()).toBe(parseTraceState(state?.trim()));
        },
      ),
    );
    expect(remoteContext(undefined)).toBeUndefined();
    expect(remoteContext({ headers: undefined })).toBeUndefined();
  });

  it("that a publish writes always fit the trace header room", () => {
    fc.assert(
      fc.property(traceParentArb, fc.option(fc.oneof(traceStateArb, fc.constant(longestTraceState), fc.string({ maxLength: 1000 })), { nil: undefined }), (p, state) => {
        const entries = traceEntries({ ...p, traceState: state === undefined ? undefined : { serialize: () => state } as never });
        const bytes = entries.reduce((n, [k, v]) => n + k.length + 2 + v.length + 2, 0);
        expect(bytes).toBeLessThanOrEqual(TRACE_HEADER_ROOM);
        expect(entries[0]![1]).toBe(formatTraceParent(p));
      }),
    );
    expect(traceEntries(trace.wrapSpanContext({ traceId: "0".repeat(32), spanId: "0".repeat(16), traceFlags: TraceFlags.NONE }).spanContext())).toEqual([]);
  });
});
