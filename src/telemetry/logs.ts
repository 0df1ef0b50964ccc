/**
 * Logs that join traces: pino lines carry `trace_id` and `span_id` while a span is active,
 * and a connection's state changes are one line each.
 */
import type { Logger } from "pino";
import { api } from "./otel.js";
import { recordConnectionStatus } from "./metrics.js";

/**
 * A pino `mixin`: the active span's ids, or nothing. jetloop's default logger has it; an
 * application passing its own logger adds `mixin: traceLogFields` to join its lines too.
 * A new object each time: pino merges the line's fields into what the mixin returns.
 */
export function traceLogFields(): { trace_id?: string; span_id?: string } {
  const span = api?.trace.getActiveSpan();
  if (span === undefined) return {};
  const sc = span.spanContext();
  return api!.trace.isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
}

/** NATS.js status types that are connection state changes, by the name jetloop logs and counts. */
const STATE_CHANGES: Readonly<Record<string, string>> = { disconnect: "disconnect", reconnect: "reconnect", ldm: "ldm", staleConnection: "stale_connection" };

/** One line (and one count) per connection state change; other statuses are not logged here. */
export function logConnectionStatus(log: Logger, s: { readonly type: string }): void {
  const status = STATE_CHANGES[s.type];
  if (status === undefined) return;
  recordConnectionStatus(status);
  log.info({ status }, "connection status");
}
