// One approval sequence is one trace: the loop's publish → the durable handler's receive →
// its gate answer (client) → the loop actor serving it → the decision published → the
// loop going on; a feed viewer's receive of the same event is linked to the publish (its
// own trace). Malformed or oversized trace headers never break a delivery and are never
// passed on. Real nats-server, the OpenTelemetry SDK with its in-memory exporter.
import { context, type SpanContext, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { headers } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { get, type IncomingMessage } from "node:http";
import { connect, createEvent, defaultRegistry, startGateway, type DurableDelivery, encodeEvent, eventSubject, type JetloopEvent, type Jetloop, newId, publishedContext, withDelivery } from "../../src/index.js";
import { supports } from "../../src/subjects/server-features.js";
import { busContext } from "../../src/bus.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";
import { waitFor } from "../harness/async.js";

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager().enable();
let bus: Jetloop;

beforeAll(async () => {
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(contextManager);
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace() });
  await bus.provision();
});
afterAll(async () => {
  await bus.close();
  await provider.shutdown();
  trace.disable();
  context.disable();
});

const request = { toolName: "bash", summary: "list files", requirements: [{ kind: "fs.read", match: "/tmp/*", description: "read /tmp" }] };
const journalSubject = (e: JetloopEvent & { loopId?: string }) =>
  eventSubject(bus.namespace, "journal", { sessionId: e.sessionId, loopId: e.loopId, family: defaultRegistry.get(e.type)!.family, type: e.type });
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const named = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === name);

/** Polls the exported spans (the harness's waitFor) until `check` holds. */
async function until(check: () => boolean, ms = 5000): Promise<void> {
  await waitFor("the spans awaited", () => check() || false, ms, 20);
}

