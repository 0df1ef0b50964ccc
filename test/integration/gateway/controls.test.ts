// Input and interrupt over HTTP on a real nats-server: a loop actor that serves them
// (serveControls), driven through the gateway with the Go handler's request bodies, its
// response bytes compared with go-http-bodies.jsonl; idempotent retries (sequential and
// concurrent); no listener; a timeout; generated bad bodies; the browser boundary.
import { request as httpRequest } from "node:http";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type ContentBlock, createEvent, type ControlHandlers, type ControlServer, type Jetloop, newId, startGateway, type RunningGateway } from "../../../src/index.js";
import { readJsonl } from "../../conformance/go-oracle.js";
import { sessionCommandSubject } from "../../../src/subjects/subjects.js";
import { natsServers, uniqueNamespace } from "../../harness/context.js";
import { request, type Reply } from "./http.js";

interface GoBody {
  id: string;
  body: string;
  status: number;
  content_type?: string;
  headers?: Record<string, string>;
}
const goBodies = new Map(readJsonl<GoBody>("go-http-bodies.jsonl").map((b) => [b.id, b]));
function go(id: string): GoBody {
  const b = goBodies.get(id);
  if (!b) throw new Error(`no Go body ${id}`);
  return b;
}
/** The Go handler's command id in its recording (Submit minted it there). */
const GO_COMMAND_ID = "6f1c2a3b-4d5e-4f60-8a7b-000000000901";
/** The Go request body of input/ok, byte for byte. */
const GO_INPUT = '{"blocks":[{"type":"text","Text":"hello"}]}';

function expectGo(r: Reply, goId: string, replace: [string, string] = ["", ""]): void {
  const b = go(goId);
  expect({ status: r.status, body: r.body }).toEqual({ status: b.status, body: b.body.replace(replace[0], replace[1]) });
  if (b.content_type) expect(r.headers.get("content-type")).toBe(b.content_type);
  for (const [k, v] of Object.entries(b.headers ?? {})) expect(r.headers.get(k), k).toBe(v);
}

let bus: Jetloop;
let gw: RunningGateway;
beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("gc") });
  await bus.provision();
  gw = await startGateway(bus, { listen: "127.0.0.1:0", answerTimeoutMs: 1000, maxBodyBytes: 64 * 1024 });
});
afterAll(async () => {
  await gw.close();
  await bus.close();
});

const post = (path: string, body: string | undefined, headers: Record<string, string> = {}) =>
  request(`${gw.url}${path}`, { method: "POST", body, headers: { "Content-Type": "application/json", ...headers } });
/** A POST with headers fetch may not set (`Host`). */
function rawPost(url: string, headers: Record<string, string>, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: "POST", headers: { "Content-Type": "application/json", ...headers } }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject).end(body);
  });
}
const errorOf = (body: string) => (JSON.parse(body) as { error: { code: string; retryable: boolean } }).error;

/** A loop actor serving one session's controls, recording what reaches it; its behaviour is set per test. */
class Actor {
  inputs: { commandId: string; blocks: ContentBlock[] }[] = [];
  interrupts: string[] = [];
  input: ControlHandlers["input"] = () => ({ ok: true });
  interrupt: ControlHandlers["interrupt"] = () => ({ interrupted: true });
  server!: ControlServer;
  readonly sid = newId();

  async start(): Promise<this> {
    this.server = await bus.session(this.sid).serveControls({
      input: (c) => {
        this.inputs.push(c);
        return this.input(c);
      },
      interrupt: (c) => {
        this.interrupts.push(c.commandId);
        return this.interrupt(c);
      },
    });
    return this;
  }
}

