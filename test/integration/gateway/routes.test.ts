// The gateway's routes on a real nats-server: status and list, gate answers through the
// loop's gate server, auth, the body cap and the fail-secure bind.
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, GatewayBindError, type GateServer, type Jetloop, newId, startGateway, type RunningGateway } from "../../../src/index.js";
import { natsServers, uniqueNamespace } from "../../harness/context.js";
import { waitFor } from "../../harness/async.js";
import { request } from "./http.js";
import { createServer } from "node:net";

/** Whether this host can bind ::1 at all (not every container has IPv6). */
function canBindIpv6Loopback(): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen({ host: "::1", port: 0 }, () => probe.close(() => resolve(true)));
  });
}

let bus: Jetloop;
let gw: RunningGateway;
const request0 = { toolName: "bash", summary: "list files", requirements: [{ kind: "fs.read", match: "/tmp/*", description: "read /tmp" }] };

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("gr") });
  await bus.provision();
  gw = await startGateway(bus, { listen: "127.0.0.1:0", answerTimeoutMs: 500 });
});
afterAll(async () => {
  await gw.close();
  await bus.close();
});

const coords = () => ({ turnId: newId(), stepId: newId(), toolExecutionId: newId() });

async function status(url: string, sid: string): Promise<Record<string, unknown>> {
  const r = await request(`${url}/v1/sessions/${sid}/status`);
  expect(r.status).toBe(200);
  return JSON.parse(r.body) as Record<string, unknown>;
}

async function openGate(url: string, sid: string): Promise<string> {
  return waitFor("the gate to open", async () => ((await status(url, sid)).waiting_gate_id as string | undefined) ?? false, 5000);
}

const post = (url: string, body: string, headers: Record<string, string> = {}) => request(url, { method: "POST", body, headers: { "Content-Type": "application/json", ...headers } });
const code = (body: string) => (JSON.parse(body) as { error: { code: string } }).error.code;