describe("one approval sequence", () => {
  it("is one trace from the loop's publish to the loop going on; the viewer's delivery links to the publish", async () => {
    exporter.reset();
    const sessionId = newId();
    const loopId = newId();
    const coords = { turnId: newId(), stepId: newId(), toolExecutionId: newId() };
    const scope = { enduring: { loops: [loopId] } };
    const viewer = await bus.session(sessionId).subscribeEvents(scope, { start: "new" });
    const handler = await bus.session(sessionId).subscribeEvents({ enduring: { loops: [loopId] }, types: ["PermissionRequested"] }, { durable: `approver-${newId().slice(0, 8)}` });
    const gates = await bus.serveGates(sessionId, loopId);
    const tracer = trace.getTracer("test-loop");

    // The durable handler: answers the request it receives, in the delivery's context.
    const handled = (async () => {
      for await (const d of handler as AsyncIterable<DurableDelivery<JetloopEvent>>) {
        await withDelivery(d, () => bus.session(sessionId).answer(loopId, { kind: "permission", toolExecutionId: coords.toolExecutionId, effect: "approve" }));
        await d.ack();
        return publishedContext(d);
      }
    })();
    // The viewer: remembers the context the PermissionRequested came with.
    const viewed = (async () => {
      for await (const d of viewer) if (d.event.type === "PermissionRequested") return d;
    })();

    const loopTraceId = await tracer.startActiveSpan("loop step", async (step) => {
      const { effect } = await gates.requestPermission({ ...coords, request });
      expect(effect).toBe("approve");
      await bus.publish(createEvent("ToolCallStarted", { sessionId, loopId, ...coords, toolName: "bash" }));
      step.end();
      return step.spanContext().traceId;
    });
    const remoteSeenByHandler = await handled;
    const viewerDelivery = (await viewed)!;
    await until(() => named(exporter.getFinishedSpans(), "serve gate.answer").length === 1 && named(exporter.getFinishedSpans(), "receive PermissionRequested").length === 2).catch((e: unknown) => {
      throw new Error(`${(e as Error).message}: ${exporter.getFinishedSpans().map((s) => s.name).join(", ")}`);
    });

    const spans = exporter.getFinishedSpans();
    const publishRequested = named(spans, "publish PermissionRequested")[0]!;
    const [durableReceive, viewerReceive] = ["durable", "feed"].map((k) => named(spans, "receive PermissionRequested").find((s) => s.attributes["jetloop.subscription.kind"] === k)!);
    const client = named(spans, "request gate.answer")[0]!;
    const served = named(spans, "serve gate.answer")[0]!;
    const decided = named(spans, "publish PermissionDecided")[0]!;
    const started = named(spans, "publish ToolCallStarted")[0]!;

    // One trace, in causal order: each span the child of the one before.
    for (const s of [publishRequested, durableReceive!, client, served, decided, started]) expect(s.spanContext().traceId).toBe(loopTraceId);
    expect(parentOf(durableReceive!)).toBe(publishRequested.spanContext().spanId);
    expect(parentOf(client)).toBe(durableReceive!.spanContext().spanId);
    expect(parentOf(served)).toBe(client.spanContext().spanId);
    expect(parentOf(decided)).toBe(served.spanContext().spanId);
    expect(remoteSeenByHandler?.spanId).toBe(publishRequested.spanContext().spanId);
    // The producer span says what was stored, never the event's content.
    expect(publishRequested.attributes).toMatchObject({ "messaging.system": "nats", "jetloop.event.type": "PermissionRequested", "jetloop.event.class": "enduring" });
    expect(publishRequested.attributes["jetloop.journal_seq"]).toBeGreaterThan(0);
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain("list files");

    // The viewer: its own trace, linked to the publish.
    expect(viewerReceive!.spanContext().traceId).not.toBe(loopTraceId);
    expect(parentOf(viewerReceive!)).toBeUndefined();
    expect(viewerReceive!.links.map((l) => l.context.spanId)).toEqual([publishRequested.spanContext().spanId]);
    expect(publishedContext(viewerDelivery)?.spanId).toBe(publishRequested.spanContext().spanId);
    await Promise.all([viewer.close(), handler.close(), gates.close()]);
  });

  it("previews carry the context too: a viewer's preview delivery links to its publish", async () => {
    exporter.reset();
    const sessionId = newId();
    const loopId = newId();
    const ids = { sessionId, loopId, turnId: newId(), stepId: newId(), toolExecutionId: newId() };
    const viewer = await bus.session(sessionId).subscribeEvents({ ephemeral: { loops: [loopId] } });
    await bus.publish(createEvent("ToolCallStarted", { ...ids, toolName: "bash" }));
    for await (const d of viewer) {
      expect(d.event.type).toBe("ToolCallStarted");
      break;
    }
    const spans = exporter.getFinishedSpans();
    const sent = named(spans, "publish ToolCallStarted")[0]!;
    const got = named(spans, "receive ToolCallStarted")[0]!;
    expect(got.attributes["jetloop.subscription.kind"]).toBe("preview");
    expect(got.links.map((l) => l.context.spanId)).toEqual([sent.spanContext().spanId]);
  });
});

describe("a live viewer that reads the event from the journal", () => {
  // What a viewer misses on the feed it reads from the journal (its history, a gap's repair);
  // the journal's copy carries the publish's headers, so that delivery links to the publish too.
  for (const feed of ["loop", "namespace"] as const) {
    it(`links to the publish, from its history and from a gap's repair (${feed} mode)`, async () => {
      exporter.reset();
      const sessionId = newId();
      const loopId = newId();
      const turn = () => createEvent("TurnStarted", { sessionId, loopId, turnId: newId() });
      const history = turn();
      await bus.publish(history);
      const viewer = await bus.session(sessionId).subscribeEvents({ enduring: { loops: [loopId] } }, { start: "all", feed });
      const [lost, next] = [turn(), turn()];
      busContext(bus).feeds.testHooks.drop = (m) => m.subject.includes(sessionId) && m.subject.includes(loopId) && !dropped && (dropped = true);
      let dropped = false;
      const got: string[] = [];
      try {
        const reading = (async () => {
          for await (const d of viewer) {
            got.push(d.event.eventId);
            if (got.length === 3) break;
          }
        })();
        await until(() => got.length === 1);
        await bus.publish(lost);
        await bus.publish(next);
        await reading;
      } finally {
        busContext(bus).feeds.testHooks.drop = undefined;
      }
      expect(dropped).toBe(true);
      expect(got).toEqual([history, lost, next].map((e) => e.eventId));
      const spans = exporter.getFinishedSpans();
      const publishOf = (e: JetloopEvent) => spans.find((x) => x.name === "publish TurnStarted" && x.attributes["messaging.message.id"] === e.eventId);
      const receives = named(spans, "receive TurnStarted").filter((x) => x.attributes["jetloop.subscription.kind"] === "feed");
      expect(receives).toHaveLength(3);
      for (const [i, e] of [history, lost, next].entries()) {
        const published = publishOf(e);
        expect(published, `the publish span of event ${i}`).toBeDefined();
        expect(receives[i]!.links.map((l) => l.context.spanId), `event ${i}`).toEqual([published!.spanContext().spanId]);
      }
      await viewer.close();
    });
  }
});

