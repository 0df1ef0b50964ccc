// The gateway against the Go handler's own bytes: the events of go-written-events.jsonl are
// written into a fresh journal in order (stream sequence = line number, the `seq` of the Go
// files), served through the gateway, and every SSE frame, journal page, capabilities
// document and error body is compared byte for byte with go-sse-frames.jsonl and
// go-http-bodies.jsonl. Documented differences: see src/gateway/README.md.
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, type Jetloop, startGateway, type RunningGateway } from "../../../src/index.js";
import { eventSubject } from "../../../src/subjects/subjects.js";
import { readJsonl, type GoWritten } from "../../conformance/go-oracle.js";
import { natsServers, uniqueNamespace } from "../../harness/context.js";
import { frames, request, SseReader } from "./http.js";

interface GoFrame {
  id: string;
  seq: number;
  frame: string;
  type: string;
  class: string;
  skipped?: string;
}
interface GoBody {
  id: string;
  body: string;
  status: number;
  request?: string;
  content_type?: string;
  headers?: Record<string, string>;
}

const written = readJsonl<GoWritten>("go-written-events.jsonl");
const goFrames = readJsonl<GoFrame>("go-sse-frames.jsonl");
const goBodies = new Map(readJsonl<GoBody>("go-http-bodies.jsonl").map((b) => [b.id, b]));
const S = "6f1c2a3b-4d5e-4f60-8a7b-000000000101";
const S102 = "01936d2e-7a10-7c3d-9e4f-000000000102";
const GATE = "6f1c2a3b-4d5e-4f60-8a7b-000000000601";

const JSON_TYPE = { "Content-Type": "application/json" };
let bus: Jetloop;
let gw: RunningGateway;

function go(id: string): GoBody {
  const b = goBodies.get(id);
  if (!b) throw new Error(`no Go body ${id}`);
  return b;
}

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("gw") });
  await bus.provision();
  const js = jetstream(bus.nc);
  // The Go bytes themselves, in order: the journal then holds exactly what the runtime wrote.
  for (const w of written) {
    const e = JSON.parse(w.json) as { session_id: string; loop_id?: string };
    const family = bus.registry.get(w.type)!.family;
    await js.publish(eventSubject(bus.namespace, "journal", { sessionId: e.session_id, loopId: e.loop_id, family, type: w.type }), new TextEncoder().encode(w.json));
  }
  gw = await startGateway(bus, { listen: "127.0.0.1:0" });
});
afterAll(async () => {
  await gw.close();
  await bus.close();
});

function expectBody(r: { status: number; body: string; headers: Headers }, goId: string): void {
  const b = go(goId);
  expect({ status: r.status, body: r.body }).toEqual({ status: b.status, body: b.body });
  if (b.content_type) expect(r.headers.get("content-type")).toBe(b.content_type);
  for (const [k, v] of Object.entries(b.headers ?? {})) expect(r.headers.get(k), k).toBe(v);
}

