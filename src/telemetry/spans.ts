/**
 * The spans jetloop starts (README.md here lists them): a producer span per publish, a
 * consumer span per delivery, client and server spans around commands. Every function is
 * a no-op (no span, no header, no allocation beyond the call) without an SDK.
 */
import type { Attributes, Context, Span, SpanContext } from "@opentelemetry/api";
import { headers as natsHeaders, type Msg, type MsgHdrs } from "@nats-io/transport-node";
import { api, tracer } from "./otel.js";
import { type DeliveryKind, recordConsumerPending, recordDelivery, recordParkedReplayed } from "./metrics.js";
import { type HeaderCarrier, NO_TRACE, remoteContext, setTraceHeaders, type TraceEntries, traceEntries } from "./propagation.js";

const SYSTEM = "nats";

/** A publish in progress: the headers to send and how to end its span. */
export interface PublishTrace {
  readonly entries: TraceEntries;
  end(outcome: { readonly journalSeq: number; readonly duplicate: boolean } | Error): void;
}

const UNTRACED: PublishTrace = { entries: NO_TRACE, end: () => undefined };

/**
 * Starts the producer span of one publish (child of the active context) and returns the
 * W3C headers of its context. Attributes: the event's type and class, its subject (ids
 * only) and event id; never its content.
 */
export function startPublish(subject: string, type: string, eventClass: "enduring" | "ephemeral", eventId: string): PublishTrace {
  const t = tracer();
  if (t === undefined) return UNTRACED;
  const span = t.startSpan(
    `publish ${type}`,
    {
      kind: api!.SpanKind.PRODUCER,
      attributes: {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "send",
        "messaging.destination.name": subject,
        "messaging.message.id": eventId,
        "jetloop.event.type": type,
        "jetloop.event.class": eventClass,
      },
    },
    api!.context.active(),
  );
  return {
    entries: traceEntries(span.spanContext()),
    end: (outcome) => {
      if (outcome instanceof Error) failed(span, outcome);
      else span.setAttributes({ "jetloop.journal_seq": outcome.journalSeq, "jetloop.duplicate": outcome.duplicate });
      span.end();
    },
  };
}

/** An error on a span: its type and stable code, not its message (which may quote input). */
function failed(span: Span, e: unknown): void {
  const code = (e as { code?: unknown }).code;
  span.setAttribute("error.type", typeof code === "string" ? code : ((e as Error)?.name ?? "Error"));
  span.setStatus({ code: api!.SpanStatusCode.ERROR });
}

interface Traced {
  /** The receive span's context: what the subscriber's work continues. */
  readonly context: Context;
  /** The context the event was published under (as its headers carried it). */
  readonly remote: SpanContext | undefined;
}

const traced = new WeakMap<object, Traced>();
/** Feed messages (decoded once for all viewers) with the context their headers carried. */
const feedContexts = new WeakMap<object, SpanContext>();

/** Remembers the trace context of a feed message (`message`, parsed from `msg`) for the deliveries made from it. */
export function noteFeedMessage<M extends object>(message: M | undefined, msg: HeaderCarrier): M | undefined {
  if (message !== undefined && tracer() !== undefined) {
    const remote = remoteContext(msg);
    if (remote !== undefined) feedContexts.set(message, remote);
  }
  return message;
}

interface DeliveryShape {
  readonly event: unknown;
  readonly journalSeq: number;
  readonly subject: string;
  readonly replayed?: boolean;
}

interface JetStreamInfo {
  readonly info?: { readonly pending?: number; readonly consumer?: string };
}

/**
 * A delivery as a source hands it to its subscription: counted by kind, and with an SDK,
 * a consumer span (`receive <type>`) linked to the publish's context — its child too for a
 * durable delivery (one handler's work continues one publish), a link only for the feed
 * and previews (every viewer receives it). `carrier`: the message, or the feed message
 * noted by noteFeedMessage. Undefined (nothing delivered) passes through.
 */
