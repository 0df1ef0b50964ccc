// Adversary attack: no secret, grant token or raw tool argument reaches a span, a metric
// label or a log line. Generated secrets ride in every free-text field of an approval
// sequence (the request's summary, match and description, the answer's reason, a
// preview's result, a step's text), and in hostile trace headers a raw publisher adds
// (a traceparent jetloop cannot read, with a tracestate beside it). Everything exported
// — the in-memory span exporter, a metric reader's collection, the bus's log lines at
// debug — is scanned for each secret. Real nats-server, the OpenTelemetry SDK.
import { Writable } from "node:stream";
import { context, metrics, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { headers } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import fc from "fast-check";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, defaultRegistry, type DurableDelivery, encodeEvent, eventSubject, type JetloopEvent, type Jetloop, newId, traceLogFields, withDelivery } from "../../src/index.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";

class CollectingReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

const exporter = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const reader = new CollectingReader();
const meterProvider = new MeterProvider({ readers: [reader] });
const contextManager = new AsyncLocalStorageContextManager().enable();
let logs = "";
let bus: Jetloop;

beforeAll(async () => {
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
  context.setGlobalContextManager(contextManager);
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs += chunk.toString();
      done();
    },
  });
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace(), logger: pino({ level: "debug", mixin: traceLogFields }, sink) });
  await bus.provision();
});
afterAll(async () => {
  await bus?.close();
  await tracerProvider.shutdown();
  await meterProvider.shutdown();
  trace.disable();
  metrics.disable();
  context.disable();
});

/** Secrets as they look in the wild: API keys, bearer grants, a shell argument. */
const secretArb = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9]{24}$/).map((s) => `sk-live-${s}`),
  fc.stringMatching(/^[A-Za-z0-9_-]{20}$/).map((s) => `grant.${s}`),
  fc.stringMatching(/^[a-z0-9]{16}$/).map((s) => `--password=${s}`),
);

const journalSubject = (e: JetloopEvent & { loopId?: string }) =>
  eventSubject(bus.namespace, "journal", { sessionId: e.sessionId, loopId: e.loopId, family: defaultRegistry.get(e.type)!.family, type: e.type });

async function exported(): Promise<string> {
  const spans = exporter.getFinishedSpans().map((s) => ({
    name: s.name,
    attributes: s.attributes,
    events: s.events,
    status: s.status,
    links: s.links.map((l) => ({ ...l, context: { ...l.context, traceState: l.context.traceState?.serialize() } })),
    traceState: s.spanContext().traceState?.serialize(),
    parentTraceState: s.parentSpanContext?.traceState?.serialize(),
  }));
  const { resourceMetrics } = await reader.collect();
  return JSON.stringify({ spans, metrics: resourceMetrics.scopeMetrics }) + logs;
}

describe("secrets in every field of an approval sequence", () => {
  it("never reach a span, a metric or a log line", async () => {
    await fc.assert(
      fc.asyncProperty(secretArb, async (secret) => {
        const sessionId = newId();
        const loopId = newId();
        const coords = { turnId: newId(), stepId: newId(), toolExecutionId: newId() };
        const handler = await bus.session(sessionId).subscribeEvents({ enduring: { loops: [loopId] }, types: ["PermissionRequested"] }, { durable: `approver-${newId().slice(0, 8)}` });
        const viewer = await bus.session(sessionId).subscribeEvents({ enduring: { loops: [loopId] } }, { start: "new" });
        const gates = await bus.serveGates(sessionId, loopId);
        try {
          const handled = (async () => {
            for await (const d of handler as AsyncIterable<DurableDelivery<JetloopEvent>>) {
              await withDelivery(d, () => bus.session(sessionId).answer(loopId, { kind: "permission", toolExecutionId: coords.toolExecutionId, effect: "approve", reason: secret }));
              await d.ack();
              return;
            }
          })();
          const decision = await gates.requestPermission({ ...coords, request: { toolName: "bash", summary: secret, requirements: [{ kind: "fs.read", match: `/tmp/${secret}`, description: secret }] } });
          expect(decision.effect).toBe("approve");
          await handled;
          const all = { sessionId, loopId, ...coords };
          await bus.publish(createEvent("ToolCallCompleted", { ...all, resultPreview: secret }));
          // A hostile raw append: a traceparent jetloop cannot read, carrying the secret, and a tracestate beside it.
          const raw = createEvent("StepDone", { sessionId, loopId, turnId: coords.turnId, stepId: coords.stepId, messages: [{ role: "assistant", blocks: [{ type: "text", text: secret }] }] });
          const h = headers();
          h.set("traceparent", `00-${secret}`);
          h.set("tracestate", `k=${secret}`);
          await jetstream(bus.nc).publish(journalSubject(raw), encodeEvent(raw), { headers: h });
          for await (const d of viewer) if (d.event.eventId === raw.eventId) break;
        } finally {
          await Promise.all([gates.close(), handler.close(), viewer.close()]);
        }
        const everything = await exported();
        expect(everything.length).toBeGreaterThan(0);
        expect(everything).not.toContain(secret);
        // The scan can see: this sequence's spans are in it (their subjects name the session).
        expect(everything).toContain(sessionId);
        // Nor any id of the session in a metric label.
        const { resourceMetrics } = await reader.collect();
        expect(JSON.stringify(resourceMetrics.scopeMetrics)).not.toContain(sessionId);
      }),
      { numRuns: 6 },
    );
    // The scan saw the sequence: spans of every kind were exported.
    const names = new Set(exporter.getFinishedSpans().map((s) => s.name));
    for (const n of ["publish PermissionRequested", "receive PermissionRequested", "request gate.answer", "serve gate.answer", "receive StepDone"]) expect(names).toContain(n);
  });
});