describe("a loop that serves input and interrupt, over HTTP", () => {
  let actor: Actor;
  beforeAll(async () => {
    actor = await new Actor().start();
  });
  afterAll(() => actor.server.close());

  it("takes the Go handler's input body and answers its bytes; the loop gets the blocks and the command id", async () => {
    const r = await post(`/v1/sessions/${actor.sid}/input`, GO_INPUT);
    const { command_id } = JSON.parse(r.body) as { command_id: string };
    expectGo(r, "input/ok", [GO_COMMAND_ID, command_id]);
    expect(actor.inputs.at(-1)).toEqual({ commandId: command_id, blocks: [{ type: "text", text: "hello" }] });
    // An upper-case {sid} is the same session.
    expect((await post(`/v1/sessions/${actor.sid.toUpperCase()}/input`, GO_INPUT)).status).toBe(200);
    // Every block kind of the content codec, in the Go spelling.
    const all =
      '{"blocks":[{"type":"text","Text":"a"},{"type":"image","MediaType":"image/png","Source":{"URL":"","Data":"aGk="}},{"type":"document","MediaType":"text/plain","Name":"n","Data":null,"Text":"t"},' +
      '{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","Text":"42"}],"is_error":true},{"type":"tool_use","ID":"toolu_1","Name":"bash","Input":{"command":"ls"}}]}';
    expect((await post(`/v1/sessions/${actor.sid}/input`, all)).status).toBe(200);
    expect(actor.inputs.at(-1)!.blocks.map((b) => b.type)).toEqual(["text", "image", "document", "tool_result", "tool_use"]);
  });

  it("interrupts, answering the Go handler's bytes, and says when nothing was running", async () => {
    expectGo(await post(`/v1/sessions/${actor.sid}/interrupt`, undefined), "interrupt/ok");
    actor.interrupt = () => ({ interrupted: false });
    const r = await post(`/v1/sessions/${actor.sid}/interrupt`, "{}");
    expect([r.status, r.body]).toEqual([200, '{"interrupted":false}\n']);
    actor.interrupt = () => ({ interrupted: true });
  });

  it("answers the Go handler's 500 when the loop refuses the input or its handler fails", async () => {
    actor.input = () => ({ ok: false, reason: "the loop is stopping" });
    expectGo(await post(`/v1/sessions/${actor.sid}/input`, GO_INPUT), "error/submit-failed");
    actor.input = () => {
      throw new Error("boom");
    };
    expectGo(await post(`/v1/sessions/${actor.sid}/input`, GO_INPUT), "error/submit-failed");
    actor.interrupt = () => Promise.reject(new Error("boom"));
    expectGo(await post(`/v1/sessions/${actor.sid}/interrupt`, undefined), "error/interrupt-failed");
    actor.input = () => ({ ok: true });
    actor.interrupt = () => ({ interrupted: true });
  });

  it("without an Idempotency-Key, each POST is a new input", async () => {
    const before = actor.inputs.length;
    const a = await post(`/v1/sessions/${actor.sid}/input`, GO_INPUT);
    const b = await post(`/v1/sessions/${actor.sid}/input`, GO_INPUT);
    expect(a.body).not.toBe(b.body);
    expect(actor.inputs.length - before).toBe(2);
  });

  it("under an Idempotency-Key, a retry gets the first outcome and the loop sees the input once", async () => {
    const key = { "Idempotency-Key": `k-${newId()}` };
    const before = actor.inputs.length;
    const first = await post(`/v1/sessions/${actor.sid}/input`, GO_INPUT, key);
    expect(first.status).toBe(200);
    for (let i = 0; i < 3; i++) expect(await post(`/v1/sessions/${actor.sid}/input`, GO_INPUT, key)).toMatchObject({ status: 200, body: first.body });
    expect(actor.inputs.length - before).toBe(1);
    // The same key with another body (bytes, as Go compares them): 409, the Go bytes.
    expectGo(await post(`/v1/sessions/${actor.sid}/input`, '{"blocks":[{"type":"text","Text":"bye"}]}', key), "error/idempotency-conflict");
    expectGo(await post(`/v1/sessions/${actor.sid}/input`, `${GO_INPUT} `, key), "error/idempotency-conflict");
    // The same key on another session, or on interrupt, is another command.
    const other = await new Actor().start();
    expect((await post(`/v1/sessions/${other.sid}/input`, GO_INPUT, key)).body).not.toBe(first.body);
    await other.server.close();
    // Interrupt: a retried interrupt does not cancel a newer turn.
    const ikey = { "Idempotency-Key": `i-${newId()}` };
    const n = actor.interrupts.length;
    expect((await post(`/v1/sessions/${actor.sid}/interrupt`, undefined, ikey)).body).toBe('{"interrupted":true}\n');
    actor.interrupt = () => ({ interrupted: false });
    expect((await post(`/v1/sessions/${actor.sid}/interrupt`, undefined, ikey)).body).toBe('{"interrupted":true}\n');
    expect(actor.interrupts.length - n).toBe(1);
    actor.interrupt = () => ({ interrupted: true });
  });

  it("concurrent repeats under one key wait for the first outcome; the loop runs it once", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    actor.input = async () => {
      await held;
      return { ok: true };
    };
    const key = { "Idempotency-Key": `c-${newId()}` };
    const before = actor.inputs.length;
    // Every repeat reaches the loop's command subject while the first is held: the eight
    // are concurrent, whatever the machine's load (seen there, not assumed after a time).
    const commands = bus.nc.subscribe(sessionCommandSubject(bus.namespace, actor.sid, "input"));
    await bus.nc.flush();
    let arrived = 0;
    const allArrived = (async () => {
      for await (const _ of commands) if (++arrived === 8) return;
    })();
    const replies = Array.from({ length: 8 }, () => post(`/v1/sessions/${actor.sid}/input`, GO_INPUT, key));
    await allArrived;
    commands.unsubscribe();
    release();
    const all = await Promise.all(replies);
    expect(new Set(all.map((r) => `${r.status} ${r.body}`)).size).toBe(1);
    expect(all[0]!.status).toBe(200);
    expect(actor.inputs.length - before).toBe(1);
    actor.input = () => ({ ok: true });
  });

  it("a refused input is not remembered: the retry under the same key runs again", async () => {
    const key = { "Idempotency-Key": `r-${newId()}` };
    actor.input = () => ({ ok: false, reason: "busy" });
    expect((await post(`/v1/sessions/${actor.sid}/input`, GO_INPUT, key)).status).toBe(500);
    actor.input = () => ({ ok: true });
    expect((await post(`/v1/sessions/${actor.sid}/input`, GO_INPUT, key)).status).toBe(200);
  });

  it("refuses an Idempotency-Key over 255 bytes with the Go bytes", async () => {
    expectGo(await post(`/v1/sessions/${actor.sid}/input`, GO_INPUT, { "Idempotency-Key": "k".repeat(256) }), "error/idempotency-key-too-long");
    expect((await post(`/v1/sessions/${actor.sid}/input`, GO_INPUT, { "Idempotency-Key": "k".repeat(255) })).status).toBe(200);
  });

  it("refuses every bad body with 400 invalid_body (the Go bytes), and the loop never sees it", async () => {
    const before = actor.inputs.length;
    expectGo(await post(`/v1/sessions/${actor.sid}/input`, '{"blocks":[]}'), "error/invalid-body-input-empty");
    const valid = fc.constantFrom('{"type":"text","Text":"a"}', '{"type":"thinking","Thinking":"t","Signature":""}');
    const badBlock = fc.oneof(
      fc.string({ maxLength: 8 }).filter((t) => !["text", "refusal", "thinking", "tool_use", "tool_result", "image", "audio", "document"].includes(t)).map((t) => `{"type":${JSON.stringify(t)}}`),
      fc.constantFrom('{"type":"text","Text":1}', '{"type":"text","Text":{}}', '{"type":"image","Source":"x"}', '{"type":"audio","Data":true}', '{"type":"tool_result","content":"x"}', '{"type":"tool_result","is_error":"yes"}', '{"type":"tool_use","ID":[]}', "null", "7"),
    );
    const badBody = fc.oneof(
      fc.tuple(fc.array(valid, { maxLength: 2 }), badBlock, fc.array(valid, { maxLength: 2 })).map(([a, b, c]) => `{"blocks":[${[...a, b, ...c].join(",")}]}`),
      fc.constantFrom("", "{}", "null", "[]", '{"blocks":null}', '{"blocks":{}}', '{"blocks":"x"}', '{"blocks":[{"type":"text","Text":"a"}]', "not json"),
    );
    await fc.assert(
      fc.asyncProperty(badBody, async (body) => {
        const r = await post(`/v1/sessions/${actor.sid}/input`, body);
        expect([r.status, errorOf(r.body).code], body).toEqual([400, "invalid_body"]);
      }),
      { numRuns: 40 },
    );
    // Oversized: past the body cap (64 KiB here), 400 as Go answers, never 413.
    const big = `{"blocks":[{"type":"text","Text":"${"x".repeat(70 * 1024)}"}]}`;
    expectGo(await post(`/v1/sessions/${actor.sid}/input`, big), "error/body-over-cap");
    expect(actor.inputs.length).toBe(before);
  });

  it("is behind the browser boundary: a foreign Origin, or a body not declared JSON from a page crossing sites, is refused before the loop", async () => {
    const before = [actor.inputs.length, actor.interrupts.length];
    for (const path of ["input", "interrupt"]) {
      const foreign = await post(`/v1/sessions/${actor.sid}/${path}`, GO_INPUT, { Origin: "https://attacker.example" });
      expect([foreign.status, errorOf(foreign.body).code]).toEqual([403, "origin_not_allowed"]);
      const plain = await rawPost(`${gw.url}/v1/sessions/${actor.sid}/${path}`, { "Content-Type": "text/plain", Origin: gw.url, "Sec-Fetch-Site": "cross-site" }, GO_INPUT);
      expect([plain.status, errorOf(plain.body).code]).toEqual([415, "unsupported_media_type"]);
      const rebound = await rawPost(`${gw.url}/v1/sessions/${actor.sid}/${path}`, { Host: "attacker.example" }, GO_INPUT);
      expect([rebound.status, errorOf(rebound.body).code]).toEqual([403, "host_not_allowed"]);
    }
    expect([actor.inputs.length, actor.interrupts.length]).toEqual(before);
    // The gateway's own origin passes.
    expect((await post(`/v1/sessions/${actor.sid}/input`, GO_INPUT, { Origin: gw.url })).status).toBe(200);
  });
});

