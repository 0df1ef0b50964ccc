/**
 * Every metric jetloop records: one registry of names, kinds, units and attribute keys
 * (the dashboard in deploy/ and its test read it), and the functions the library calls.
 * Attribute values come from small fixed sets (an outcome, a kind, a route, a reason) or
 * a durable's name: never an id, a subject, an event's content or a token.
 */
import type { Attributes, ObservableResult } from "@opentelemetry/api";
import { instrument } from "./otel.js";

/** The OpenTelemetry instrument kind of a metric. */
export type MetricKind = "counter" | "histogram" | "gauge" | "observable_gauge" | "observable_counter";

/** One metric jetloop records through OpenTelemetry: its name, kind, unit, attributes and description. */
export interface MetricDefinition {
  readonly name: string;
  readonly kind: MetricKind;
  readonly unit: string;
  readonly description: string;
  readonly attributes: readonly string[];
}

const define = <const N extends string>(name: N, kind: MetricKind, unit: string, attributes: readonly string[], description: string) =>
  ({ name, kind, unit, attributes, description }) satisfies MetricDefinition;

/** Every metric jetloop records, by key: the catalogue a dashboard or an alert is written against (docs/operate.md). */
export const METRICS = {
  appends: define("jetloop.appends", "counter", "{append}", ["outcome"], "Journal appends settled, by outcome: ok, duplicate, conflict, failed"),
  appendRetries: define("jetloop.append.retries", "counter", "{retry}", [], "Journal appends resent after an ambiguous ack (timeout, no responders, JetStream 503)"),
  appendDuration: define("jetloop.append.duration", "histogram", "s", ["outcome"], "Time from the first send of a journal append to its settlement"),
  previews: define("jetloop.previews", "counter", "{preview}", ["outcome"], "Previews published, by outcome: confirmed, unconfirmed (fire-and-forget), failed"),
  previewsDropped: define("jetloop.previews.dropped", "counter", "{preview}", [], "Previews dropped from a subscription's queue for a slow reader"),
  deliveries: define("jetloop.deliveries", "counter", "{delivery}", ["kind"], "Deliveries taken into a subscription's queue, by subscription kind: durable, feed, preview (a preview dropped later for a slow reader counts here and in jetloop.previews.dropped)"),
  poison: define("jetloop.poison", "counter", "{message}", ["kind"], "Malformed messages reported and skipped (a durable parks them), by subscription kind"),
  parked: define("jetloop.parked", "counter", "{delivery}", ["reason"], "Durable deliveries copied to the parked store, by reason"),
  parkedReplayed: define("jetloop.parked.replayed", "counter", "{delivery}", [], "Deliveries read back from the parked store (parked replay)"),
  feedRepairs: define("jetloop.feed.repairs", "counter", "{repair}", ["reason"], "Journal reads a feed subscription made to close a possible gap, by reason: gap, reconnect, leader_elected, slow_reader"),
  consumerPending: define("jetloop.consumer.pending", "gauge", "{message}", ["durable"], "Messages the server still holds for a durable consumer beyond the one delivered (its lag), as of the latest delivery"),
  connectionStatus: define("jetloop.connection.status_changes", "counter", "{change}", ["status"], "Connection state changes: disconnect, reconnect, ldm, stale_connection"),
  gatewayRequests: define("jetloop.gateway.requests", "counter", "{request}", ["route", "status"], "Gateway requests answered, by route and HTTP status (an SSE stream counts when it ends)"),
  gatewayDuration: define("jetloop.gateway.request.duration", "histogram", "s", ["route"], "Gateway request time (an SSE stream: its whole life)"),
  sseClients: define("jetloop.gateway.sse.clients", "observable_gauge", "{client}", [], "Open SSE streams"),
  sseBytes: define("jetloop.gateway.sse.bytes", "counter", "By", [], "Bytes of SSE frames written (heartbeats excluded)"),
  ssePreviewsDropped: define("jetloop.gateway.sse.previews_dropped", "observable_counter", "{preview}", [], "Previews the gateway dropped for an SSE client whose socket was backed up"),
  sseSlowDisconnects: define("jetloop.gateway.sse.slow_disconnects", "observable_counter", "{client}", [], "SSE clients disconnected for not draining in time"),
  attachSessions: define("jetloop.attach.sessions", "observable_gauge", "{session}", ["state"], "Go runtime sessions an attach follows, by state: starting, catching_up, following, retrying, stopped"),
  attachLag: define("jetloop.attach.lag", "observable_gauge", "{record}", [], "Go ledger records an attach has seen and not yet handled, summed over its sessions (a session's own lag: jetloop attach's status)"),
  attachRecords: define("jetloop.attach.records", "counter", "{record}", ["outcome"], "Go ledger records an attach handled, by outcome: appended, kept_out, parked"),
  attachErrors: define("jetloop.attach.errors", "counter", "{error}", [], "Failures an attach retried (the Go side or the journal unreachable, an append refused): each a session's read again from the journal"),
  attachRole: define("jetloop.attach.role", "observable_gauge", "{attach}", ["role"], "Attaches of this process by role: active (holds the namespace's lease, or runs without one), standby (another attach holds the lease)"),
} as const;

