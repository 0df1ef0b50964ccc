// Every control a gate lists, answered over HTTP: a permission gate offering the Go model's
// three controls answered with each; the loop receives the control chosen. Repeats of one
// Idempotency-Key in flight all get the first outcome; a later answer is told the truth.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type GateServer, type Jetloop, newId, type PermissionAction, startGateway, type RunningGateway } from "../../../src/index.js";
import { natsServers, uniqueNamespace } from "../../harness/context.js";
import { waitFor } from "../../harness/async.js";
import { request } from "./http.js";

let bus: Jetloop;
let gw: RunningGateway;
let gates: GateServer;
const sid = newId();
const loop = newId();
const request0 = { toolName: "bash", summary: "list files", requirements: [{ kind: "fs.read", match: "/tmp/*", description: "read /tmp" }] };
const THREE: PermissionAction[] = ["Approve", "Approve always for this workspace", "Deny"];

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("gc") });
  await bus.provision();
  gw = await startGateway(bus, { listen: "127.0.0.1:0", answerTimeoutMs: 2000 });
  gates = await bus.serveGates(sid, loop);
});
afterAll(async () => {
  await gates.close();
  await gw.close();
  await bus.close();
});

const coords = () => ({ turnId: newId(), stepId: newId(), toolExecutionId: newId() });
const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  request(url, { method: "POST", body, headers: { "content-type": "application/json", origin: gw.url, ...headers } });
const code = (body: string) => (JSON.parse(body) as { error: { code: string } }).error.code;

/** The id of the gate guarding `tool`, once its GateOpened is in the journal. */
function gateOf(tool: string): Promise<string> {
  return waitFor("the gate to open", async () => {
    for await (const { event: e } of bus.session(sid).replay({ enduring: "all", types: ["GateOpened"] })) {
      if (e.type === "GateOpened" && e.gate?.subject?.toolExecutionId === tool) return e.gate.id!;
    }
    return false;
  }, 5000, 50);
}

describe("a gate's controls over HTTP", () => {
  it.each(THREE)("answers a three-control permission gate with %s: the loop receives that control", async (action) => {
    const c = coords();
    const decision = gates.requestPermission({ ...c, request: request0, controls: THREE });
    const gid = await gateOf(c.toolExecutionId);
    const r = await post(`${gw.url}/v1/sessions/${sid}/gates/${gid}`, JSON.stringify({ action }));
    expect([r.status, r.body]).toEqual([202, "{}\n"]);
    const d = await decision;
    expect(d).toMatchObject({ action, effect: action === "Deny" ? "deny" : "approve", answered: true, gateId: gid });
    const resolved = [];
    for await (const { event: e } of bus.session(sid).replay({ enduring: "all", types: ["GateResolved"] })) if (e.type === "GateResolved" && e.gateId === gid) resolved.push(e.action);
    expect(resolved).toEqual([action]);
  });

  it("opens every permission gate with the Go runtime's three controls unless the loop narrows them", async () => {
    const c = coords();
    const decision = gates.requestPermission({ ...c, request: request0 });
    const gid = await gateOf(c.toolExecutionId);
    let controls: unknown;
    for await (const { event: e } of bus.session(sid).replay({ enduring: "all", types: ["GateOpened"] })) if (e.type === "GateOpened" && e.gate?.id === gid) controls = e.gate.prompt?.controls;
    expect(controls).toEqual(THREE.map((action) => ({ action, label: action })));
    expect((await post(`${gw.url}/v1/sessions/${sid}/gates/${gid}`, '{"action":"Deny"}')).status).toBe(202);
    expect((await decision).action).toBe("Deny");
  });

  it("refuses a control the gate did not list, and any other action: 400 gate_action_invalid, the gate still open", async () => {
    const c = coords();
    const decision = gates.requestPermission({ ...c, request: request0, controls: ["Approve", "Deny"] });
    const gid = await gateOf(c.toolExecutionId);
    const url = `${gw.url}/v1/sessions/${sid}/gates/${gid}`;
    for (const action of ["Approve always for this workspace", "Maybe", "approve", ""]) {
      const r = await post(url, JSON.stringify({ action }));
      expect([r.status, code(r.body)], action).toEqual([400, "gate_action_invalid"]);
    }
    expect((await post(url, '{"action":"Deny"}')).status).toBe(202);
    expect((await decision).action).toBe("Deny");
  });

  it("gives every concurrent repeat of one Idempotency-Key the first outcome; another answer afterwards is 404 gate_not_found", async () => {
    const c = coords();
    const decision = gates.requestPermission({ ...c, request: request0, controls: THREE });
    const gid = await gateOf(c.toolExecutionId);
    const url = `${gw.url}/v1/sessions/${sid}/gates/${gid}`;
    const key = newId();
    const replies = await Promise.all(Array.from({ length: 12 }, () => post(url, '{"action":"Approve always for this workspace"}', { "idempotency-key": key })));
    expect(replies.map((r) => r.status)).toEqual(Array.from({ length: 12 }, () => 202));
    expect((await decision).action).toBe("Approve always for this workspace");
    const late = await post(url, '{"action":"Deny"}', { "idempotency-key": newId() });
    expect([late.status, code(late.body)]).toEqual([404, "gate_not_found"]);
    let resolved = 0;
    for await (const { event: e } of bus.session(sid).replay({ enduring: "all", types: ["GateResolved"] })) if (e.type === "GateResolved" && e.gateId === gid) resolved++;
    expect(resolved).toBe(1);
  });
});
