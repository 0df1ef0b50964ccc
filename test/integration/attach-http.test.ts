// The live parts of an attached runtime over its HTTP surface (`attach(bus, { goHttp })`).
// The runtime is stood in for by jetloop itself: a namespace R whose loop actor opens gates
// and serves controls, behind jetloop's own gateway (it serves the Go HTTP surface byte for
// byte), every event of R's journal copied into a natsstore ledger as the Go runtime's
// store writes it. The attach follows that ledger into namespace B and takes B's answers
// and controls to R's gateway; R's previews reach B from the gateway's /events.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { jetstream, jetstreamManager, type JetStreamManager, type StreamConfig } from "@nats-io/jetstream";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Attach, attach } from "../../src/attach/attach.js";
import type { AttachReport } from "../../src/attach/session-follower.js";
import { CommandError, connect, createEvent, type GateServer, type Jetloop, newId, type RunningGateway, startGateway } from "../../src/index.js";
import { appendGoRecord, goEnvelope, readRecording } from "../harness/natsstore.js";
import { uniqueNamespace } from "../harness/namespace.js";
import { REPO_ROOT, startServer, type NatsServer } from "../harness/server.js";
import { sleep, waitFor } from "../harness/async.js";
import { reportFigure } from "../harness/figures-log.js";

const TOKEN = "s3cret-token-for-the-runtime";
const S103 = "6f1c2a3b-4d5e-4f60-8a7b-000000000103";

let server: NatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let runtime: Jetloop; // R: the runtime stand-in
let gw: RunningGateway; // R's gateway: the runtime's HTTP surface
let bus: Jetloop; // B: where the attach appends
const reports: AttachReport[] = [];
const stops: (() => Promise<void>)[] = [];

/** A Go session stream (natsstore's layout) whose ledger receives every event of R's journal for `sid`, in order. */
async function goSession(sid: string): Promise<void> {
  const { metadata: _m, ...config } = readRecording().streams.find((s) => s.config.name === `sessions_s${S103}`)!.config;
  await jsm.streams.add({ ...(config as unknown as StreamConfig), name: `sessions_s${sid}`, subjects: [`sessions.${sid}`] });
  await appendGoRecord(nc, sid, goEnvelope("fence", "1", Buffer.from('{"epoch":1}')));
  const j = runtime.journalOf(sid);
  const consumer = await jetstream(nc).consumers.get(j.stream, { filter_subjects: [j.subject] });
  const msgs = await consumer.consume();
  const copying = (async () => {
    for await (const m of msgs) {
      const id = (JSON.parse(new TextDecoder().decode(m.data)) as { event_id: string }).event_id;
      await appendGoRecord(nc, sid, goEnvelope("event", id, m.data));
    }
  })();
  stops.push(async () => {
    await msgs.close();
    await copying;
  });
}

async function attachTo(url: string, extra: Record<string, unknown> = {}): Promise<Attach> {
  const a = await attach(bus, { pollMs: 50, resyncMs: 200, onReport: (r) => reports.push(r), goHttp: { url, token: TOKEN, requestTimeoutMs: 800, resolvedWaitMs: 3000, minBackoffMs: 50, maxBackoffMs: 400, ...extra } });
  stops.push(() => a.close());
  return a;
}

beforeAll(async () => {
  server = await startServer();
  nc = await natsConnect({ servers: server.url });
  jsm = await jetstreamManager(nc);
  runtime = await connect({ servers: server.url, namespace: uniqueNamespace("goR") });
  await runtime.provision();
  gw = await startGateway(runtime, { listen: "127.0.0.1:0", token: TOKEN, answerTimeoutMs: 2000 });
  bus = await connect({ servers: server.url, namespace: uniqueNamespace("goB") });
  await bus.provision();
});
afterAll(async () => {
  for (const s of stops.reverse()) await s().catch(() => undefined);
  await gw?.close();
  await runtime?.close();
  await bus?.close();
  await nc?.close();
  await server?.close();
});

const coords = () => ({ turnId: newId(), stepId: newId(), toolExecutionId: newId() });
const request0 = { toolName: "bash", summary: "list files", requirements: [{ kind: "fs.read", match: "/tmp/*", description: "read /tmp" }] };

