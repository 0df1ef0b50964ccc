// A client written for the Go runtime's HTTP surface, not by this project, against the
// gateway on a real nats-server: every user action it offers. The requests are written as
// looprig/client's ServeTransport sends them (packages/client/src/transport.ts): GETs with
// no body and no Content-Type; a POST with a body carries `Content-Type: application/json`,
// a POST without one (interrupt) carries no Content-Type at all; `Idempotency-Key` on create
// only; no Origin, no Sec-Fetch-Site (a non-browser caller). A Go program posting input
// with `http.NewRequest` (no Content-Type) is one action too. Every answer is checked as
// that client checks it: the capabilities document against the Go contract (protocol,
// version, and features only from the Go list), success bodies by their shape, and every
// error in Go's envelope `{"error":{"code","message","retryable"}}` and nothing else.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  connect,
  type ControlServer,
  createEvent,
  type GateServer,
  type Jetloop,
  newId,
  type PermissionAnswer,
  type RunningGateway,
  startGateway,
} from "../../../src/index.js";
import { natsServers, uniqueNamespace } from "../../harness/context.js";
import { settledWithin, waitFor } from "../../harness/async.js";
import { frameIds, frames, SseReader } from "./http.js";

/** The Go handler's feature list (handlers_capabilities.go): the only names the Go contract's schema admits. */
const GO_FEATURES = ["journal", "live_sse", "ephemeral_sse", "gate_response"];

interface Answer {
  readonly status: number;
  readonly json: unknown;
}

/** What the client's request plumbing does: fetch, parse JSON, and accept an error only in Go's envelope. */
class ServeClient {
  constructor(readonly base: string) {}

  async get(path: string): Promise<Answer> {
    const res = await fetch(`${this.base}${path}`);
    return { status: res.status, json: await parsed(res) };
  }

  /** A body is JSON with its Content-Type; no body is no header at all (the client's interrupt and restore). */
  async post(path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const h: Record<string, string> = { ...headers };
    if (body !== undefined) h["Content-Type"] = "application/json";
    const res = await fetch(`${this.base}${path}`, { method: "POST", body: body === undefined ? undefined : JSON.stringify(body), headers: h });
    return { status: res.status, json: await parsed(res) };
  }

  /** A Go `http.NewRequest("POST", url, bytes.NewReader(body))`: a body, no Content-Type (bytes make fetch add none). */
  async postUntyped(path: string, body: string): Promise<Answer> {
    const res = await fetch(`${this.base}${path}`, { method: "POST", body: new TextEncoder().encode(body) });
    return { status: res.status, json: await parsed(res) };
  }
}

/** A body the client can read: JSON, and for a failure exactly Go's error envelope. */
async function parsed(res: Response): Promise<unknown> {
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`HTTP ${res.status}: not JSON (the client's MalformedResponseError): ${JSON.stringify(text.slice(0, 200))}`);
  }
  if (!res.ok) expectGoError(json);
  return json;
}

function expectGoError(json: unknown): void {
  expect(Object.keys(json as object)).toEqual(["error"]);
  const e = (json as { error: Record<string, unknown> }).error;
  expect(Object.keys(e)).toEqual(["code", "message", "retryable"]);
  expect([typeof e.code, typeof e.message, typeof e.retryable]).toEqual(["string", "string", "boolean"]);
}

const codeOf = (a: Answer) => (a.json as { error: { code: string } }).error.code;