describe("trace headers jetloop cannot read exactly", () => {
  const bad: Record<string, [string, string][]> = {
    "upper-case ids": [["traceparent", `00-${"A".repeat(32)}-${"B".repeat(16)}-01`]],
    "all-zero trace id": [["traceparent", `00-${"0".repeat(32)}-${"b".repeat(16)}-01`]],
    "unknown version": [["traceparent", `01-${"a".repeat(32)}-${"b".repeat(16)}-01-extra`]],
    oversized: [["traceparent", `00-${"a".repeat(32)}-${"b".repeat(16)}-01${"0".repeat(8000)}`]],
    "two values": [
      ["traceparent", `00-${"a".repeat(32)}-${"b".repeat(16)}-01`],
      ["traceparent", `00-${"c".repeat(32)}-${"d".repeat(16)}-01`],
    ],
    "garbage tracestate only": [["tracestate", "x".repeat(4000)]],
  };

  it("never break a delivery and are never passed on (durable and feed alike)", async () => {
    exporter.reset();
    const sessionId = newId();
    const loopId = newId();
    const js = jetstream(bus.nc);
    const durable = await bus.session(sessionId).subscribeEvents({ enduring: { loops: [loopId] } }, { durable: `bad-trace-${newId().slice(0, 8)}` });
    const feed = await bus.session(sessionId).subscribeEvents({ enduring: { loops: [loopId] } }, { start: "new" });
    const sent: string[] = [];
    for (const entries of Object.values(bad)) {
      const e = createEvent("TurnStarted", { sessionId, loopId, turnId: newId() });
      const h = headers();
      for (const [k, v] of entries) h.append(k, v);
      await js.publish(journalSubject(e), encodeEvent(e), { headers: h });
      sent.push(e.eventId);
    }
    const read = async (sub: AsyncIterable<{ event: JetloopEvent }>, settle: (d: never) => Promise<void>) => {
      const got: string[] = [];
      for await (const d of sub) {
        got.push(d.event.eventId);
        expect(publishedContext(d)).toBeUndefined();
        await settle(d as never);
        if (got.length === sent.length) break;
      }
      return got;
    };
    expect(await read(durable, (d: DurableDelivery<JetloopEvent>) => d.ack())).toEqual(sent);
    expect(await read(feed, () => Promise.resolve())).toEqual(sent);
    const receives = exporter.getFinishedSpans().filter((s) => s.name === "receive TurnStarted");
    expect(receives).toHaveLength(sent.length * 2);
    const foreign = new Set<string>(["a".repeat(32), "c".repeat(32), "A".repeat(32)]);
    for (const s of receives) {
      expect(s.links).toEqual([]);
      expect(parentOf(s)).toBeUndefined();
      expect(foreign.has(s.spanContext().traceId)).toBe(false);
    }
    await Promise.all([durable.close(), feed.close()]);
  });

  // The journal's copy keeps every header a raw append sent: what a viewer reads from it
  // (its history, a gap's repair) is held to the same rule as what the feed delivers.
  for (const feed of ["loop", "namespace"] as const) {
    it(`read from the journal (history, a gap's repair: ${feed} mode) never break a delivery and are never passed on; a valid one is linked`, async () => {
      exporter.reset();
      const sessionId = newId();
      const loopId = newId();
      const js = jetstream(bus.nc);
      const valid = { traceId: "3".repeat(32), spanId: "4".repeat(16) };
      const cases = [...Object.values(bad), [["traceparent", `00-${valid.traceId}-${valid.spanId}-01`]] as [string, string][]];
      const append = async () => {
        const ids: string[] = [];
        for (const entries of cases) {
          const e = createEvent("TurnStarted", { sessionId, loopId, turnId: newId() });
          const h = headers();
          for (const [k, v] of entries) h.append(k, v);
          await js.publish(journalSubject(e), encodeEvent(e), { headers: h });
          ids.push(e.eventId);
        }
        return ids;
      };
      const history = await append();
      // Two viewers: in namespace mode they share one repair (and its messages).
      const viewers = await Promise.all([0, 1].map(() => bus.session(sessionId).subscribeEvents({ enduring: { loops: [loopId] } }, { start: "all", feed })));
      const seen = viewers.map(() => [] as { id: string; context: SpanContext | undefined }[]);
      const reading = Promise.all(
        viewers.map(async (viewer, v) => {
          for await (const d of viewer) {
            seen[v]!.push({ id: d.event.eventId, context: publishedContext(d) });
            if (seen[v]!.length === cases.length * 2 + 1) break;
          }
        }),
      );
      await until(() => seen.every((g) => g.length === cases.length));
      // The feed loses every one of the second round; the trailer's arrival repairs them from the journal.
      const trailer = createEvent("TurnStarted", { sessionId, loopId, turnId: newId() });
      let dropped = 0;
      busContext(bus).feeds.testHooks.drop = (m) => m.subject.includes(sessionId) && !new TextDecoder().decode(m.data).includes(trailer.eventId) && ++dropped > 0;
      let repaired: string[];
      try {
        repaired = await append();
        await bus.publish(trailer);
        await reading;
      } finally {
        busContext(bus).feeds.testHooks.drop = undefined;
      }
      expect(dropped).toBe(cases.length);
      for (const got of seen) {
        expect(got.map((g) => g.id)).toEqual([...history, ...repaired, trailer.eventId]);
        for (const [i, g] of got.slice(0, -1).entries()) {
          if (i % cases.length === cases.length - 1) expect(g.context, `delivery ${i}`).toMatchObject({ ...valid, traceFlags: 1, isRemote: true });
          else expect(g.context, `delivery ${i}`).toBeUndefined();
        }
      }
      const receives = named(exporter.getFinishedSpans(), "receive TurnStarted").filter((x) => x.attributes["jetloop.subscription.kind"] === "feed");
      expect(receives).toHaveLength(seen.flat().length);
      const foreign = new Set<string>(["a".repeat(32), "c".repeat(32), "A".repeat(32)]);
      for (const x of receives) {
        expect(x.links.every((l) => l.context.traceId !== "a".repeat(32) && l.context.traceId !== "c".repeat(32))).toBe(true);
        expect(parentOf(x)).toBeUndefined();
        expect(foreign.has(x.spanContext().traceId)).toBe(false);
      }
      expect(receives.filter((x) => x.links.some((l) => l.context.spanId === valid.spanId))).toHaveLength(2 * viewers.length);
      await Promise.all(viewers.map((v) => v.close()));
    });
  }

  it("a valid one on a raw append is continued by a durable delivery", async () => {
    const sessionId = newId();
    const loopId = newId();
    const remote: SpanContext = { traceId: "1".repeat(32), spanId: "2".repeat(16), traceFlags: 1 };
    const durable = await bus.session(sessionId).subscribeEvents({ enduring: { loops: [loopId] } }, { durable: `good-trace-${newId().slice(0, 8)}` });
    const e = createEvent("TurnStarted", { sessionId, loopId, turnId: newId() });
    const h = headers();
    h.set("traceparent", `00-${remote.traceId}-${remote.spanId}-01`);
    h.set("tracestate", "vendor=abc");
    await jetstream(bus.nc).publish(journalSubject(e), encodeEvent(e), { headers: h });
    for await (const d of durable) {
      expect(publishedContext(d)).toMatchObject({ ...remote, isRemote: true });
      expect(publishedContext(d)?.traceState?.serialize()).toBe("vendor=abc");
      await d.ack();
      break;
    }
    await durable.close();
  });
});

