/**
 * The gateway's telemetry: a server span and request metrics per route, and the SSE
 * frames' trace context. A frame's context goes out as its own comment block before it,
 * `: traceparent 00-…\n\n` — the shape of the protocol's heartbeat (`: ping\n\n`), which
 * every client of the Go runtime's SSE already skips, so the frames themselves (their
 * `event:`, `id:` and `data:` lines) stay byte for byte the runtime's.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Span } from "@opentelemetry/api";
import { api, tracer } from "./otel.js";
import { recordGatewayRequest, recordSseBytes } from "./metrics.js";
import { spanContextOf } from "./propagation.js";
import { publishedContext } from "./spans.js";
import { formatTraceParent } from "./traceparent.js";

const requests = new WeakMap<IncomingMessage, { route: string; span: Span | undefined }>();

/**
 * Handles one request in a server span (child of the request's own `traceparent`, if it
 * has a readable one) and counts it by route and status when the response closes.
 */
export function tracedHttp(req: IncomingMessage, res: ServerResponse, handle: () => Promise<void>): Promise<void> {
  const started = performance.now();
  const t = tracer();
  const o = api;
  let span: Span | undefined;
  if (t !== undefined && o !== undefined) {
    const h = req.headers;
    const remote = spanContextOf(single(h.traceparent), single(h.tracestate));
    const parent = remote === undefined ? o.ROOT_CONTEXT : o.trace.setSpanContext(o.ROOT_CONTEXT, remote);
    span = t.startSpan(`${req.method ?? "GET"}`, { kind: o.SpanKind.SERVER, attributes: { "http.request.method": req.method ?? "" } }, parent);
  }
  const entry = { route: "unmatched", span };
  requests.set(req, entry);
  res.once("close", () => {
    recordGatewayRequest(entry.route, res.statusCode, (performance.now() - started) / 1000);
    if (span !== undefined) {
      span.setAttribute("http.response.status_code", res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: api!.SpanStatusCode.ERROR });
      span.end();
    }
  });
  return span === undefined ? handle() : o!.context.with(o!.trace.setSpan(o!.context.active(), span), handle);
}

function single(v: string | string[] | undefined): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** Names the request's route (span name `GET events`, metric attribute); returns `matched` unchanged. */
export function routeOf<M extends { readonly name: string } | undefined>(req: IncomingMessage, matched: M): M {
  const entry = requests.get(req);
  if (entry !== undefined && matched !== undefined) {
    entry.route = matched.name;
    entry.span?.updateName(`${req.method ?? "GET"} ${matched.name}`);
    entry.span?.setAttribute("http.route", matched.name);
  }
  return matched;
}

/** An SSE frame as written: counted, and preceded by the published trace context when there is one. */
export function sseFrame(delivery: object, frame: string): string {
  const remote = publishedContext(delivery);
  const parent = remote === undefined ? undefined : formatTraceParent(remote);
  const out = parent === undefined ? frame : `: traceparent ${parent}\n\n${frame}`;
  recordSseBytes(Buffer.byteLength(out, "utf8")); // bytes on the wire, not UTF-16 units
  return out;
}