let bus: Jetloop;
let gw: RunningGateway;
let client: ServeClient;
let gates: GateServer;
let controls: ControlServer;
const sid = newId();
const loopId = newId();
const turnId = newId();
const stepId = newId();
const interrupts: string[] = [];
const inputs: string[] = [];

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("goc") });
  await bus.provision();
  gw = await startGateway(bus, { listen: "127.0.0.1:0", answerTimeoutMs: 3000 });
  client = new ServeClient(gw.url);
  await bus.publish(createEvent("SessionStarted", { sessionId: sid }));
  await bus.publish(createEvent("TurnStarted", { sessionId: sid, loopId, turnId }));
  gates = await bus.serveGates(sid, loopId);
  controls = await bus.session(sid).serveControls({
    input: (c) => {
      inputs.push(c.commandId);
      return { ok: true };
    },
    interrupt: (c) => {
      interrupts.push(c.commandId);
      return { interrupted: true };
    },
  });
});
afterAll(async () => {
  await controls.close();
  await gates.close();
  await gw.close();
  await bus.close();
});

/** The id of the gate guarding `toolExecutionId`, once its GateOpened is in the journal. */
function gateOf(toolExecutionId: string): Promise<string> {
  return waitFor(
    "the gate to open",
    async () => {
      for await (const { event: e } of bus.session(sid).replay({ enduring: "all", types: ["GateOpened"] })) {
        if (e.type === "GateOpened" && e.gate?.subject?.toolExecutionId === toolExecutionId) return e.gate.id!;
      }
      return false;
    },
    10_000,
    50,
  );
}

/** A requirement with its one candidate, a file of its own: a rule one test's "always" wrote covers no other test's request. */
function ruled() {
  const match = `/work/app/src/${newId()}.ts`;
  return { kind: "fs.write", match, description: "edit a file", candidates: [{ kind: "fs.write", match, description: "exactly this file" }] };
}

/** A permission gate opened by the loop, answered over HTTP with `action`: the loop's decision. */
async function answerPermission(action: string, requirements = [ruled()]): Promise<{ reply: Answer; decision: PermissionAnswer; toolExecutionId: string }> {
  const toolExecutionId = newId();
  const decision = gates.requestPermission({ turnId, stepId, toolExecutionId, request: { toolName: "edit_file", summary: "edit index.ts", requirements } });
  decision.catch(() => undefined);
  const gid = await gateOf(toolExecutionId);
  const reply = await client.post(`/v1/sessions/${sid}/gates/${gid}`, { action });
  return { reply, decision: await settledWithin("the loop's decision", decision, 10_000), toolExecutionId };
}