describe("an atomic batch refused before it is sent", () => {
  it("ends the publish span of every event it started, with the refusal's code (none is left open)", async () => {
    const sessionId = newId();
    const decided = () => createEvent("PermissionDecided", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), toolExecutionId: newId(), effect: "approve" });
    const preview = createEvent("ToolCallStarted", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), toolExecutionId: newId(), toolName: "bash" });
    const twice = decided();
    const refused = [
      [decided(), decided(), preview, decided()],
      [twice, decided(), twice],
    ];
    const atomic = supports(bus.serverVersion, "atomicBatch");
    for (const events of refused) {
      exporter.reset();
      await expect(bus.publishAll(events, { atomic: true })).rejects.toMatchObject({ code: atomic ? "OPTIONS_INVALID" : "SERVER_UNSUPPORTED" });
      const spans = named(exporter.getFinishedSpans(), "publish PermissionDecided");
      // Started up to the refused preview (or for every event before the batch's checks);
      // before 2.12 the batch is refused before any span starts.
      const started = !atomic ? 0 : events.indexOf(preview) === -1 ? events.length : events.indexOf(preview);
      expect(spans).toHaveLength(started);
      for (const span of spans) expect(span.attributes["error.type"]).toBe("OPTIONS_INVALID");
    }
  });
});