/** The id of the gate guarding `tool`, once the attach has appended its GateOpened to B. */
function gateInB(sid: string, tool: string): Promise<string> {
  return waitFor("the GateOpened in the attach's journal", async () => {
    for await (const { event: e } of bus.session(sid).replay({ enduring: "all", types: ["GateOpened"] })) {
      if (e.type === "GateOpened" && e.gate?.subject?.toolExecutionId === tool) return e.gate.id!;
    }
    return false;
  }, 10_000, 50);
}

async function resolvedInB(sid: string, gid: string): Promise<string[]> {
  const out: string[] = [];
  for await (const { event: e } of bus.session(sid).replay({ enduring: "all", types: ["GateResolved"] })) if (e.type === "GateResolved" && e.gateId === gid) out.push(`${e.reason}:${e.action ?? ""}`);
  return out;
}

describe("attach --go-http against jetloop's gateway as the runtime", () => {
  const sid = newId();
  const loop = newId();
  let gates: GateServer;
  let a: Attach;
  const inputs: unknown[] = [];

  beforeAll(async () => {
    await goSession(sid);
    gates = await runtime.serveGates(sid, loop);
    stops.push(() => gates.close());
    const controls = await runtime.session(sid).serveControls({
      input: (c) => {
        inputs.push(c.blocks);
        return { ok: true };
      },
      interrupt: () => ({ interrupted: true }),
    });
    stops.push(() => controls.close());
    await runtime.publish(createEvent("SessionStarted", { sessionId: sid }));
    a = await attachTo(gw.url);
    await a.caughtUp();
  });

  it("publishes the runtime's previews from /events as jetloop previews, and ignores its enduring frames", async () => {
    const sub = await bus.session(sid).subscribeEvents({ ephemeral: "all", enduring: "all" });
    await waitFor("the /events stream to open", () => a.live(sid)?.connected === true, 10_000, 20);
    const c = coords();
    const started = createEvent("ToolCallStarted", { sessionId: sid, loopId: loop, turnId: c.turnId, stepId: c.stepId, toolExecutionId: c.toolExecutionId, toolName: "bash", summary: "ls" });
    await runtime.publish(started);
    const seen: { type: string; eventId: string; journalSeq: number }[] = [];
    for await (const d of sub) {
      seen.push({ type: d.event.type, eventId: d.event.eventId, journalSeq: d.journalSeq });
      if (d.event.type === "ToolCallStarted") break;
    }
    await sub.close();
    expect(seen.at(-1)).toEqual({ type: "ToolCallStarted", eventId: started.eventId, journalSeq: 0 });
    // Never stored: the journal holds the store's events only.
    const stored: string[] = [];
    for await (const { event: e } of bus.session(sid).replay({ enduring: "all" })) stored.push(e.type);
    expect(stored).not.toContain("ToolCallStarted");
    expect(a.live(sid)).toMatchObject({ connected: true, answering: true });
    expect(a.live(sid)!.previews).toBeGreaterThanOrEqual(1);
  });

  it("forwards an answer sent through jetloop to the runtime: the outcome carries the GateResolved the attach appended", async () => {
    const c = coords();
    const decision = gates.requestPermission({ ...c, request: request0 });
    const gid = await gateInB(sid, c.toolExecutionId);
    const outcome = await bus.session(sid).answer(loop, { kind: "permission", gateId: gid, action: "Approve", commandId: newId() }, { timeoutMs: 5000 });
    expect(outcome).toMatchObject({ status: "ok", gateId: gid, action: "approve", control: "Approve", duplicate: false });
    expect(await decision).toMatchObject({ action: "Approve", answered: true });
    // The journal sequence is B's, of the GateResolved the attach appended from the store.
    expect(await resolvedInB(sid, gid)).toEqual(["answered:Approve"]);
    const seqs: number[] = [];
    for await (const { event: e, journalSeq } of bus.session(sid).replay({ enduring: "all", types: ["GateResolved"] })) if (e.type === "GateResolved" && e.gateId === gid) seqs.push(journalSeq);
    expect(outcome.journalSeq).toBe(seqs[0]);
  });

  it("a repeat of the command gets the first outcome; another answer is told the gate is resolved", async () => {
    const c = coords();
    void gates.requestPermission({ ...c, request: request0 });
    const gid = await gateInB(sid, c.toolExecutionId);
    const commandId = newId();
    const first = await bus.session(sid).answer(loop, { kind: "permission", gateId: gid, effect: "deny", commandId });
    const again = await bus.session(sid).answer(loop, { kind: "permission", gateId: gid, effect: "deny", commandId });
    expect(first).toMatchObject({ action: "deny", control: "Deny", duplicate: false });
    expect(again).toMatchObject({ action: "deny", journalSeq: first.journalSeq, duplicate: true });
    const other = await bus.session(sid).answer(loop, { kind: "permission", gateId: gid, action: "Approve" }).catch((e: unknown) => e);
    expect(other).toBeInstanceOf(CommandError);
    expect(other).toMatchObject({ code: "GATE_RESOLVED", outcome: { action: "deny", journalSeq: first.journalSeq } });
    expect(await resolvedInB(sid, gid)).toEqual(["answered:Deny"]);
  });

  it("maps the runtime's refusals: an unknown gate, an action the gate does not list", async () => {
    const unknown = await bus.session(sid).answer(loop, { kind: "permission", gateId: newId(), action: "Approve" }).catch((e: unknown) => e);
    expect(unknown).toMatchObject({ code: "GATE_UNKNOWN" });
    const c = coords();
    void gates.requestPermission({ ...c, request: request0, controls: ["Approve", "Deny"] });
    const gid = await gateInB(sid, c.toolExecutionId);
    const invalid = await bus.session(sid).answer(loop, { kind: "permission", gateId: gid, action: "Approve always for this workspace" }).catch((e: unknown) => e);
    expect(invalid).toMatchObject({ code: "COMMAND_INVALID" });
    expect(await resolvedInB(sid, gid)).toEqual([]);
    await bus.session(sid).answer(loop, { kind: "permission", gateId: gid, action: "Deny" });
  });

  it("forwards an input answer to an ask-user gate, free text and a listed choice", async () => {
    for (const [choices, answer] of [[undefined, "free text answer"], [["red", "blue"], "blue"]] as const) {
      const c = coords();
      const asked = gates.requestInput({ ...c, question: "which?", ...(choices ? { choices: [...choices] } : {}) });
      const gid = await waitFor("the input gate in B", async () => {
        for await (const { event: e } of bus.session(sid).replay({ enduring: "all", types: ["GateOpened"] })) if (e.type === "GateOpened" && e.gate?.kind === "harness.ask_user" && e.turnId === c.turnId) return e.gate.id!;
        return false;
      }, 10_000, 50);
      const outcome = await bus.session(sid).answer(loop, { kind: "input", gateId: gid, answer });
      expect(outcome).toMatchObject({ status: "ok", gateId: gid, action: "answered" });
      expect(await asked).toMatchObject({ answered: true, answer });
    }
  });

  it("is the gate actor of the loops it follows: a jetloop gate server on one is refused (one actor per loop)", async () => {
    const refused = await bus.serveGates(sid, loop).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "COMMAND_FAILED" });
    expect(String((refused as Error).message)).toMatch(/one actor per loop/);
  });

  it("a gate answered through jetloop's gateway while the runtime times it out: one resolution, the caller told which", async () => {
    const gwB = await startGateway(bus, { listen: "127.0.0.1:0", answerTimeoutMs: 5000 });
    const seen: string[] = [];
    try {
      for (const lateMs of [0, 150, 300, 450]) {
        const c = coords();
        const decision = gates.requestPermission({ ...c, request: request0, timeoutMs: 300 });
        const gid = await gateInB(sid, c.toolExecutionId);
        // The gate opened some ms ago in R; answered around its timeout.
        await sleep(lateMs);
        const r = await fetch(`${gwB.url}/v1/sessions/${sid}/gates/${gid}`, { method: "POST", body: JSON.stringify({ action: "Approve" }), headers: { "content-type": "application/json", origin: gwB.url } });
        const body = await r.text();
        const d = await decision;
        await waitFor("the resolution in B", async () => (await resolvedInB(sid, gid)).length > 0, 10_000, 50);
        const resolved = await resolvedInB(sid, gid);
        expect(resolved).toHaveLength(1);
        seen.push(`${lateMs} ms: ${r.status} ${resolved[0]}`);
        if (d.answered) {
          expect([r.status, body, resolved[0]]).toEqual([202, "{}\n", "answered:Approve"]);
        } else {
          expect(r.status).toBe(404);
          expect(JSON.parse(body)).toMatchObject({ error: { code: "gate_not_found" } });
          expect(resolved[0]).toBe("policy_response:Deny");
        }
      }
      reportFigure(`attach --go-http, a gate timed out by the runtime (300 ms) answered through jetloop's gateway after: ${seen.join("; ")}`);
    } finally {
      await gwB.close();
    }
  });

  it("forwards input and interrupt: the runtime's actor receives the blocks", async () => {
    const blocks = [{ type: "text" as const, text: "hello from B" }];
    const r = await bus.session(sid).submitInput(blocks);
    expect(r).toMatchObject({ ok: true, duplicate: false });
    expect(inputs.at(-1)).toEqual(blocks);
    expect(await bus.session(sid).interrupt()).toMatchObject({ interrupted: true });
  });

  it("jetloop attach --go-http with --go-token-file: the CLI forwards an answer, and prints no token", async () => {
    const ns = uniqueNamespace("goC");
    const other = await connect({ servers: server.url, namespace: ns });
    stops.push(() => other.close());
    await other.provision();
    const dir = mkdtempSync(join(tmpdir(), "jetloop-attach-"));
    stops.push(() => Promise.resolve(rmSync(dir, { recursive: true, force: true })));
    writeFileSync(join(dir, "token"), `${TOKEN}\n`);
    const child = spawn(process.execPath, ["--import", "tsx", join(REPO_ROOT, "src/cli/main.ts"), "attach", "--go-store", "--go-http", gw.url, "--go-token-file", join(dir, "token"), "-s", server.url, "-n", ns, "--status-every", "1"], {
      cwd: REPO_ROOT,
      env: { ...process.env, JETLOOP_LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (b: Buffer) => (output += b.toString()));
    child.stderr.on("data", (b: Buffer) => (output += b.toString()));
    const exited = new Promise((r) => child.once("exit", r));
    stops.push(async () => {
      child.kill("SIGTERM");
      await exited;
    });
    await waitFor("the CLI to catch up", () => output.includes("caught up:"), 30_000, 50);
    const c = coords();
    const decision = gates.requestPermission({ ...c, request: request0 });
    const gid = await waitFor("the GateOpened in the CLI's namespace", async () => {
      for await (const { event: e } of other.session(sid).replay({ enduring: "all", types: ["GateOpened"] })) if (e.type === "GateOpened" && e.gate?.subject?.toolExecutionId === c.toolExecutionId) return e.gate.id!;
      return false;
    }, 10_000, 50);
    // Two attaches follow this session (B's and the CLI's, each in its namespace): the answer goes through the CLI's.
    const outcome = await other.session(sid).answer(loop, { kind: "permission", gateId: gid, action: "Approve" }, { timeoutMs: 5000 });
    expect(outcome).toMatchObject({ status: "ok", action: "approve" });
    expect(await decision).toMatchObject({ answered: true, action: "Approve" });
    await waitFor("a status line with the /events figures", () => new RegExp(`${sid} following .* events=open previews=\\d+ reconnects=\\d+`).test(output), 10_000, 50);
    child.kill("SIGTERM");
    await exited;
    expect(output).not.toContain(TOKEN);
  });

  it("never logs or reports the token", () => {
    expect(JSON.stringify(reports.map((r) => ("error" in r ? r.error.message : "")))).not.toContain(TOKEN);
  });
});