describe("gateway conformance with the Go handler", () => {
  it("serves every enduring event as the Go SSE frame, internal events skipped, from Last-Event-ID 0", async () => {
    const expected = goFrames.filter((f) => f.class === "enduring" && f.seq > 0 && f.seq <= 58).map((f) => f.frame).filter((f) => f !== "");
    const sse = await SseReader.open(`${gw.url}/v1/sessions/${S}/events`, { "Last-Event-ID": "0" });
    expect(sse.response.headers.get("content-type")).toBe("text/event-stream");
    expect(sse.response.headers.get("cache-control")).toBe("no-store");
    expect(sse.response.headers.get("x-accel-buffering")).toBe("no");
    await sse.until((t) => t.includes("id: 57\n"));
    sse.close();
    expect(frames(sse.text)).toEqual(expected);
  });

  it("serves the other session's event under its own session", async () => {
    const sse = await SseReader.open(`${gw.url}/v1/sessions/${S102}/events?last_event_id=0`);
    await sse.until((t) => t.includes("\n\n"));
    sse.close();
    expect(frames(sse.text)).toEqual([goFrames.find((f) => f.seq === 59)!.frame]);
  });

  it("writes the Go ephemeral frames for the tool previews", async () => {
    const samples = goFrames.filter((f) => f.class === "ephemeral" && f.type.startsWith("ToolCall") && f.frame !== "");
    expect(samples.length).toBe(6);
    const sse = await SseReader.open(`${gw.url}/v1/sessions/${S}/events`);
    for (const s of samples) {
      const data = JSON.parse(s.frame.slice(s.frame.indexOf("data: ") + 6)) as { header: Record<string, string | undefined>; delta: Record<string, unknown> };
      const h = data.header;
      const header = { sessionId: h.session_id!, loopId: h.loop_id, turnId: h.turn_id, stepId: h.step_id, agentName: h.agent_name, eventId: h.event_id!, createdAt: h.created_at };
      const d = data.delta;
      const event =
        s.type === "ToolCallStarted"
          ? createEvent("ToolCallStarted", { ...header, toolExecutionId: d.tool_execution_id as string, toolName: d.tool_name as string | undefined, summary: d.summary as string | undefined })
          : createEvent("ToolCallCompleted", { ...header, toolExecutionId: d.tool_execution_id as string, isError: d.is_error === true, resultPreview: d.result_preview as string | undefined });
      await bus.publish(event);
      await sse.until((t) => frames(t).length === samples.indexOf(s) + 1);
    }
    // An internal preview never leaves the gateway.
    await bus.publish(createEvent("ToolCallStarted", { sessionId: S, loopId: "6f1c2a3b-4d5e-4f60-8a7b-000000000201", turnId: "6f1c2a3b-4d5e-4f60-8a7b-000000000301", stepId: "6f1c2a3b-4d5e-4f60-8a7b-000000000401", toolExecutionId: "6f1c2a3b-4d5e-4f60-8a7b-000000000599", visibility: "internal" }));
    await bus.publish(createEvent("ToolCallCompleted", { sessionId: S, loopId: "6f1c2a3b-4d5e-4f60-8a7b-000000000201", turnId: "6f1c2a3b-4d5e-4f60-8a7b-000000000301", stepId: "6f1c2a3b-4d5e-4f60-8a7b-000000000401", toolExecutionId: "6f1c2a3b-4d5e-4f60-8a7b-000000000598" }));
    await sse.until((t) => frames(t).length === samples.length + 1);
    sse.close();
    const got = frames(sse.text);
    expect(got.slice(0, samples.length)).toEqual(samples.map((s) => s.frame));
    expect(got[samples.length]).toContain("000000000598");
  });

  it("answers capabilities with the full-surface document byte for byte, and jetloop's own features where no Go client looks", async () => {
    expectBody(await request(`${gw.url}/v1/capabilities`), "capabilities/full");
    const own = await request(`${gw.url}/jetloop/capabilities`);
    expect({ status: own.status, body: own.body }).toEqual({ status: 200, body: '{"protocol":"jetloop.gateway","version":1,"features":["input","interrupt","workspace_rules"]}\n' });
    expect(own.headers.get("content-type")).toBe("application/json");
  });

  it("pages the journal as the Go handler does", async () => {
    expectBody(await request(`${gw.url}/v1/sessions/${S}/journal?limit=5`), "journal/first-5");
    expectBody(await request(`${gw.url}/v1/sessions/${S.toUpperCase()}/journal?limit=5`), "journal/first-5");
    expectBody(await request(`${gw.url}/v1/sessions/${S}/journal?from_journal_seq=5&limit=3`), "journal/from-5-limit-3");
    expectBody(await request(`${gw.url}/v1/sessions/${S}/journal?from_journal_seq=60`), "journal/past-end");
    // The Go reader in the recording was one flat store; in jetloop line 59 belongs to its own session.
    expectBody(await request(`${gw.url}/v1/sessions/${S102}/journal?from_journal_seq=58&limit=1`), "journal/from-58-limit-1");
    const all = go("journal/default").body;
    const last = go("journal/from-58-limit-1").body.slice('{"events":['.length, -',"next_journal_seq":60,"done":false}\n'.length - 1);
    const withoutOther = all.replace(`,${last}`, "");
    expect(withoutOther).not.toBe(all);
    const r = await request(`${gw.url}/v1/sessions/${S}/journal`);
    expect({ status: r.status, body: r.body }).toEqual({ status: 200, body: withoutOther });
  });

  it("answers every error it can meet with the Go envelope", async () => {
    const cases: [string, string, RequestInit?][] = [
      ["error/invalid-session-id", "/v1/sessions/not-a-uuid/status"],
      ["error/invalid-query-limit-0", `/v1/sessions/${S}/journal?limit=0`],
      ["error/invalid-query-limit-1001", "/v1/sessions?limit=1001"],
      ["error/invalid-query-from-negative", `/v1/sessions/${S}/journal?from_journal_seq=-1`],
      ["error/invalid-query-skip-negative", "/v1/sessions?skip=-1"],
      ["error/invalid-gate-id", `/v1/sessions/${S}/gates/nope`, { method: "POST", body: '{"action":"Approve"}', headers: JSON_TYPE }],
      ["error/invalid-body-gate", `/v1/sessions/${S}/gates/${GATE}`, { method: "POST", body: '{"action":', headers: JSON_TYPE }],
      ["error/invalid-body-gate-action-type", `/v1/sessions/${S}/gates/${GATE}`, { method: "POST", body: '{"action":1}', headers: JSON_TYPE }],
      ["error/session-not-found-status", "/v1/sessions/6f1c2a3b-4d5e-4f60-8a7b-0000000001ff/status"],
      ["error/session-not-found-events", "/v1/sessions/6f1c2a3b-4d5e-4f60-8a7b-0000000001ff/events"],
      ["error/session-not-found-gate", `/v1/sessions/6f1c2a3b-4d5e-4f60-8a7b-0000000001ff/gates/${GATE}`, { method: "POST", body: '{"action":"Approve"}', headers: JSON_TYPE }],
      ["mux/not-found", "/v1/nope"],
      ["mux/method-not-allowed", `/v1/sessions/${S}/status`, { method: "DELETE" }],
      ["mux/trailing-slash", "/v1/sessions/"],
    ];
    for (const [id, path, init] of cases) expectBody(await request(`${gw.url}${path}`, init), id);
    // Creation: no runtime behind the gateway. Not the read-only mux's plain 405 (no JSON a Go
    // client can read): Go's error envelope and headers, as its create failure (error/create-failed) has them, with jetloop's code.
    const created = await request(`${gw.url}/v1/sessions`, { method: "POST" });
    const goFailure = go("error/create-failed");
    expect({ status: created.status, body: created.body }).toEqual({ status: 501, body: '{"error":{"code":"no_runtime","message":"no runtime behind this gateway to create a session","retryable":false}}\n' });
    expect(Object.keys(JSON.parse(created.body) as object)).toEqual(Object.keys(JSON.parse(goFailure.body) as object));
    expect(created.headers.get("content-type")).toBe(goFailure.content_type ?? "application/json");
    // Restore is not served: answered as a mux without it does (input and interrupt: controls.test.ts).
    expectBody(await request(`${gw.url}/v1/sessions/${S}/restore`, { method: "POST", body: "{}", headers: JSON_TYPE }), "mux/not-found");
  });
});