describe("no loop actor, or a slow one", () => {
  it("a session with a journal but no actor: 404 session_not_found, retryable; an unknown session: not retryable", async () => {
    const sid = newId();
    await bus.publish(createEvent("SessionStarted", { sessionId: sid }));
    for (const path of ["input", "interrupt"]) {
      const r = await post(`/v1/sessions/${sid}/${path}`, GO_INPUT);
      expect([r.status, r.body]).toEqual([404, '{"error":{"code":"session_not_found","message":"session not found","retryable":true}}\n']);
      expectGo(await post(`/v1/sessions/${newId()}/${path}`, GO_INPUT), "error/session-not-found-gate");
    }
    expectGo(await post("/v1/sessions/not-a-uuid/input", GO_INPUT), "error/invalid-session-id");
  });

  it("an actor that does not answer in time: 503, retryable only under an Idempotency-Key", async () => {
    const actor = await new Actor().start();
    actor.input = () => new Promise(() => undefined);
    const keyed = await post(`/v1/sessions/${actor.sid}/input`, GO_INPUT, { "Idempotency-Key": "slow" });
    expect([keyed.status, errorOf(keyed.body)]).toEqual([503, { code: "session_timeout", message: "the session did not answer in time", retryable: true }]);
    const unkeyed = await post(`/v1/sessions/${actor.sid}/input`, GO_INPUT);
    expect([unkeyed.status, errorOf(unkeyed.body).retryable]).toEqual([503, false]);
    await actor.server.close();
  });
});

describe("what the gateway serves", () => {
  it("names input and interrupt in jetloop's capabilities, not in the Go document", async () => {
    expectGo(await request(`${gw.url}/v1/capabilities`), "capabilities/full");
    const own = JSON.parse((await request(`${gw.url}/jetloop/capabilities`)).body) as { features: string[] };
    expect(own.features.slice(0, 2)).toEqual(["input", "interrupt"]);
  });

  it("answers session creation with no_runtime, restore as a mux without it does, and GET on the controls with 405", async () => {
    const sid = newId();
    const created = await post("/v1/sessions", GO_INPUT);
    expect([created.status, errorOf(created.body).code]).toEqual([501, "no_runtime"]);
    expectGo(await post(`/v1/sessions/${sid}/restore`, undefined), "mux/not-found");
    for (const path of ["input", "interrupt"]) {
      const r = await request(`${gw.url}/v1/sessions/${sid}/${path}`);
      expect([r.status, r.body, r.headers.get("allow")]).toEqual([405, "Method Not Allowed\n", "POST"]);
    }
  });
});