describe("gate answers", () => {
  let gates: GateServer;
  const sid = newId();
  const loop = newId();
  beforeAll(async () => {
    gates = await bus.serveGates(sid, loop);
  });
  afterAll(() => gates.close());

  it("approves a permission gate, idempotently, and maps the runtime's errors", async () => {
    const c = coords();
    await bus.publish(createEvent("TurnStarted", { sessionId: sid, loopId: loop, turnId: c.turnId }));
    // Two controls (the loop narrows the Go three): the third is then not one of its own.
    const decision = gates.requestPermission({ ...c, request: request0, controls: ["Approve", "Deny"] });
    const gid = await openGate(gw.url, sid);
    const s = await status(gw.url, sid);
    expect(s).toMatchObject({ session_id: sid, state: "waiting_on_gate", waiting_gate_id: gid, active_turn_id: c.turnId });
    const url = `${gw.url}/v1/sessions/${sid}/gates/${gid}`;
    expect(code((await post(url, '{"action":"Maybe"}')).body)).toBe("gate_action_invalid");
    expect(code((await post(url, '{"action":"Approve always for this workspace"}')).body)).toBe("gate_action_invalid");
    expect(code((await post(url, '{"action":"accept"}')).body)).toBe("gate_kind_mismatch");
    expect(code((await post(url, "")).body)).toBe("gate_action_invalid");
    const ok = await post(url, '{"action":"Approve","gate_id":"ignored","source":{"kind":"policy"}}');
    expect({ status: ok.status, body: ok.body }).toEqual({ status: 202, body: "{}\n" });
    expect((await decision).effect).toBe("approve");
    // The same request again is the same command: its first outcome, 202.
    expect((await post(url, '{"action":"Approve","gate_id":"ignored","source":{"kind":"policy"}}')).status).toBe(202);
    // Another answer to a resolved gate: gone.
    const late = await post(url, '{"action":"Deny"}');
    expect([late.status, code(late.body)]).toEqual([404, "gate_not_found"]);
    const unknown = await post(`${gw.url}/v1/sessions/${sid}/gates/${newId()}`, '{"action":"Approve"}');
    expect([unknown.status, code(unknown.body)]).toEqual([404, "gate_not_found"]);
  });

  it("denies with an Idempotency-Key, and answers an ask-user gate from values.answer", async () => {
    const c = coords();
    const decision = gates.requestPermission({ ...c, request: request0 });
    const gid = await openGate(gw.url, sid);
    const url = `${gw.url}/v1/sessions/${sid}/gates/${gid}`;
    expect((await post(url, '{"action":"Deny"}', { "Idempotency-Key": "k1" })).status).toBe(202);
    expect((await post(url, '{"ACTION":"Deny"}', { "Idempotency-Key": "k1" })).status).toBe(202);
    expect((await decision).effect).toBe("deny");

    const q = coords();
    const answered = gates.requestInput({ ...q, question: "Which branch?", choices: ["main", "dev"] });
    const qid = await openGate(gw.url, sid);
    const qurl = `${gw.url}/v1/sessions/${sid}/gates/${qid}`;
    expect(code((await post(qurl, '{"action":"Approve"}')).body)).toBe("gate_action_invalid");
    expect(code((await post(qurl, '{"values":{"answer":"nope"}}')).body)).toBe("gate_action_invalid");
    expect((await post(qurl, '{"action":"submit","values":{"answer":"dev"}}')).status).toBe(202);
    expect((await answered).answer).toBe("dev");
  });

  it("says session_not_found (retryable) when no loop actor listens, gate_capacity when it does not answer in time", async () => {
    const sid2 = newId();
    const loop2 = newId();
    const g2 = await bus.serveGates(sid2, loop2);
    void g2.requestPermission({ ...coords(), request: request0 }).catch(() => undefined);
    const gid = await openGate(gw.url, sid2);
    await g2.close();
    const url = `${gw.url}/v1/sessions/${sid2}/gates/${gid}`;
    const gone = await post(url, '{"action":"Approve"}');
    expect([gone.status, gone.body]).toEqual([404, '{"error":{"code":"session_not_found","message":"session not found","retryable":true}}\n']);
    // A loop actor that never replies.
    const mute = bus.nc.subscribe(`${bus.namespace}.cmd.${sid2}.${loop2}.answer`);
    await bus.nc.flush();
    const slow = await post(url, '{"action":"Approve"}');
    mute.unsubscribe();
    expect([slow.status, slow.body]).toEqual([503, '{"error":{"code":"gate_capacity","message":"gate capacity exceeded","retryable":true}}\n']);
  });
});

describe("status and list", () => {
  it("lists sessions by last activity, paged", async () => {
    const ids = [newId(), newId(), newId()];
    const turns = ids.map(() => newId());
    for (const [i, sid] of ids.entries()) {
      const loopId = newId();
      const turnId = turns[i]!;
      await bus.publish(createEvent("SessionStarted", { sessionId: sid, createdAt: `2026-11-29T10:0${i}:00Z` }));
      await bus.publish(createEvent("TurnStarted", { sessionId: sid, loopId, turnId, createdAt: `2026-11-29T10:0${i}:01Z` }));
      if (i === 0) await bus.publish(createEvent("TurnFailed", { sessionId: sid, loopId, turnId, createdAt: "2026-11-29T10:00:02Z" }));
      if (i === 1) await bus.publish(createEvent("SessionStopped", { sessionId: sid, createdAt: "2026-11-29T10:01:02Z" }));
    }
    const all = JSON.parse((await request(`${gw.url}/v1/sessions?limit=1000`)).body) as { sessions: { session_id: string; state: string }[]; done: boolean; next_skip: number };
    const mine = all.sessions.filter((s) => ids.includes(s.session_id));
    expect(mine.map((s) => [s.session_id, s.state])).toEqual([
      [ids[2], "running"],
      [ids[1], "stopped"],
      [ids[0], "failed"],
    ]);
    expect(all).toMatchObject({ done: true, next_skip: 0 });
    const total = all.sessions.length;
    const page = JSON.parse((await request(`${gw.url}/v1/sessions?skip=1&limit=1`)).body) as Record<string, unknown>;
    expect(page).toMatchObject({ skip: 1, limit: 1, next_skip: total > 2 ? 2 : 0, done: total <= 2 });
    const st = await status(gw.url, ids[0]!);
    // As the Go catalog folds it: TurnFailed is no activity (updated_at is TurnStarted's) and keeps the active turn.
    expect(st).toMatchObject({ state: "failed", updated_at: "2026-11-29T10:00:01Z" });
    expect(st.active_turn_id).toBe(turns[0]);
    expect((st.last_turn as { event: { type: string } }).event.type).toBe("TurnFailed");
  });
});