describe("the gateway with an SDK", () => {
  it("writes the published context as a comment block before the frame, and a server span for the route", async () => {
    exporter.reset();
    const gw = await startGateway(bus, { listen: "127.0.0.1:0" });
    const sessionId = newId();
    const loopId = newId();
    try {
      await bus.publish(createEvent("TurnStarted", { sessionId, loopId, turnId: newId() }));
      let received = "";
      const req = get(`${gw.url}/v1/sessions/${sessionId}/events?last_event_id=1`);
      const res = await new Promise<IncomingMessage>((resolve) => req.once("response", resolve));
      res.on("data", (b: Buffer) => (received += b.toString()));
      await bus.publish(createEvent("TurnDone", { sessionId, loopId, turnId: newId() }));
      // TurnStarted from the journal (the history: its copy keeps the publish's headers), TurnDone from the feed.
      await until(() => (received.match(/^event: enduring$/gm) ?? []).length === 2);
      const sentOf = (type: string) => named(exporter.getFinishedSpans(), `publish ${type}`)[0]!.spanContext();
      const [started, done] = [sentOf("TurnStarted"), sentOf("TurnDone")];
      // The comment is its own block, the heartbeat's shape; the frame after it is the runtime's.
      expect(received).toMatch(new RegExp(`^: traceparent 00-${started.traceId}-${started.spanId}-0[01]\n\nevent: enduring\nid: [0-9]+\ndata: [^\n]*"TurnStarted"`));
      expect(received).toMatch(new RegExp(`\n\n: traceparent 00-${done.traceId}-${done.spanId}-0[01]\n\nevent: enduring\nid: [0-9]+\ndata: [^\n]*"TurnDone"`));
      expect(received.match(/^: traceparent /gm)).toHaveLength(2);
      req.destroy();
      await until(() => named(exporter.getFinishedSpans(), "GET events").length === 1);
      expect(named(exporter.getFinishedSpans(), "GET events")[0]!.attributes).toMatchObject({ "http.route": "events", "http.response.status_code": 200 });
    } finally {
      await gw.close();
    }
  });
});