export function tracedDelivery<D extends DeliveryShape | undefined>(d: D, kind: DeliveryKind, carrier: (HeaderCarrier & JetStreamInfo) | object | undefined): D {
  if (d === undefined) return d;
  recordDelivery(kind);
  if (kind === "durable") {
    const info = (carrier as JetStreamInfo | undefined)?.info;
    if (d.replayed === true) recordParkedReplayed();
    else if (info?.consumer !== undefined && typeof info.pending === "number") recordConsumerPending(info.consumer, info.pending);
  }
  const t = tracer();
  if (t === undefined) return d;
  const remote = carrier === undefined ? undefined : (feedContexts.get(carrier) ?? remoteContext(carrier));
  const o = api!;
  const parent = kind === "durable" && remote !== undefined ? o.trace.setSpanContext(o.ROOT_CONTEXT, remote) : o.ROOT_CONTEXT;
  const type = String((d.event as { type?: unknown }).type);
  const attributes: Attributes = {
    "messaging.system": SYSTEM,
    "messaging.operation.type": "receive",
    "messaging.destination.name": d.subject,
    "jetloop.event.type": type,
    "jetloop.subscription.kind": kind,
    "jetloop.journal_seq": d.journalSeq,
  };
  const span = t.startSpan(`receive ${type}`, { kind: o.SpanKind.CONSUMER, attributes, links: remote === undefined ? [] : [{ context: remote }] }, parent);
  span.end();
  traced.set(d, { context: o.trace.setSpan(o.ROOT_CONTEXT, span), remote });
  return d;
}

/**
 * The trace context of a delivery (its receive span), for the work it starts: run that
 * work in `context.with(deliveryContext(d), …)` or `withDelivery(d, …)` and what it
 * publishes or answers joins the trace. Undefined without an OpenTelemetry SDK.
 */
export function deliveryContext(d: object): Context | undefined {
  return traced.get(d)?.context;
}

/** The context the delivered event was published under, if its headers carried one. */
export function publishedContext(d: object): SpanContext | undefined {
  return traced.get(d)?.remote;
}

/** Runs `fn` in the delivery's trace context (needs the SDK's context manager); just runs it without one. */
export function withDelivery<R>(d: object, fn: () => R): R {
  const ctx = traced.get(d)?.context;
  return ctx === undefined ? fn() : api!.context.with(ctx, fn);
}

/**
 * A command request (a gate answer, input, interrupt) with a client span, its context in
 * the request's headers for the server to continue. `send` gets the headers to pass
 * (undefined without an SDK).
 */
export async function tracedRequest<R>(command: string, subject: string, send: (headers: MsgHdrs | undefined) => Promise<R>): Promise<R> {
  const t = tracer();
  if (t === undefined) return send(undefined);
  const o = api!;
  const span = t.startSpan(`request ${command}`, { kind: o.SpanKind.CLIENT, attributes: { "messaging.system": SYSTEM, "messaging.destination.name": subject, "jetloop.command": command } }, o.context.active());
  try {
    return await o.context.with(o.trace.setSpan(o.context.active(), span), () => send(setTraceHeaders(natsHeaders(), traceEntries(span.spanContext()))));
  } catch (e) {
    failed(span, e);
    throw e;
  } finally {
    span.end();
  }
}

/**
 * Serves one command in a server span, the child of the context its request carried (the
 * answerer's): what the server publishes meanwhile (the decision, the resolution) joins
 * the answerer's trace.
 */
export async function tracedServe<R>(command: string, msg: Msg, serve: () => Promise<R>): Promise<R> {
  const t = tracer();
  if (t === undefined) return serve();
  const o = api!;
  const remote = remoteContext(msg);
  const parent = remote === undefined ? o.ROOT_CONTEXT : o.trace.setSpanContext(o.ROOT_CONTEXT, remote);
  const span = t.startSpan(`serve ${command}`, { kind: o.SpanKind.SERVER, attributes: { "messaging.system": SYSTEM, "messaging.destination.name": msg.subject, "jetloop.command": command } }, parent);
  try {
    return await o.context.with(o.trace.setSpan(parent, span), serve);
  } catch (e) {
    failed(span, e);
    throw e;
  } finally {
    span.end();
  }
}