describe("a session whose last turn is an internal event", () => {
  it("is 500 on its status (as Go's reader refuses to rebuild it) but listed, as Go's list never reads last_turn", async () => {
    const sid = newId();
    const loopId = newId();
    const turnId = newId();
    await bus.publish(createEvent("SessionStarted", { sessionId: sid, createdAt: "2026-11-29T11:00:00Z" }));
    await bus.publish(createEvent("TurnStarted", { sessionId: sid, loopId, turnId, createdAt: "2026-11-29T11:00:01Z" }));
    await bus.publish(createEvent("TurnDone", { sessionId: sid, loopId, turnId, visibility: "internal" }));
    const st = await request(`${gw.url}/v1/sessions/${sid}/status`);
    expect([st.status, code(st.body)]).toEqual([500, "internal"]);
    const list = await request(`${gw.url}/v1/sessions?limit=1000`);
    expect(list.status).toBe(200);
    const mine = (JSON.parse(list.body) as { sessions: { session_id: string; state: string }[] }).sessions.filter((s) => s.session_id === sid);
    expect(mine).toEqual([{ session_id: sid, state: "idle", created_at: "2026-11-29T11:00:00Z", last_active_at: "2026-11-29T11:00:01Z" }]);
  });
});

describe("a journal subject that names no session", () => {
  it("is no session of the list: the others are listed, not a 500 for all", async () => {
    // Anyone who may publish on the journal can store a message under a subject jetloop
    // never writes; it belongs to no session.
    const own = await connect({ servers: natsServers(), namespace: uniqueNamespace("gj") });
    const ownGw = await startGateway(own, { listen: "127.0.0.1:0" });
    try {
      await own.provision();
      const sid = newId();
      await own.publish(createEvent("SessionStarted", { sessionId: sid, createdAt: "2026-11-29T12:00:00Z" }));
      const js = jetstream(own.nc);
      for (const junk of ["junk", `${sid}`, `${sid}.x.y.z.w`, "not-a-uuid._.session.SessionStarted"]) await js.publish(`${own.namespace}.journal.${junk}`, "x");
      const list = await request(`${ownGw.url}/v1/sessions`);
      expect(list.status).toBe(200);
      expect((JSON.parse(list.body) as { sessions: { session_id: string }[] }).sessions.map((s) => s.session_id)).toEqual([sid]);
    } finally {
      await ownGw.close();
      await own.close();
    }
  });
});

