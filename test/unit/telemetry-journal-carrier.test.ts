// A feed delivery read from the journal hands its journal message to tracedDelivery /
// noteFeedMessage as the carrier of its trace context. Without an SDK nothing reads its
// headers (decoding them is the cost this rule must not add); with one, a header block that
// cannot be read leaves the delivery untraced and never fails it.
import { trace } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { headers } from "@nats-io/transport-node";
import { afterEach, describe, expect, it } from "vitest";
import { noteFeedMessage, publishedContext, tracedDelivery } from "../../src/telemetry/index.js";

/** A journal message whose headers count their reads, or throw as a block NATS.js cannot parse. */
function carrier(read: () => unknown) {
  return {
    reads: 0,
    get headers(): unknown {
      this.reads++;
      return read();
    },
  };
}

const delivery = () => ({ event: { type: "TurnStarted" }, journalSeq: 7, subject: "ns.journal.x" });
const valid = `00-${"1".repeat(32)}-${"2".repeat(16)}-01`;

afterEach(() => trace.disable());

describe("a journal message as the carrier of a feed delivery's trace context", () => {
  it("is not read without an SDK: neither its headers nor anything it returns", () => {
    const c = carrier(() => {
      throw new Error("read without an SDK");
    });
    const d = delivery();
    expect(tracedDelivery(d, "feed", c)).toBe(d);
    const message = { seq: 7 };
    expect(noteFeedMessage(message, c as never)).toBe(message);
    expect(tracedDelivery(delivery(), "feed", message)).toBeDefined();
    expect(c.reads).toBe(0);
    expect(publishedContext(d)).toBeUndefined();
  });

  it("with an SDK, headers that throw, are not headers, or carry a duplicated or oversized traceparent leave it untraced", () => {
    const exporter = new InMemorySpanExporter();
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
    const twice = headers();
    twice.append("traceparent", valid);
    twice.append("traceparent", valid);
    const oversized = headers();
    oversized.set("traceparent", `${valid}${"0".repeat(9000)}`);
    const reads: (() => unknown)[] = [
      () => {
        throw new Error("a header block NATS.js cannot parse");
      },
      () => "traceparent: " + valid,
      () => ({ has: () => true, values: () => [valid], get: () => 42 }),
      () => twice,
      () => oversized,
    ];
    for (const read of reads) {
      const d = delivery();
      const message = { seq: 7 };
      expect(() => noteFeedMessage(message, carrier(read) as never)).not.toThrow();
      expect(tracedDelivery(d, "feed", carrier(read))).toBe(d);
      expect(publishedContext(d)).toBeUndefined();
      const viaMessage = delivery();
      expect(tracedDelivery(viaMessage, "feed", message)).toBe(viaMessage);
      expect(publishedContext(viaMessage)).toBeUndefined();
    }
    expect(exporter.getFinishedSpans().every((s) => s.links.length === 0)).toBe(true);
    const good = headers();
    good.set("traceparent", valid);
    const d = delivery();
    tracedDelivery(d, "feed", carrier(() => good));
    expect(publishedContext(d)).toMatchObject({ traceId: "1".repeat(32), spanId: "2".repeat(16), isRemote: true });
  });
});