/** An upstream that takes requests and never answers (a hung runtime): what it received. */
async function hungUpstream(): Promise<{ url: string; seen: IncomingMessage[]; server: Server }> {
  const seen: IncomingMessage[] = [];
  const server = createServer((req) => void seen.push(req));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

describe("a slow or stopped runtime costs only its own sessions", () => {
  it("answers through a hung runtime are told to repeat within the request bound; an honest session beside is answered at once", async () => {
    const hung = await hungUpstream();
    // A session of a runtime that hangs: its answers are forwarded by the attach's module to that runtime.
    const sid = newId();
    const loop = newId();
    const gid = newId();
    await runtime.publish(createEvent("GateOpened", { sessionId: sid, loopId: loop, ...coords(), gate: { id: gid, kind: "harness.permission", resolver: "loop", prompt: { controls: [{ action: "Approve" }] }, subject: { toolExecutionId: newId() } } }));
    const honestSid = newId();
    const honestLoop = newId();
    const honest = await bus.serveGates(honestSid, honestLoop);
    stops.push(() => honest.close());
    stops.push(async () => {
      for (const req of hung.seen) req.socket.destroy();
      await new Promise((r) => hung.server.close(r));
    });
    const { SessionAnswers } = await import("../../src/attach/go-answers.js");
    const { GoHttp } = await import("../../src/attach/go-http.js");
    const errors: Error[] = [];
    const answers = new SessionAnswers({ bus: runtime, http: new GoHttp({ url: hung.url, token: TOKEN, requestTimeoutMs: 600, eventsConnectTimeoutMs: 1000, maxResponseBytes: 1 << 20 }), resolvedWaitMs: 500, maxInFlight: 4, report: (_s, e) => errors.push(e) }, sid);
    await answers.start();
    stops.push(() => answers.close());
    const c = coords();
    const honestDecision = honest.requestPermission({ ...c, request: request0 });
    const t0 = Date.now();
    const slow = runtime.session(sid).answer(loop, { kind: "permission", gateId: gid, action: "Approve" }, { timeoutMs: 5000 }).catch((e: unknown) => e);
    const hgid = await gateInB(honestSid, c.toolExecutionId);
    const h0 = Date.now();
    await bus.session(honestSid).answer(honestLoop, { kind: "permission", gateId: hgid, action: "Approve" });
    const honestMs = Date.now() - h0;
    expect(await honestDecision).toMatchObject({ answered: true });
    const r = await slow;
    const slowMs = Date.now() - t0;
    expect(r).toMatchObject({ code: "COMMAND_TIMEOUT" });
    expect(slowMs).toBeGreaterThanOrEqual(550);
    expect(slowMs).toBeLessThan(3000);
    expect(honestMs).toBeLessThan(500);
    reportFigure(`attach --go-http, a hung runtime (request bound 600 ms): its answer told COMMAND_TIMEOUT after ${slowMs} ms; an honest session's answer meanwhile ${honestMs} ms`);
    // The token went to the runtime's own address, in its header.
    expect(hung.seen[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(JSON.stringify(errors.map((e) => e.message))).not.toContain(TOKEN);
  });

  it("a stopped runtime: answers are told to repeat at once (503 retryable at the gateway), /events reconnects with a bounded backoff", async () => {
    const gone = await hungUpstream();
    const url = gone.url;
    await new Promise((r) => gone.server.close(r));
    const sid = newId();
    const loop = newId();
    const gid = newId();
    await runtime.publish(createEvent("GateOpened", { sessionId: sid, loopId: loop, ...coords(), gate: { id: gid, kind: "harness.permission", resolver: "loop", prompt: { controls: [{ action: "Approve" }] }, subject: { toolExecutionId: newId() } } }));
    const { SessionAnswers } = await import("../../src/attach/go-answers.js");
    const { GoHttp } = await import("../../src/attach/go-http.js");
    const { PreviewFollower } = await import("../../src/attach/go-previews.js");
    const http = new GoHttp({ url, token: TOKEN, requestTimeoutMs: 600, eventsConnectTimeoutMs: 1000, maxResponseBytes: 1 << 20 });
    const answers = new SessionAnswers({ bus: runtime, http, resolvedWaitMs: 500, maxInFlight: 4, report: () => undefined }, sid);
    await answers.start();
    stops.push(() => answers.close());
    const gwR2 = await startGateway(runtime, { listen: "127.0.0.1:0", answerTimeoutMs: 3000 });
    stops.push(() => gwR2.close());
    const t0 = Date.now();
    const r = await fetch(`${gwR2.url}/v1/sessions/${sid}/gates/${gid}`, { method: "POST", body: JSON.stringify({ action: "Approve" }), headers: { "content-type": "application/json", origin: gwR2.url } });
    const ms = Date.now() - t0;
    expect(r.status).toBe(503);
    expect(JSON.parse(await r.text())).toMatchObject({ error: { code: "gate_capacity", retryable: true } });
    expect(ms).toBeLessThan(1500);
    reportFigure(`attach --go-http, a stopped runtime: the gateway answered 503 gate_capacity (retryable) in ${ms} ms`);
    const follower = new PreviewFollower({ http, publish: () => Promise.resolve(), report: () => undefined, minBackoffMs: 20, maxBackoffMs: 200 }, sid);
    await sleep(1500);
    const f = follower.figures();
    await follower.close();
    // 20, 40, 80, 160, then 200 ms each (half to whole of it): bounded, never a busy loop.
    expect(f.connected).toBe(false);
    expect(f.reconnects).toBeGreaterThanOrEqual(5);
    expect(f.reconnects).toBeLessThan(30);
    expect(f.lastError).toMatch(/failed|unreachable/);
    reportFigure(`attach --go-http, a stopped runtime: /events reopened ${f.reconnects} times in 1.5 s (backoff 20 ms doubled to 200 ms)`);
  });
});