describe("auth, body cap, bind", () => {
  it("requires the bearer token on every route, unknown paths included", async () => {
    const secured = await startGateway(bus, { listen: "127.0.0.1:0", token: "s3cret" });
    try {
      const unauthorized = '{"error":{"code":"unauthorized","message":"authentication required","retryable":false}}\n';
      for (const path of ["/v1/capabilities", "/nope", "/v1/sessions"]) {
        const r = await request(`${secured.url}${path}`);
        expect([r.status, r.body, r.headers.get("www-authenticate")]).toEqual([401, unauthorized, null]);
      }
      expect((await request(`${secured.url}/v1/capabilities`, { headers: { Authorization: "Bearer wrong" } })).status).toBe(401);
      expect((await request(`${secured.url}/v1/capabilities`, { headers: { Authorization: "Bearer s3cret" } })).status).toBe(200);
    } finally {
      await secured.close();
    }
  });

  it("hides the sessions an authenticate function does not let the caller see (404, no oracle)", async () => {
    const visible = newId();
    const hidden = newId();
    for (const sid of [visible, hidden]) await bus.publish(createEvent("SessionStarted", { sessionId: sid }));
    const scoped = await startGateway(bus, {
      listen: "127.0.0.1:0",
      authenticate: (req) => (req.headers["x-user"] === "ada" ? { canSee: (s) => s === visible } : false),
    });
    try {
      const h = { headers: { "x-user": "ada" } };
      expect((await request(`${scoped.url}/v1/sessions/${visible}/status`, h)).status).toBe(200);
      const hiddenStatus = await request(`${scoped.url}/v1/sessions/${hidden}/status`, h);
      const missing = await request(`${scoped.url}/v1/sessions/${newId()}/status`, h);
      expect([hiddenStatus.status, hiddenStatus.body]).toEqual([missing.status, missing.body]);
      expect((await request(`${scoped.url}/v1/sessions/${hidden}/events`, h)).status).toBe(404);
      expect(JSON.parse((await request(`${scoped.url}/v1/sessions/${hidden}/journal`, h)).body)).toEqual({ events: [], next_journal_seq: 0, done: true });
      const list = JSON.parse((await request(`${scoped.url}/v1/sessions`, h)).body) as { sessions: { session_id: string }[] };
      expect(list.sessions.map((s) => s.session_id)).toEqual([visible]);
      expect((await request(`${scoped.url}/v1/capabilities`)).status).toBe(401);
    } finally {
      await scoped.close();
    }
  });

  it("caps the request body with 400 invalid_body", async () => {
    const small = await startGateway(bus, { listen: "127.0.0.1:0", maxBodyBytes: 64 });
    try {
      const sid = newId();
      await bus.publish(createEvent("SessionStarted", { sessionId: sid }));
      const r = await post(`${small.url}/v1/sessions/${sid}/gates/${newId()}`, `{"action":"Approve","values":{"note":"${"x".repeat(80)}"}}`);
      expect([r.status, r.body]).toEqual([400, '{"error":{"code":"invalid_body","message":"malformed request body","retryable":false}}\n']);
    } finally {
      await small.close();
    }
  });

  it("refuses a non-loopback address without authentication unless told to", async () => {
    await expect(startGateway(bus, { listen: "0.0.0.0:0" })).rejects.toBeInstanceOf(GatewayBindError);
    await expect(startGateway(bus, { listen: ":0" })).rejects.toBeInstanceOf(GatewayBindError);
    await expect(startGateway(bus, { listen: "localhost" })).rejects.toBeInstanceOf(GatewayBindError);
    for (const options of [{ insecurePublicBind: true }, { token: "t" }]) {
      const g = await startGateway(bus, { listen: "0.0.0.0:0", ...options });
      await g.close();
    }
    // ::1 is loopback: no authentication asked. A host without IPv6 cannot bind it at all,
    // which the probe tells first, so the one outcome for this host is asserted.
    const loopback: RunningGateway | Error = await startGateway(bus, { listen: "[::1]:0" }).catch((e: unknown) => e as Error);
    if (await canBindIpv6Loopback()) {
      expect(loopback).not.toBeInstanceOf(Error);
      await (loopback as RunningGateway).close();
    } else {
      expect(loopback).toBeInstanceOf(Error);
      expect((loopback as Error).message).not.toMatch(/authentication/);
    }
  });
});