/**
 * The Prometheus series of a metric as the OpenTelemetry Prometheus exporter writes them:
 * dots to underscores, `_total` on counters, `_bucket`/`_sum`/`_count` for a histogram
 * (the exporter adds no unit suffix).
 */
export function prometheusSeries(d: MetricDefinition): string[] {
  const base = d.name.replace(/[^a-zA-Z0-9_]/g, "_");
  if (d.kind === "counter" || d.kind === "observable_counter") return [`${base}_total`];
  if (d.kind === "histogram") return [`${base}_bucket`, `${base}_sum`, `${base}_count`];
  return [base];
}

export type MetricName = (typeof METRICS)[keyof typeof METRICS]["name"];

type Def = MetricDefinition;
const counter = (d: Def) => instrument(d.name, (m) => m.createCounter(d.name, { unit: d.unit, description: d.description }));
const histogram = (d: Def) => instrument(d.name, (m) => m.createHistogram(d.name, { unit: d.unit, description: d.description }));
const gauge = (d: Def) => instrument(d.name, (m) => m.createGauge(d.name, { unit: d.unit, description: d.description }));

// Attribute objects for the fixed values, made once: a record call allocates nothing.
const attrs = new Map<string, Attributes>();
function attr(key: string, value: string): Attributes {
  const k = `${key}\u0000${value}`;
  let a = attrs.get(k);
  if (a === undefined) attrs.set(k, (a = Object.freeze({ [key]: value })));
  return a;
}

export type AppendOutcome = "ok" | "duplicate" | "conflict" | "failed";

/** One journal append settled after `attempts` sends, `seconds` after its first. */
export function recordAppend(outcome: AppendOutcome, attempts: number, seconds: number): void {
  const a = attr("outcome", outcome);
  counter(METRICS.appends)?.add(1, a);
  histogram(METRICS.appendDuration)?.record(seconds, a);
  if (attempts > 1) counter(METRICS.appendRetries)?.add(attempts - 1);
}

export function recordPreview(outcome: "confirmed" | "unconfirmed" | "failed"): void {
  counter(METRICS.previews)?.add(1, attr("outcome", outcome));
}

export function recordPreviewDropped(): void {
  counter(METRICS.previewsDropped)?.add(1);
}

export type DeliveryKind = "durable" | "feed" | "preview";

export function recordDelivery(kind: DeliveryKind): void {
  counter(METRICS.deliveries)?.add(1, attr("kind", kind));
}

export function recordParkedReplayed(): void {
  counter(METRICS.parkedReplayed)?.add(1);
}

export function recordConsumerPending(durable: string, pending: number): void {
  gauge(METRICS.consumerPending)?.record(pending, attr("durable", durable));
}

export function recordConnectionStatus(status: string): void {
  counter(METRICS.connectionStatus)?.add(1, attr("status", status));
}

/** What a subscription reports (options.ts SubscriptionReport), as metrics; `kind`: the subscription's. */
export function recordReport(r: { readonly kind: string; readonly reason?: unknown }, kind: "durable" | "feed"): void {
  if (r.kind === "poison") counter(METRICS.poison)?.add(1, attr("kind", kind));
  else if (r.kind === "parked") counter(METRICS.parked)?.add(1, attr("reason", String(r.reason)));
  else if (r.kind === "gap_closed") counter(METRICS.feedRepairs)?.add(1, attr("reason", String(r.reason)));
  else if (r.kind === "dropped") recordPreviewDropped();
}

