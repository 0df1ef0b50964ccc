// deploy/nats/attach-permissions.example.conf run verbatim: the attach, as the user it
// describes, appends every recorded Go event, while every write it could try on the Go side
// (a ledger append, a catalog or lease write, an object chunk, a stream purge or delete) is
// refused by the server and changes nothing.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attach, connect, type Jetloop, newId } from "../../src/index.js";
import { loadRecording, readBack } from "../harness/natsstore.js";
import { REPO_ROOT, startServer, type NatsServer } from "../harness/server.js";

const S101 = "6f1c2a3b-4d5e-4f60-8a7b-000000000101";

async function goSide(jsm: JetStreamManager): Promise<string> {
  const out: unknown[] = [];
  for (const n of ["KV_natsstore_kv", "KV_natsstore_leases", "OBJ_natsstore_blobs", `sessions_s${S101}`]) out.push(n, await readBack(jsm, n));
  return JSON.stringify(out);
}

describe("attach under deploy/nats/attach-permissions.example.conf", () => {
  let server: NatsServer;
  let admin: NatsConnection;
  let jsm: JetStreamManager;
  let bus: Jetloop;

  beforeAll(async () => {
    server = await startServer({ configText: readFileSync(join(REPO_ROOT, "deploy/nats/attach-permissions.example.conf"), "utf8") });
    admin = await natsConnect({ servers: server.url, user: "go-runtime", pass: "go-runtime-example" });
    jsm = await jetstreamManager(admin);
    await loadRecording(admin);
    const operator = await connect({ servers: server.url, namespace: "gorun", user: "operator", pass: "operator-example" });
    await operator.provision();
    await operator.close();
    bus = await connect({ servers: server.url, namespace: "gorun", user: "attach", pass: "attach-example" });
  }, 60_000);

  afterAll(async () => {
    await bus?.close();
    await admin?.close();
    await server?.close();
  });

  it("appends every Go event as the attach user", async () => {
    const errors: string[] = [];
    const a = await attach(bus, { pollMs: 100, onReport: (r) => (r.kind === "error" || r.kind === "stopped" ? errors.push(r.error.message) : undefined) });
    try {
      await a.caughtUp();
      // The catalog watch (an ordered consumer on KV_natsstore_kv) works under the grant too.
      for (let i = 0; i < 100 && a.goMeta(S101) === undefined; i++) await new Promise((r) => setTimeout(r, 50));
      expect(a.goMeta(S101)?.status).toBe("stopped");
      expect(errors).toEqual([]);
      expect(a.sessions().reduce((n, s) => n + s.appended, 0)).toBe(58);
      expect((await jsm.streams.info("gorun_journal")).state.messages).toBe(58);
    } finally {
      await a.close();
    }
  }, 60_000);

  it("with --go-http, publishes previews and serves its sessions' answers and controls under the grant", async () => {
    // A runtime's HTTP surface of the smallest kind: one preview on /events, interrupts answered.
    const runtime = createServer((req, res) => {
      if (req.method === "GET" && req.url === `/v1/sessions/${S101}/events`) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        const header = { session_id: S101, loop_id: newId(), turn_id: newId(), step_id: newId(), event_id: newId(), created_at: "2026-12-05T07:00:00Z" };
        const frame = () => res.write(`event: ephemeral\ndata: ${JSON.stringify({ v: 1, kind: "tool_call_started", header, delta: { tool_execution_id: newId(), tool_name: "bash" } })}\n\n`);
        const t = setInterval(frame, 100);
        res.on("close", () => clearInterval(t));
        return;
      }
      if (req.method === "POST" && req.url === `/v1/sessions/${S101}/interrupt`) {
        res.writeHead(200, { "content-type": "application/json" }).end('{"interrupted":true}\n');
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => runtime.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(runtime.address() as AddressInfo).port}`;
    const errors: string[] = [];
    const a = await attach(bus, { pollMs: 100, goHttp: { url }, onReport: (r) => (r.kind === "error" || r.kind === "stopped" ? errors.push(r.error.message) : undefined) });
    const operator = await connect({ servers: server.url, namespace: "gorun", user: "operator", pass: "operator-example" });
    try {
      await a.caughtUp();
      const previews = await operator.session(S101).subscribeEvents({ ephemeral: "all" });
      for await (const d of previews) {
        expect(d.event.type).toBe("ToolCallStarted");
        break;
      }
      await previews.close();
      expect(await operator.session(S101).interrupt()).toMatchObject({ interrupted: true });
      // The attach answers the loop's probe: a jetloop gate server there is refused.
      await expect(operator.serveGates(S101, newId())).rejects.toMatchObject({ code: "COMMAND_FAILED" });
      expect(errors.filter((m) => /permission/i.test(m))).toEqual([]);
    } finally {
      await operator.close();
      await a.close();
      runtime.closeAllConnections();
      await new Promise((r) => runtime.close(r));
    }
  }, 60_000);

  it("cannot write anything on the Go side", async () => {
    const before = await goSide(jsm);
    const nc = bus.nc;
    // Each refused by the server (a permissions violation), none stored.
    const attempts: [string, string][] = [
      [`sessions.${S101}`, '{"v":1,"kind":"fence","id":"9","body":"e30="}'],
      [`$KV.natsstore_kv.sessions/${S101}`, "{}"],
      [`$KV.natsstore_leases.sessions_s${S101}`, "{}"],
      ["$O.natsstore_blobs.C.forged", "x"],
      [`$JS.API.STREAM.PURGE.sessions_s${S101}`, "{}"],
      [`$JS.API.STREAM.DELETE.sessions_s${S101}`, ""],
      [`$JS.API.STREAM.MSG.DELETE.sessions_s${S101}`, '{"seq":2}'],
      [`$JS.API.STREAM.UPDATE.sessions_s${S101}`, "{}"],
    ];
    for (const [subject, data] of attempts) {
      await expect(nc.request(subject, data, { timeout: 1000 }), subject).rejects.toThrow();
    }
    await new Promise((r) => setTimeout(r, 200));
    expect(await goSide(jsm)).toBe(before);
  }, 60_000);

  it("takes the namespace's lease as the attach user (--lease), and a second attach stands by", async () => {
    const other = await connect({ servers: server.url, namespace: "gorun", user: "attach", pass: "attach-example" });
    const errors: string[] = [];
    const onReport = (r: { kind: string; error?: Error }) => (r.kind === "error" || r.kind === "stopped" ? errors.push(r.error!.message) : undefined);
    const a = await attach(bus, { pollMs: 100, lease: { leaseMs: 3000, holder: "first" }, onReport });
    try {
      await a.caughtUp();
      expect(a.role()).toBe("active");
      const b = await attach(other, { pollMs: 100, lease: { leaseMs: 3000, holder: "second" }, onReport });
      expect(b.role()).toBe("standby");
      await b.close();
      expect(errors).toEqual([]);
    } finally {
      await a.close();
      await other.close();
    }
  });
});
