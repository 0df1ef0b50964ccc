/**
 * Trace context in and out of NATS headers: the entries a publish adds, and the remote
 * context a received message carries. Reading never throws and never passes on what it
 * cannot read exactly (traceparent.ts): a malformed or oversized header leaves the
 * delivery untraced, it does not fail it.
 */
import type { SpanContext } from "@opentelemetry/api";
import type { MsgHdrs } from "@nats-io/transport-node";
import { api } from "./otel.js";
import { formatTraceParent, parseTraceParent, parseTraceState, TRACEPARENT, TRACESTATE } from "./traceparent.js";

/** Header entries (canonical key, checked value) for a journal append or a preview. */
export type TraceEntries = readonly (readonly [string, string])[];

export const NO_TRACE: TraceEntries = Object.freeze([]);

/** The W3C headers of a span's context; none for an invalid one. A tracestate too long or malformed is left out. */
export function traceEntries(sc: SpanContext): TraceEntries {
  const parent = formatTraceParent(sc);
  if (parent === undefined) return NO_TRACE;
  const state = parseTraceState(sc.traceState?.serialize());
  return state === undefined ? [[TRACEPARENT, parent]] : [[TRACEPARENT, parent], [TRACESTATE, state]];
}

/** The entries as NATS.js headers (for a request). */
export function setTraceHeaders(h: MsgHdrs, entries: TraceEntries): MsgHdrs {
  for (const [k, v] of entries) h.set(k, v);
  return h;
}

/** Something that may carry headers: a core message, a JetStream message. */
export interface HeaderCarrier {
  readonly headers?: MsgHdrs | undefined;
}

/** The remote span context in `carrier`'s headers, or undefined: none, malformed, unreadable. */
export function remoteContext(carrier: HeaderCarrier | undefined): SpanContext | undefined {
  let parent: string | undefined;
  let state: string | undefined;
  try {
    const h = carrier?.headers;
    if (h === undefined || !h.has(TRACEPARENT)) return undefined;
    parent = h.values(TRACEPARENT).length === 1 ? h.get(TRACEPARENT) : undefined;
    state = h.has(TRACESTATE) && h.values(TRACESTATE).length === 1 ? h.get(TRACESTATE) : undefined;
  } catch {
    return undefined; // a header block NATS.js cannot read
  }
  return spanContextOf(parent, state);
}

/** A remote span context from the two header values, or undefined when the traceparent is not exactly readable. */
export function spanContextOf(parent: string | undefined, state: string | undefined): SpanContext | undefined {
  const p = parseTraceParent(parent);
  if (p === undefined || api === undefined) return undefined;
  const s = parseTraceState(state);
  return { traceId: p.traceId, spanId: p.spanId, traceFlags: p.traceFlags, isRemote: true, traceState: s === undefined ? undefined : api.createTraceState(s) };
}
