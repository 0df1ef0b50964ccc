// Adversary attack on the header-room rule with trace context: an event at exactly the
// codec's cap, published under a context whose tracestate is the longest jetloop passes on
// (512 characters) and with the longest fence value, still fits max_payload with every
// header on a real nats-server; one byte more is the codec's EventEncodeError, never the
// server's MessageTooLargeError. Sizes around the cap are generated, traced or not.
import { context, createTraceState, type SpanContext, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, EventEncodeError, type Jetloop, MessageTooLargeError, marshalEvent, newId, PublishError } from "../../src/index.js";
import { supports } from "../../src/subjects/server-features.js";
import { journalHeaderRoom } from "../../src/publish/journal-writer.js";
import { MAX_TRACESTATE_LENGTH } from "../../src/telemetry/traceparent.js";
import { natsServerFlavor, natsServerVersion, uniqueNamespace } from "../harness/context.js";
import { startServer, type NatsServer } from "../harness/server.js";

const FENCING = natsServerFlavor() === "external" || supports(natsServerVersion(), "fencing");
const MAX_PAYLOAD = 2048;
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const longest = `a=${"x".repeat(256)},b=${"y".repeat(MAX_TRACESTATE_LENGTH - 258 - 3)}`;
const remote: SpanContext = { traceId: "ab".repeat(16), spanId: "cd".repeat(8), traceFlags: 1, isRemote: true, traceState: createTraceState(longest) };
const contextManager = new AsyncLocalStorageContextManager().enable();
let server: NatsServer;
let bus: Jetloop;

beforeAll(async () => {
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(contextManager);
  server = await startServer({ configText: `max_payload: ${MAX_PAYLOAD}` });
  bus = await connect({ servers: server.url, namespace: uniqueNamespace() });
  await bus.provision();
});
afterAll(async () => {
  await bus?.close();
  await server?.close();
  await provider.shutdown();
  trace.disable();
  context.disable();
});

/** A PermissionDecided whose encoding is exactly `size` bytes. */
function eventOfSize(size: number) {
  const c = { sessionId: newId(), loopId: newId(), turnId: newId(), stepId: newId(), toolExecutionId: newId(), effect: "approve" as const, createdAt: "2026-11-30T10:00:00.123456789Z" };
  const base = marshalEvent(createEvent("PermissionDecided", { ...c, reason: "x" })).length - 1;
  const e = createEvent("PermissionDecided", { ...c, reason: "x".repeat(size - base) });
  expect(marshalEvent(e).length).toBe(size);
  return e;
}

describe("an event at the size cap with the longest trace context", () => {
  it("fits max_payload with every header; past the cap the codec refuses it", async () => {
    expect(createTraceState(longest).serialize()).toBe(longest);
    const cap = MAX_PAYLOAD - journalHeaderRoom(bus.stream, bus.namespace);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: -3, max: 3 }), fc.boolean(), fc.boolean(), async (delta, traced, fenced) => {
        exporter.reset();
        const size = cap + delta;
        // The longest fence value: a sequence the stream never reaches (a conflict, decided after the size).
        const options = fenced && FENCING ? { expectedLastSeq: Number.MAX_SAFE_INTEGER } : {};
        const send = () => bus.publish(eventOfSize(size), options).then((r) => r, (e: unknown) => e as Error);
        const outcome = traced ? await context.with(trace.setSpanContext(context.active(), remote), send) : await send();
        expect(outcome).not.toBeInstanceOf(MessageTooLargeError);
        if (size > cap) {
          expect(outcome).toBeInstanceOf(EventEncodeError);
          return;
        }
        if (options.expectedLastSeq !== undefined) expect(outcome).toMatchObject({ code: "PUBLISH_CONFLICT" });
        else expect(outcome).not.toBeInstanceOf(PublishError);
        expect(outcome).not.toBeInstanceOf(EventEncodeError);
        if (traced) {
          // The trace headers went at their longest: the producer span carries the tracestate.
          const [span] = exporter.getFinishedSpans();
          expect(span?.spanContext().traceState?.serialize()).toBe(longest);
          expect(span?.spanContext().traceId).toBe(remote.traceId);
        }
      }),
      { numRuns: 40 },
    );
  });
});
