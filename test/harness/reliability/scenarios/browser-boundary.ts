// Scenario 12 (RELIABILITY.md): the gateway within a browser's reach. A default gateway
// (loopback, no token) holds a pending permission gate; headless Chromium, on a page
// served by a second local HTTP server (another origin), tries every way a page can send
// the approval, and a DNS-rebinding page (Chromium maps rebind.test to 127.0.0.1) tries
// to read the session list and approve under a foreign Host. Then the gateway's own page
// approves the gate, and a gateway whose allowlist names the other origin serves it CORS.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { connect, createEvent, type Jetloop, newId, type RunningGateway, startGateway } from "../../../../src/index.js";
import { natsServers } from "../../context.js";
import { record, type ScenarioContext, scenarioNamespace } from "./common.js";
import type { ScenarioRecord } from "../figures.js";

const CHROMIUM = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--host-resolver-rules=MAP rebind.test 127.0.0.1"];

/** One attempt: what the page did, what the browser reported, what the gateway answered. */
export interface Attempt {
  readonly what: string;
  /** The page's view: a status it could read, "opaque", or the rejection. */
  readonly browser: string;
  /** The statuses the gateway answered for it (preflight included), in order. */
  readonly gateway: number[];
}

export interface BoundaryResult {
  readonly record: ScenarioRecord;
  readonly attempts: Attempt[];
  /** The gate was still open after every foreign attempt. */
  readonly gateOpenAfterAttacks: boolean;
  /** What the loop received in the end (the own page's approval). */
  readonly decision: string;
  readonly ownPageStatus: number;
  /** The allowlisted origin: the list it read, and the preflight it passed. */
  readonly allowedRead: { status: number; sessions: number };
  readonly allowedPreflight: number;
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)));
}

