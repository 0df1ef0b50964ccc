// The gateway's /metrics after a demo-like run: `jetloop gateway --metrics` as a process,
// one approval sequence answered over its HTTP surface while an SSE client follows the
// session; the scraped figures are what happened. And the bind rule of --listen.
import { spawn, type ChildProcess } from "node:child_process";
import { get, type IncomingMessage, request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, type GateServer, type Jetloop, METRICS, newId } from "../../src/index.js";
import { prometheusSeries } from "../../src/telemetry/metrics.js";
import { jetloopIn } from "../harness/cli.js";
import { natsUrl, uniqueNamespace } from "../harness/context.js";
import { waitFor } from "../harness/async.js";

const ns = uniqueNamespace();
let bus: Jetloop;
let gates: GateServer;
let child: ChildProcess;
let gatewayUrl: string;
let metricsUrl: string;

beforeAll(async () => {
  bus = await connect({ servers: natsUrl(), namespace: ns });
  await bus.provision();
  child = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", "gateway", "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--server", natsUrl(), "--namespace", ns], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stderr!.on("data", (b: Buffer) => (err += b.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start: ${err}`)), 30_000);
    child.stdout!.on("data", (b: Buffer) => {
      out += b.toString();
      const g = /listening on (http:\S+)/.exec(out);
      const m = /metrics on (http:\S+)/.exec(out);
      if (g && m) {
        clearTimeout(timer);
        [gatewayUrl, metricsUrl] = [g[1]!, m[1]!];
        resolve();
      }
    });
    child.once("exit", () => reject(new Error(`gateway exited: ${err}`)));
  });
});
afterAll(async () => {
  await gates?.close();
  await bus?.close();
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
});

function text(url: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: init.method ?? "GET", headers: init.headers }, (res) => {
      let body = "";
      res.on("data", (b: Buffer) => (body += b.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end(init.body);
  });
}

