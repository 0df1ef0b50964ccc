// Log lines join traces: with a span active, a line carries its trace and span ids; without
// one, nothing is added. One line per connection state change, none for other statuses.
import { Writable } from "node:stream";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logConnectionStatus, traceLogFields } from "../../src/telemetry/logs.js";

const provider = new BasicTracerProvider();
beforeAll(() => {
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});

function memoryLogger() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split("\n")) if (l !== "") lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: "info", mixin: traceLogFields }, sink), lines };
}

describe("log lines", () => {
  it("carry the active span's ids, and nothing without one (the mixin's object is pino's to merge into)", () => {
    const { log, lines } = memoryLogger();
    log.info({ a: 1 }, "outside");
    const ids = trace.getTracer("t").startActiveSpan("s", (span) => {
      log.info({ b: 2 }, "inside");
      log.info("again");
      span.end();
      return span.spanContext();
    });
    expect(lines[0]).not.toHaveProperty("trace_id");
    expect(lines[0]).toMatchObject({ a: 1 });
    expect(lines[1]).toMatchObject({ b: 2, trace_id: ids.traceId, span_id: ids.spanId });
    expect(lines[2]).toMatchObject({ trace_id: ids.traceId });
    expect(lines[2]).not.toHaveProperty("b");
  });

  it("say each connection state change once, and nothing for other statuses", () => {
    const { log, lines } = memoryLogger();
    for (const type of ["disconnect", "reconnecting", "reconnect", "ping", "update", "ldm", "staleConnection", "slowConsumer"]) logConnectionStatus(log, { type });
    expect(lines.map((l) => l.status)).toEqual(["disconnect", "reconnect", "ldm", "stale_connection"]);
    expect(lines.every((l) => l.msg === "connection status")).toBe(true);
  });
});