/** Statuses the gateway answered, per request path, from the server's side. */
function recordStatuses(gw: RunningGateway): { take(): number[] } {
  let seen: number[] = [];
  gw.server.on("request", (_req, res) => res.on("finish", () => seen.push(res.statusCode)));
  return {
    take() {
      const s = seen;
      seen = [];
      return s;
    },
  };
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function browserBoundaryScenario(ctx: ScenarioContext): Promise<BoundaryResult> {
  const started = Date.now();
  const bus: Jetloop = await connect({ servers: natsServers(), namespace: scenarioNamespace("bb") });
  const profile = mkdtempSync(join(tmpdir(), "jetloop-chromium-"));
  // The other origin: a plain page, the attacks run in it (page.evaluate is the page's own script).
  const other = createServer((_req, res) => res.writeHead(200, { "Content-Type": "text/html" }).end("<!doctype html><title>elsewhere</title><iframe name=sink></iframe>"));
  let gw: RunningGateway | undefined;
  let allowing: RunningGateway | undefined;
  let browser: BrowserContext | undefined;
  try {
    await bus.provision();
    gw = await startGateway(bus, { listen: "127.0.0.1:0" });
    const statuses = recordStatuses(gw);
    const otherOrigin = `http://localhost:${await listen(other)}`;
    browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS });

    const sessionId = newId();
    const loopId = newId();
    const turnId = newId();
    await bus.publish(createEvent("SessionStarted", { sessionId }));
    await bus.publish(createEvent("TurnStarted", { sessionId, loopId, turnId }));
    const gates = await bus.serveGates(sessionId, loopId);
    const toolExecutionId = newId();
    let decided = "pending";
    const decision = gates.requestPermission({ turnId, stepId: newId(), toolExecutionId, request: { toolName: "bash", summary: "rm -rf ~" } }).then((d) => (decided = d.effect));
    const gateId = await waitForGate(gw.url, sessionId);
    const gatePath = `/v1/sessions/${sessionId}/gates/${gateId}`;
    const gateUrl = `${gw.url}${gatePath}`;
    const approve = '{"action":"Approve"}';

    const attempts: Attempt[] = [];
    const page = await browser.newPage();
    await page.goto(`${otherOrigin}/`);
    const attempt = async (what: string, run: (p: Page) => Promise<string>) => {
      statuses.take();
      const browserView = await run(page).catch((e: unknown) => `rejected: ${(e as Error).message.split("\n")[0]}`);
      await settle(300); // a form post or a beacon lands after the call returns
      attempts.push({ what, browser: browserView, gateway: statuses.take() });
    };
    const inPage = (fn: (args: { url: string; body: string }) => Promise<string>) => (p: Page) => p.evaluate(fn, { url: gateUrl, body: approve });

    await attempt("no-cors POST, text/plain, from another origin", inPage(async ({ url, body }) => (await fetch(url, { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body })).type));
    await attempt(
      "fetch POST, application/json, from another origin",
      inPage(async ({ url, body }) => {
        try {
          return String((await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body })).status);
        } catch (e) {
          return `rejected: ${(e as Error).name}`;
        }
      }),
    );
    await attempt(
      "form POST (text/plain, JSON-shaped field) from another origin",
      inPage(({ url }) => {
        const form = document.createElement("form");
        form.method = "POST";
        form.action = url;
        form.enctype = "text/plain";
        form.target = "sink";
        const field = document.createElement("input");
        field.name = '{"action":"Approve","x":"';
        field.value = '"}';
        form.append(field);
        document.body.append(form);
        form.submit();
        return Promise.resolve("submitted");
      }),
    );
    await attempt("sendBeacon from another origin", inPage(({ url, body }) => Promise.resolve(String(navigator.sendBeacon(url, body)))));
    await attempt(
      "fetch GET /v1/sessions from another origin",
      inPage(async ({ url }) => {
        try {
          return String((await fetch(new URL("/v1/sessions", url))).status);
        } catch (e) {
          return `rejected: ${(e as Error).name}`;
        }
      }),
    );
    // DNS rebinding: the attacker's name now resolves to the gateway's address.
    const port = new URL(gw.url).port;
    const rebound = await browser.newPage();
    await attempt("GET /v1/sessions under Host rebind.test (DNS rebinding)", async () => String((await rebound.goto(`http://rebind.test:${port}/v1/sessions`))?.status()));
    await attempt("POST the approval under Host rebind.test (same origin to the page)", () =>
      rebound.evaluate(async ({ path, body }) => String((await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body })).status), { path: gatePath, body: approve }),
    );

    const gateOpenAfterAttacks = decided === "pending" && (await readStatus(gw.url, sessionId)).waiting_gate_id === gateId;

    // The gateway's own page approves.
    const own = await browser.newPage();
    const ownPage = await own.goto(`${gw.url}/#${sessionId}`);
    await own.locator(`li[data-tool="${toolExecutionId}"] button[data-action="Approve"]`).click();
    await decision;

    // An allowlisted origin may call a gateway that names it.
    allowing = await startGateway(bus, { listen: "127.0.0.1:0", allowedOrigins: [otherOrigin] });
    const allowedRead = await page.evaluate(async (url) => {
      const r = await fetch(url, { headers: { "Content-Type": "application/json" } });
      return { status: r.status, sessions: ((await r.json()) as { sessions: unknown[] }).sessions.length };
    }, `${allowing.url}/v1/sessions`);
    const pre = await fetch(`${allowing.url}${gatePath}`, { method: "OPTIONS", headers: { Origin: otherOrigin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type" } });
    await gates.close();

    const refused = attempts.filter((a) => a.gateway.length > 0 && a.gateway.every((s) => s === 403)).length;
    const facts: Record<string, string | number | boolean> = {};
    for (const a of attempts) facts[a.what] = `gateway ${a.gateway.join(", ") || "—"}; page saw ${a.browser}`;
    facts["gate still open after the attempts"] = gateOpenAfterAttacks;
    facts["own page: GET / then Approve"] = `${ownPage?.status()}; loop received ${decided}`;
    facts["allowlisted origin: GET /v1/sessions"] = String(allowedRead.status);
    facts["allowlisted origin: preflight"] = String(pre.status);
    const rows = [{ what: "foreign attempts (answered other than 403)", published: attempts.length, delivered: attempts.length - refused, lost: null, duplicated: 0 }];
    return {
      record: record(ctx, "12-browser-boundary", "12. Browser boundary: another origin and a rebinding page against a default gateway", bus.serverVersion, started, rows, facts),
      attempts,
      gateOpenAfterAttacks,
      decision: decided,
      ownPageStatus: ownPage?.status() ?? 0,
      allowedRead,
      allowedPreflight: pre.status,
    };
  } finally {
    await browser?.close();
    rmSync(profile, { recursive: true, force: true });
    await new Promise((r) => other.close(r));
    await allowing?.close();
    await gw?.close();
    await bus.close();
  }
}

async function readStatus(url: string, sessionId: string): Promise<{ waiting_gate_id?: string }> {
  return (await (await fetch(`${url}/v1/sessions/${sessionId}/status`)).json()) as { waiting_gate_id?: string };
}

async function waitForGate(url: string, sessionId: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const s = await readStatus(url, sessionId);
    if (s.waiting_gate_id) return s.waiting_gate_id;
    await settle(50);
  }
  throw new Error("the gate did not open");
}