export function recordGatewayRequest(route: string, status: number, seconds: number): void {
  counter(METRICS.gatewayRequests)?.add(1, { route, status: String(status) });
  histogram(METRICS.gatewayDuration)?.record(seconds, attr("route", route));
}

export function recordSseBytes(n: number): void {
  counter(METRICS.sseBytes)?.add(n);
}

/** What the gateway's handlers count themselves, read when metrics are collected. */
interface SseCounters {
  readonly open: number;
  readonly slowDisconnects: number;
  readonly previewsDropped: number;
}

const gateways = new Set<WeakRef<SseCounters>>();

/** Makes a gateway handler's own counters observable (for as long as the handler lives). */
export function observeGateway(counters: SseCounters): void {
  gateways.add(new WeakRef(counters));
  const sum = (field: keyof SseCounters) => (o: ObservableResult) => {
    let total = 0;
    for (const ref of gateways) {
      const c = ref.deref();
      if (c === undefined) gateways.delete(ref);
      else total += c[field];
    }
    o.observe(total);
  };
  // Made once per meter provider; the callbacks sum over every live handler.
  instrument(METRICS.sseClients.name, (m) => {
    const g = m.createObservableGauge(METRICS.sseClients.name, { unit: METRICS.sseClients.unit, description: METRICS.sseClients.description });
    g.addCallback(sum("open"));
    return g;
  });
  for (const [d, field] of [
    [METRICS.sseSlowDisconnects, "slowDisconnects"],
    [METRICS.ssePreviewsDropped, "previewsDropped"],
  ] as const) {
    instrument(d.name, (m) => {
      const c = m.createObservableCounter(d.name, { unit: d.unit, description: d.description });
      c.addCallback(sum(field));
      return c;
    });
  }
}

/** What an attach's gauges read (src/attach/attach.ts). */
export interface AttachGauges {
  readonly states: () => ReadonlyMap<string, number>;
  readonly lag: () => number;
  readonly role: () => "active" | "standby";
}

// Held until the attach closes (its close() unregisters): a weak reference would let the
// gauges go while the attach still runs, since nothing else holds them.
const attaches = new Set<AttachGauges>();

/** Counts a Go ledger record an attach handled. */
export function recordAttachRecord(outcome: "appended" | "kept_out" | "parked"): void {
  counter(METRICS.attachRecords)?.add(1, attr("outcome", outcome));
}

/** Counts a failure an attach retried. */
export function recordAttachError(): void {
  counter(METRICS.attachErrors)?.add(1);
}

/** Registers an attach's gauges until the returned function is called; the callbacks sum over every open attach of the process. */
export function observeAttach(g: AttachGauges): () => void {
  attaches.add(g);
  const live = () => [...attaches];
  instrument(METRICS.attachSessions.name, (m) => {
    const gauge = m.createObservableGauge(METRICS.attachSessions.name, { unit: METRICS.attachSessions.unit, description: METRICS.attachSessions.description });
    gauge.addCallback((o) => {
      const sums = new Map<string, number>();
      for (const x of live()) for (const [state, n] of x.states()) sums.set(state, (sums.get(state) ?? 0) + n);
      for (const [state, n] of sums) o.observe(n, attr("state", state));
    });
    return gauge;
  });
  instrument(METRICS.attachLag.name, (m) => {
    const gauge = m.createObservableGauge(METRICS.attachLag.name, { unit: METRICS.attachLag.unit, description: METRICS.attachLag.description });
    gauge.addCallback((o) => o.observe(live().reduce((n, x) => n + x.lag(), 0)));
    return gauge;
  });
  instrument(METRICS.attachRole.name, (m) => {
    const gauge = m.createObservableGauge(METRICS.attachRole.name, { unit: METRICS.attachRole.unit, description: METRICS.attachRole.description });
    gauge.addCallback((o) => {
      const roles = { active: 0, standby: 0 };
      for (const x of live()) roles[x.role()]++;
      for (const [role, n] of Object.entries(roles)) o.observe(n, attr("role", role));
    });
    return gauge;
  });
  return () => attaches.delete(g);
}