describe("the Go runtime's own client, every user action", () => {
  it("1. checks capabilities against the Go contract and accepts the server", async () => {
    const a = await client.get("/v1/capabilities");
    expect(a.status).toBe(200);
    const doc = a.json as { protocol: string; version: number; features: string[] };
    expect(Object.keys(doc)).toEqual(["protocol", "version", "features"]);
    expect([doc.protocol, doc.version]).toEqual(["looprig.serve", 1]);
    for (const f of doc.features) expect(GO_FEATURES, f).toContain(f);
    expect(doc.features).toEqual(GO_FEATURES);
  });

  it("2. lists sessions", async () => {
    const a = await client.get("/v1/sessions");
    expect(a.status).toBe(200);
    expect((a.json as { sessions: { session_id: string }[] }).sessions.map((s) => s.session_id)).toContain(sid);
  });

  it("3. lists sessions a page at a time (skip, limit)", async () => {
    const a = await client.get("/v1/sessions?skip=0&limit=1");
    expect(a.status).toBe(200);
    expect(a.json).toMatchObject({ skip: 0, limit: 1 });
  });

  it("4. reads a session's status", async () => {
    const a = await client.get(`/v1/sessions/${sid}/status`);
    expect([a.status, (a.json as { session_id: string }).session_id]).toEqual([200, sid]);
  });

  it("5. reads a session's status by an upper-case id (echoed lower-case)", async () => {
    const a = await client.get(`/v1/sessions/${sid.toUpperCase()}/status`);
    expect([a.status, (a.json as { session_id: string }).session_id]).toEqual([200, sid]);
  });

  it("6. reads the history", async () => {
    const a = await client.get(`/v1/sessions/${sid}/journal`);
    expect(a.status).toBe(200);
    expect((a.json as { events: unknown[] }).events.length).toBeGreaterThan(0);
  });

  it("7. reads the history from a cursor, a page at a time", async () => {
    const first = (await client.get(`/v1/sessions/${sid}/journal?limit=1`)).json as { events: { journal_seq: number }[]; next_journal_seq: number };
    const a = await client.get(`/v1/sessions/${sid}/journal?from_journal_seq=${first.next_journal_seq}&limit=1`);
    expect(a.status).toBe(200);
    const page = a.json as { events: { journal_seq: number }[] };
    expect(page.events[0]!.journal_seq).toBeGreaterThan(first.events[0]!.journal_seq);
  });

  it("8. reads past the history's end: an empty page, done", async () => {
    const a = await client.get(`/v1/sessions/${sid}/journal?from_journal_seq=9007199254740990`);
    expect(a.json).toEqual({ events: [], next_journal_seq: 0, done: true });
  });

  it("9-11. follows the live stream (enduring and ephemeral frames) and joins it to the history without a duplicate", async () => {
    const sse = await SseReader.open(`${gw.url}/v1/sessions/${sid}/events`);
    try {
      const ran = newId();
      await bus.publish(createEvent("ToolCallStarted", { sessionId: sid, loopId, turnId, stepId, toolExecutionId: ran, toolName: "bash" }));
      await bus.publish(createEvent("StepDone", { sessionId: sid, loopId, turnId, stepId, messages: [{ role: "assistant", blocks: [{ type: "text", text: "x" }] }] }));
      const text = await sse.until((t) => frames(t).some((f) => f.startsWith("event: enduring")) && t.includes(ran));
      // 9: an enduring frame with its journal sequence; 10: the tool preview as the Go ephemeral frame.
      expect(frameIds(text).length).toBeGreaterThan(0);
      expect(frames(text).some((f) => f.startsWith("event: ephemeral\ndata: ") && f.includes('"kind":"tool_call_started"'))).toBe(true);
      // 11: the join — page the history to its end T, drop frames with id <= T: what is left is new.
      let from = 0;
      let last = 0;
      for (;;) {
        const page = (await client.get(`/v1/sessions/${sid}/journal?from_journal_seq=${from}&limit=1000`)).json as { events: { journal_seq: number }[]; next_journal_seq: number; done: boolean };
        for (const e of page.events) last = e.journal_seq;
        if (page.done) break;
        from = page.next_journal_seq;
      }
      const ids = frameIds(text);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.every((id) => id <= last)).toBe(true);
    } finally {
      sse.close();
    }
  });

  it("12. sees a waiting gate in the status", async () => {
    const toolExecutionId = newId();
    const decision = gates.requestPermission({ turnId, stepId, toolExecutionId, request: { toolName: "bash", summary: "ls" } });
    const gid = await gateOf(toolExecutionId);
    const status = await waitFor("the status to show the gate", async () => {
      const s = (await client.get(`/v1/sessions/${sid}/status`)).json as { state?: string; waiting_gate_id?: string };
      return s.waiting_gate_id === gid ? s : false;
    });
    expect(status.state).toBe("waiting_on_gate");
    expect((await client.post(`/v1/sessions/${sid}/gates/${gid}`, { action: "Deny" })).status).toBe(202);
    await decision;
  });

  it.each(["Approve", "Approve always for this workspace", "Deny"])("13-15. answers a permission gate with %s, one of the three controls every Go permission gate carries", async (action) => {
    const { reply, decision } = await answerPermission(action);
    expect([reply.status, reply.json]).toEqual([202, {}]);
    expect(decision).toMatchObject({ action, answered: true });
  });

  it("16. answers an ask-user gate with values.answer", async () => {
    const toolExecutionId = newId();
    const asked = gates.requestInput({ turnId, stepId, toolExecutionId, question: "which?" });
    const gid = await gateOf(toolExecutionId);
    const reply = await client.post(`/v1/sessions/${sid}/gates/${gid}`, { action: "", values: { answer: "this one" } });
    expect([reply.status, reply.json]).toEqual([202, {}]);
    expect((await asked).answer).toBe("this one");
  });

  it("17. is told a gate it names does not exist: 404 gate_not_found", async () => {
    const a = await client.post(`/v1/sessions/${sid}/gates/${newId()}`, { action: "Approve" });
    expect([a.status, codeOf(a)]).toEqual([404, "gate_not_found"]);
  });

  it("18. is told an action the gate does not offer is invalid: 400 gate_action_invalid", async () => {
    const toolExecutionId = newId();
    const decision = gates.requestPermission({ turnId, stepId, toolExecutionId, request: { toolName: "bash", summary: "ls" } });
    const gid = await gateOf(toolExecutionId);
    const a = await client.post(`/v1/sessions/${sid}/gates/${gid}`, { action: "Maybe" });
    expect([a.status, codeOf(a)]).toEqual([400, "gate_action_invalid"]);
    await client.post(`/v1/sessions/${sid}/gates/${gid}`, { action: "Deny" });
    await decision;
  });

  it("19. submits input as JSON", async () => {
    const a = await client.post(`/v1/sessions/${sid}/input`, { blocks: [{ type: "text", Text: "hello" }] });
    expect(a.status).toBe(200);
    expect(inputs).toContain((a.json as { command_id: string }).command_id);
  });

  it("20. submits input as a Go program posts it, without a Content-Type", async () => {
    const a = await client.postUntyped(`/v1/sessions/${sid}/input`, '{"blocks":[{"type":"text","Text":"hello"}]}');
    expect(a.status).toBe(200);
    expect(inputs).toContain((a.json as { command_id: string }).command_id);
  });

  it("21. interrupts: a POST with no body and no Content-Type", async () => {
    const before = interrupts.length;
    const a = await client.post(`/v1/sessions/${sid}/interrupt`);
    expect([a.status, a.json]).toEqual([200, { interrupted: true }]);
    expect(interrupts.length).toBe(before + 1);
  });

  it("22. creating a session is answered in Go's error envelope, with a code that says why", async () => {
    const a = await client.post("/v1/sessions", {});
    expect([a.status, codeOf(a)]).toEqual([501, "no_runtime"]);
  });

  it("23. creating a session with input under an Idempotency-Key: the same answer", async () => {
    const a = await client.post("/v1/sessions", { blocks: [{ type: "text", Text: "hi" }] }, { "Idempotency-Key": newId() });
    expect([a.status, codeOf(a)]).toEqual([501, "no_runtime"]);
  });

  it("24. a later request the workspace rule covers is approved without asking, journaled as the Go runtime journals it", async () => {
    const requirement = ruled();
    const first = await answerPermission("Approve always for this workspace", [requirement]);
    expect(first.decision.effect).toBe("approve");
    const toolExecutionId = newId();
    const decision = await settledWithin(
      "a covered request's decision",
      gates.requestPermission({ turnId, stepId, toolExecutionId, request: { toolName: "edit_file", summary: "edit index.ts", requirements: [requirement] } }),
      10_000,
    );
    expect(decision).toMatchObject({ effect: "approve", answered: false });
    const journal = (await client.get(`/v1/sessions/${sid}/journal?limit=1000`)).json as { events: { event: Record<string, unknown> }[] };
    const mine = journal.events.map((e) => e.event).filter((e) => e.tool_execution_id === toolExecutionId || (e.gate as { subject?: { tool_execution_id?: string } } | undefined)?.subject?.tool_execution_id === toolExecutionId);
    expect(mine.map((e) => e.type)).toEqual(["PermissionDecided"]);
    expect(mine[0]).toMatchObject({ effect: "approve", reason: "access_evaluated", subject: "edit_file", audit: "edit index.ts" });
  });
});