/** One series' value from Prometheus text: `name{labels}` exactly as written, or 0 when absent. */
function series(scrape: string, name: string, labels = ""): number {
  const want = labels === "" ? name : `${name}{${labels}}`;
  for (const line of scrape.split("\n")) {
    if (line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    const key = line.slice(0, at).replace(/,?otel_scope_[a-z_]+="[^"]*"/g, "").replace("{}", "").replace("{,", "{");
    if (key === want) return Number(line.slice(at + 1));
  }
  return 0;
}

describe("jetloop gateway --metrics", () => {
  it("refuses a non-loopback address unless told, like --listen", async () => {
    const r = await jetloopIn(["gateway", "--metrics", "0.0.0.0:9464", "--server", natsUrl(), "--namespace", ns]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--metrics 0\.0\.0\.0:9464 is not a loopback address: add --insecure-public-metrics/);
    const bad = await jetloopIn(["gateway", "--metrics", "nope", "--server", natsUrl(), "--namespace", ns]);
    expect(bad.stderr).toMatch(/--metrics "nope" must be HOST:PORT/);
  });

  it("serves figures that match a demo-like run: deliveries, gateway requests, SSE bytes and clients", async () => {
    const sid = newId();
    const loopId = newId();
    gates = await bus.serveGates(sid, loopId);
    const ids = { turnId: newId(), stepId: newId(), toolExecutionId: newId() };
    const decision = gates.requestPermission({ ...ids, request: { toolName: "bash", summary: "ls", requirements: [{ kind: "fs.read", match: "/tmp/*", description: "read /tmp" }] } });
    const gid = await waitFor("the gate to open", async () => {
      for await (const { event: e } of bus.session(sid).replay({ enduring: "all", types: ["GateOpened"] })) if (e.type === "GateOpened") return e.gate.id!;
      return false;
    }, 5000, 50);

    // An SSE client following the session from its start.
    // Kept as bytes: a chunk may end inside a multi-byte character.
    const chunks: Buffer[] = [];
    let received = "";
    const sse = get(`${gatewayUrl}/v1/sessions/${sid}/events?last_event_id=0`);
    const response = await new Promise<IncomingMessage>((resolve) => sse.once("response", resolve));
    response.on("data", (b: Buffer) => {
      chunks.push(b);
      received = Buffer.concat(chunks).toString("utf8");
    });
    await waitFor("the first two frames", () => (received.match(/^event: enduring$/gm) ?? []).length === 2, 5000, 20);

    const answered = await text(`${gatewayUrl}/v1/sessions/${sid}/gates/${gid}`, { method: "POST", body: JSON.stringify({ action: "Approve" }), headers: { "content-type": "application/json" } });
    expect(answered.status).toBe(202);
    expect((await decision).effect).toBe("approve");
    const all = { sessionId: sid, loopId, ...ids };
    await bus.publish(createEvent("ToolCallStarted", { ...all, toolName: "bash" }));
    // Text beyond ASCII: the byte count is of UTF-8 bytes, not of characters.
    await bus.publish(createEvent("ToolCallCompleted", { ...all, resultPreview: "a b é" }));
    await bus.publish(createEvent("StepDone", { sessionId: sid, loopId, turnId: ids.turnId, stepId: ids.stepId, messages: [{ role: "assistant", blocks: [{ type: "text", text: "done ✓ — 🎉 ünïcödé" }] }] }));
    // PermissionRequested, GateOpened, GateResolved, PermissionDecided, StepDone; two previews.
    await waitFor("every frame", () => (received.match(/^event: enduring$/gm) ?? []).length === 5 && (received.match(/^event: ephemeral$/gm) ?? []).length === 2, 5000, 20);
    expect(await text(`${gatewayUrl}/v1/sessions/${sid}/status`)).toMatchObject({ status: 200 });

    const open = await text(metricsUrl);
    expect(series(open.body, "jetloop_gateway_sse_clients")).toBe(1);
    sse.destroy();
    const scrape = await waitFor("the stream to be counted as ended", async () => {
      const s = (await text(metricsUrl)).body;
      return series(s, "jetloop_gateway_requests_total", 'route="events",status="200"') === 1 ? s : false;
    }, 5000, 50);

    expect(series(scrape, "jetloop_deliveries_total", 'kind="feed"')).toBe(5);
    expect(series(scrape, "jetloop_deliveries_total", 'kind="preview"')).toBe(2);
    expect(series(scrape, "jetloop_deliveries_total", 'kind="durable"')).toBe(0);
    expect(series(scrape, "jetloop_gateway_requests_total", 'route="gate",status="202"')).toBe(1);
    expect(series(scrape, "jetloop_gateway_requests_total", 'route="status",status="200"')).toBe(1);
    expect(series(scrape, "jetloop_gateway_sse_clients")).toBe(0);
    // Every byte the client got was a frame (no heartbeat within 20 s).
    expect(series(scrape, "jetloop_gateway_sse_bytes_total")).toBe(Buffer.concat(chunks).length);
    // The gateway appends nothing itself (the loop actor writes the answer's records).
    expect(series(scrape, "jetloop_appends_total", 'outcome="ok"')).toBe(0);
    expect(series(scrape, "jetloop_gateway_request_duration_count", 'route="gate"')).toBe(1);
    // Every series is one the registry names (the dashboard is built from it).
    const names = new Set(Object.values(METRICS).flatMap(prometheusSeries));
    for (const line of scrape.split("\n")) {
      const name = /^([a-z_]+)[{ ]/.exec(line)?.[1];
      if (name !== undefined && name !== "target_info") expect(names).toContain(name);
    }
    // No id, subject or content in any label.
    expect(scrape).not.toContain(sid);
    expect(scrape).not.toContain(gid);
  });

  it("answers 404 off its one path", async () => {
    expect((await text(metricsUrl.replace("/metrics", "/other"))).status).toBe(404);
  });
});
