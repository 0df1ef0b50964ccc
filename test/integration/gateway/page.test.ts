// The gateway's web page in headless Chromium (Debian's chromium, driven by playwright-core)
// against a real gateway and a real nats-server of its own (stopped and restarted under the
// open page in the last test): one test per state the page shows. Needs the page's bundle
// (`npm run build`, or `npx tsx scripts/build-web.ts`) and /usr/bin/chromium. Screenshots go
// to test-output/gateway-page/ (docs/page-*.png are taken from there).
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect as natsConnect } from "@nats-io/transport-node";
import { connect, createEvent, fromConnection, type Jetloop, newId, startGateway, type RunningGateway } from "../../../src/index.js";
import { uniqueNamespace } from "../../harness/context.js";
import { startServer, type NatsServer } from "../../harness/server.js";
import { request } from "./http.js";

const CHROMIUM = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const OUT = join(import.meta.dirname, "../../../test-output/gateway-page");

let server: NatsServer;
let browser: BrowserContext;
let profile: string;
const open: { bus: Jetloop; gw: RunningGateway }[] = [];

/** A bus on its own namespace (provisioned unless told otherwise) and a gateway in front of it. */
async function gatewayFor(provision = true): Promise<{ bus: Jetloop; gw: RunningGateway }> {
  const bus = await connect({ servers: server.url, namespace: uniqueNamespace("gp") });
  if (provision) await bus.provision();
  const gw = await startGateway(bus, { listen: "127.0.0.1:0" });
  open.push({ bus, gw });
  return { bus, gw };
}

/** A page that records every failed response (a favicon 404 included) and every console error. */
async function newPage(): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage();
  await page.setViewportSize({ width: 1040, height: 640 });
  const problems: string[] = [];
  page.on("response", (r) => {
    if (r.status() >= 400 && !r.url().includes("/v1/")) problems.push(`${r.status()} ${r.url()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  // A style, script, image or call the page's own policy refused.
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy/i.test(m.text())) problems.push(`refused by the policy: ${m.text()}`);
  });
  return { page, problems };
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(OUT, `${name}.png`) });
const badge = (page: Page, state: string) => page.locator(`#connection[data-state="${state}"]`).waitFor({ timeout: 30_000 });
const tool = (page: Page, id: string) => page.locator(`li.tool[data-tool="${id}"]`);

/** A session with one loop and an open turn; returns its coordinates. */
async function startSession(bus: Jetloop) {
  const ids = { sessionId: newId(), loopId: newId(), turnId: newId(), stepId: newId() };
  await bus.publish(createEvent("SessionStarted", { sessionId: ids.sessionId }));
  await bus.publish(createEvent("TurnStarted", { sessionId: ids.sessionId, loopId: ids.loopId, turnId: ids.turnId }));
  return ids;
}

/** A gateway, a session with an open turn, and a page following it live. */
async function sessionPage() {
  const { bus, gw } = await gatewayFor();
  const ids = await startSession(bus);
  const { page, problems } = await newPage();
  await page.goto(`${gw.url}/#${ids.sessionId}`);
  await badge(page, "live");
  return { bus, gw, ids, page, problems };
}

beforeAll(async () => {
  mkdirSync(OUT, { recursive: true });
  server = await startServer();
  profile = mkdtempSync(join(tmpdir(), "jetloop-chromium-"));
  browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS });
});
afterAll(async () => {
  await browser?.close();
  rmSync(profile, { recursive: true, force: true });
  for (const { bus, gw } of open) {
    await gw.close();
    await bus.close();
  }
  await server?.close();
});

describe("the web page", () => {
  it("empty namespace: live, says there are no sessions, no empty headings, no 404 (favicon)", async () => {
    const { gw } = await gatewayFor();
    const { page, problems } = await newPage();
    await page.goto(gw.url);
    await badge(page, "live");
    await page.locator("#sessions-empty").waitFor();
    expect(await page.locator("#sessions li").count()).toBe(0);
    expect(await page.locator("#view h2, #view h3, #view .session-head").count()).toBe(0);
    expect(await page.locator("#view .intro").textContent()).toMatch(/^Waiting for the first session/);
    expect(await page.locator("#banner").isHidden()).toBe(true);
    await shot(page, "empty");
    expect(problems).toEqual([]);
    // Served so that only its own origin is reached and no other site can frame it; the
    // page above ran under exactly this policy (a refused style, script or call would show).
    const r = await request(`${gw.url}/`);
    expect(r.headers.get("content-security-policy")).toMatch(/frame-ancestors 'none'/);
    expect(r.headers.get("content-security-policy")).toMatch(/connect-src 'self'/);
    expect(r.headers.get("x-frame-options")).toBe("DENY");
    await page.close();
  });

  it("the list: sessions appear and change state live, with short ids and times", async () => {
    const { bus, gw } = await gatewayFor();
    const { page, problems } = await newPage();
    await page.goto(gw.url);
    await badge(page, "live");
    const a = await startSession(bus);
    const row = page.locator(`a.session[data-session="${a.sessionId}"]`);
    await page.locator(`a.session[data-session="${a.sessionId}"][data-state="running"]`).waitFor();
    expect(await row.locator(".sid").textContent()).toBe(`…${a.sessionId.slice(-8)}`);
    expect(await row.locator(".sid").getAttribute("title")).toBe(a.sessionId);
    expect(await row.locator("time").textContent()).toMatch(/^(just now|\d+ s ago)$/);
    await bus.publish(createEvent("TurnDone", { sessionId: a.sessionId, loopId: a.loopId, turnId: a.turnId }));
    await page.locator(`a.session[data-session="${a.sessionId}"][data-state="idle"]`).waitFor();
    const b = await startSession(bus);
    await page.locator(`a.session[data-session="${b.sessionId}"][data-state="running"]`).waitFor();
    expect(await page.locator("#session-count").textContent()).toBe("2");
    // Choosing a session follows it without a reload; its turn shows its outcome and times.
    await row.click();
    await page.locator(`article.turn[data-turn="${a.turnId}"][data-outcome="done"]`).waitFor();
    expect(await page.locator("#session-state").textContent()).toBe("idle");
    expect(await page.locator(`article.turn[data-turn="${a.turnId}"] header`).textContent()).toMatch(/Turn 1\d\d:\d\d:\d\d→ \d\d:\d\d:\d\d/);
    await shot(page, "list");
    expect(problems).toEqual([]);
    await page.close();
  });

  it("an approval card renders every control the gate lists and posts {action} as JSON; Approve and Deny reach the loop", async () => {
    const { bus, ids, page, problems } = await sessionPage();
    const gates = await bus.serveGates(ids.sessionId, ids.loopId);

    for (const action of ["Approve", "Deny"] as const) {
      const toolExecutionId = newId();
      const decision = gates.requestPermission({ ...ids, toolExecutionId, toolUseId: `toolu_${action}`, request: { toolName: "bash", summary: `rm -rf build (${action})` } });
      const buttons = tool(page, toolExecutionId).locator(".controls button");
      await buttons.first().waitFor();
      expect(await buttons.evaluateAll((bs) => bs.map((b) => b.getAttribute("data-action")))).toEqual(["Approve", "Approve always for this workspace", "Deny"]);
      const posted = page.waitForRequest((r) => r.method() === "POST" && r.url().includes("/gates/"));
      await tool(page, toolExecutionId).locator(`button[data-action="${action}"]`).click();
      const req = await posted;
      expect(req.postData()).toBe(JSON.stringify({ action }));
      expect(req.headers()["content-type"]).toBe("application/json");
      expect((await decision).effect).toBe(action === "Approve" ? "approve" : "deny");
      await page.locator(`li.tool[data-tool="${toolExecutionId}"][data-status="${action === "Approve" ? "approved" : "denied"}"]`).waitFor();
      expect(await tool(page, toolExecutionId).locator(".resolution").first().textContent()).toMatch(new RegExp(`^Permission: ${action}, answered at \\d\\d:\\d\\d:\\d\\d$`));
    }

    // The Go runtime's permission gate lists three controls (go-written-events.jsonl): each
    // one is a button, and the third is posted as it is listed. This gate is only in the
    // journal (published here, not opened by the loop actor serving the session), so the
    // actor knows no such gate: the gateway answers 404 gate_not_found, and the page shows
    // that answer in the gateway's words.
    const toolExecutionId = newId();
    const gateId = newId();
    const controls = ["Approve", "Approve always for this workspace", "Deny"].map((a) => ({ action: a, label: a }));
    await bus.publish(createEvent("PermissionRequested", { ...ids, toolExecutionId, request: { toolName: "write_file", summary: "write notes.md" } }));
    await bus.publish(
      createEvent("GateOpened", {
        ...ids,
        gate: { id: gateId, kind: "harness.permission", resolver: "loop", blocks: "tool_call", subject: { toolExecutionId }, prompt: { title: "Allow write_file?", controls } },
      }),
    );
    const buttons = tool(page, toolExecutionId).locator(".controls button");
    await buttons.first().waitFor();
    expect(await buttons.evaluateAll((bs) => bs.map((b) => [b.getAttribute("data-action"), b.textContent]))).toEqual(controls.map((c) => [c.action, c.label]));
    await shot(page, "approval");
    const posted = page.waitForRequest((r) => r.method() === "POST" && r.url().endsWith(`/gates/${gateId}`));
    await tool(page, toolExecutionId).locator('button[data-action="Approve always for this workspace"]').click();
    expect((await posted).postData()).toBe('{"action":"Approve always for this workspace"}');
    await tool(page, toolExecutionId).locator(".answer-error, .answer-note:has-text('sent')").waitFor();
    expect(await tool(page, toolExecutionId).locator(".answer-error, .answer-note").textContent()).toBe("Approve always for this workspace failed: gate not found (HTTP 404, gate_not_found)");
    expect(problems).toEqual([]);
    await gates.close();
    await page.close();
  });

  it("a running tool shows its preview, and keeps it once StepDone finalizes the call", async () => {
    const { bus, ids, page, problems } = await sessionPage();
    const toolExecutionId = newId();
    const gates = await bus.serveGates(ids.sessionId, ids.loopId);
    const decision = gates.requestPermission({ ...ids, toolExecutionId, toolUseId: "toolu_01", request: { toolName: "bash", summary: "ls -la" } });
    await tool(page, toolExecutionId).locator('button[data-action="Approve"]').click();
    await decision;
    await bus.publish(createEvent("ToolCallStarted", { ...ids, toolExecutionId, toolName: "bash", summary: "ls -la" }));
    await page.locator(`li.tool[data-tool="${toolExecutionId}"][data-status="running"]`).waitFor();
    await bus.publish(createEvent("ToolCallCompleted", { ...ids, toolExecutionId, resultPreview: "total 3\nREADME.md\nsrc" }));
    await page.locator(`li.tool[data-tool="${toolExecutionId}"][data-status="completed"] pre.preview`).waitFor();
    await shot(page, "running");
    await bus.publish(
      createEvent("StepDone", {
        ...ids,
        messages: [
          { role: "assistant", blocks: [{ type: "tool_use", id: "toolu_01", name: "bash", input: {} }] },
          { role: "tool", toolUseId: "toolu_01", blocks: [{ type: "text", text: "total 3\nREADME.md\nsrc" }] },
        ],
      }),
    );
    await page.locator(`li.tool[data-tool="${toolExecutionId}"][data-status="finalized"]`).waitFor();
    expect(await tool(page, toolExecutionId).locator("pre.preview").textContent()).toBe("total 3\nREADME.md\nsrc");
    const done = await bus.publish(createEvent("TurnDone", { sessionId: ids.sessionId, loopId: ids.loopId, turnId: ids.turnId }));
    await page.locator(`article.turn[data-turn="${ids.turnId}"][data-outcome="done"]`).waitFor();
    expect(Number(await page.locator(".session-head").getAttribute("data-seq"))).toBe(done.journalSeq);
    // The session's state (the gateway's fold) follows within a list poll of the change.
    await page.locator('#session-state:text-is("idle")').waitFor({ timeout: 5000 });
    await shot(page, "finalized");
    expect(problems).toEqual([]);
    await gates.close();
    await page.close();
  });

  it("a user-input question: its choices as buttons, else a free-text answer; both reach the loop", async () => {
    const { bus, ids, page, problems } = await sessionPage();
    const gates = await bus.serveGates(ids.sessionId, ids.loopId);

    const withChoices = newId();
    const picked = gates.requestInput({ ...ids, toolExecutionId: withChoices, question: "Which branch?", choices: ["main", "release"] });
    const choice = tool(page, withChoices).locator('button[data-action="release"]');
    await choice.waitFor();
    expect(await tool(page, withChoices).locator(".gate-title").textContent()).toBe("Which branch?");
    expect(await tool(page, withChoices).locator(".controls button").allTextContents()).toEqual(["main", "release"]);
    await choice.click();
    expect((await picked).answer).toBe("release");

    const freeText = newId();
    const typed = gates.requestInput({ ...ids, toolExecutionId: freeText, question: "Name the new file" });
    const input = tool(page, freeText).locator('input[name="answer"]');
    await input.waitFor();
    await page.locator('#session-state:text-is("waiting on gate")').waitFor({ timeout: 5000 });
    await shot(page, "question");
    await input.fill("notes");
    // Something else happens in the session while the answer is typed: the text and the focus stay.
    const seqBefore = Number(await page.locator(".session-head").getAttribute("data-seq"));
    await bus.publish(createEvent("PermissionRequested", { ...ids, toolExecutionId: newId(), request: { toolName: "grep", summary: "search" } }));
    await page.locator(`.session-head[data-seq="${seqBefore + 1}"]`).waitFor();
    expect(await input.evaluate((e) => e === document.activeElement)).toBe(true);
    await input.press("End");
    await input.pressSequentially(".md");
    expect(await input.inputValue()).toBe("notes.md");
    await tool(page, freeText).locator('button[data-action="send"]').click();
    expect((await typed).answer).toBe("notes.md");
    await tool(page, freeText).locator(".resolution").waitFor();
    expect(problems).toEqual([]);
    await gates.close();
    await page.close();
  });

  it("an answer that failed says why, in the gateway's words (the loop actor is gone)", async () => {
    const { bus, gw } = await gatewayFor();
    const ids = await startSession(bus);
    // The loop actor runs on a connection of its own, which dies under it: no close() of
    // its gate server, so the gate stays open in the journal with no one serving it.
    const actorConnection = await natsConnect({ servers: server.url });
    const actor = fromConnection(actorConnection, { namespace: bus.namespace });
    const gates = await actor.serveGates(ids.sessionId, ids.loopId);
    const toolExecutionId = newId();
    const pending = gates.requestPermission({ ...ids, toolExecutionId, toolUseId: "toolu_01", request: { toolName: "bash", summary: "deploy" } });
    pending.catch(() => undefined); // settled by the connection's death, not awaited
    const { page, problems } = await newPage();
    await page.goto(`${gw.url}/#${ids.sessionId}`);
    const approve = tool(page, toolExecutionId).locator('button[data-action="Approve"]');
    await approve.waitFor();
    const gateId = (await tool(page, toolExecutionId).locator(".gate").getAttribute("data-gate"))!;
    await actorConnection.close();
    await approve.click();
    const error = tool(page, toolExecutionId).locator(".answer-error");
    await error.waitFor();
    // The same request from here gets the same answer: the page shows exactly that.
    const r = await request(`${gw.url}/v1/sessions/${ids.sessionId}/gates/${gateId}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"action":"Approve"}' });
    const e = (JSON.parse(r.body) as { error: { code: string; message: string; retryable: boolean } }).error;
    expect(await error.textContent()).toBe(`Approve failed: ${e.message} (HTTP ${r.status}, ${e.code})${e.retryable ? "; safe to retry" : ""}`);
    expect(await approve.isEnabled()).toBe(true);
    await shot(page, "answer-failed");
    expect(problems).toEqual([]);
    await page.close();
  });

  it("not provisioned: the gateway's message is shown, never an empty list", async () => {
    const { gw } = await gatewayFor(false);
    const { page } = await newPage();
    const r = await request(`${gw.url}/v1/sessions`);
    const e = (JSON.parse(r.body) as { error: { code: string; message: string } }).error;
    await page.goto(gw.url);
    await page.locator("#banner:not([hidden])").waitFor();
    // The contract: a message that says to run `jetloop provision`; a gateway that does not
    // say so yet (500 "could not list sessions") reads as a gateway that cannot serve.
    const says = /jetloop provision/i.test(e.message);
    await badge(page, says ? "not_provisioned" : "disconnected");
    expect(await page.locator("#banner").textContent()).toContain(e.message);
    expect(await page.locator("#sessions-empty").isHidden()).toBe(true);
    expect(await page.locator("#view").textContent()).toMatch(says ? /not provisioned/ : /Waiting for the gateway/);
    await shot(page, "not-provisioned");
    await page.close();
  });

  it("the gateway restarted under the open page: reconnecting, then live, resuming with Last-Event-ID without a gap or a repeat", async () => {
    const { bus, gw, ids, page, problems } = await sessionPage();
    await page.locator(`article.turn[data-turn="${ids.turnId}"]`).waitFor();
    const address = gw.url.slice("http://".length);
    await gw.close();
    await page.locator('#connection[data-state="reconnecting"], #connection[data-state="disconnected"]').waitFor();
    // Journaled while no gateway serves the page.
    const done = await bus.publish(createEvent("TurnDone", { sessionId: ids.sessionId, loopId: ids.loopId, turnId: ids.turnId }));
    const resumed = page.waitForRequest((r) => r.url().includes(`/v1/sessions/${ids.sessionId}/events`), { timeout: 30_000 });
    const again = await startGateway(bus, { listen: address });
    open.push({ bus, gw: again });
    const req = await resumed;
    // Either EventSource's own reconnect (the header) or the page's (the query): after the last sequence seen.
    const header = (await req.allHeaders())["last-event-id"];
    expect(header ?? new URL(req.url()).searchParams.get("last_event_id")).toBe(String(done.journalSeq - 1));
    await page.locator(`article.turn[data-turn="${ids.turnId}"][data-outcome="done"]`).waitFor({ timeout: 30_000 });
    await badge(page, "live");
    expect(Number(await page.locator(".session-head").getAttribute("data-seq"))).toBe(done.journalSeq);
    expect(await page.locator("article.turn").count()).toBe(1);
    expect(problems.filter((p) => !p.includes("net::"))).toEqual([]);
    await page.close();
  }, 90_000);

  it("NATS down before any session is chosen: the page says NATS is down (the gateway's 503 nats_unavailable), not that it waits for the gateway", async () => {
    const { gw } = await gatewayFor();
    const { page, problems } = await newPage();
    await page.goto(gw.url);
    await badge(page, "live");
    await server.stop();
    try {
      await page
        .locator("#view", { hasText: "NATS is down" })
        .waitFor({ timeout: 60_000 })
        .catch(async (e: unknown) => {
          throw new Error(`view: ${await page.locator("#view").textContent()}; banner: ${await page.locator("#banner").textContent()}`, { cause: e });
        });
      expect(await page.locator("#view").textContent()).not.toMatch(/Waiting for the gateway/);
      const r = await request(`${gw.url}/v1/sessions`);
      expect([r.status, (JSON.parse(r.body) as { error: { code: string } }).error.code]).toEqual([503, "nats_unavailable"]);
    } finally {
      await server.restart();
    }
    await badge(page, "live");
    expect(await page.locator("#view").textContent()).not.toMatch(/NATS is down/);
    expect(problems.filter((p) => !p.includes("503"))).toEqual([]);
    await page.close();
  }, 120_000);

  it("NATS stopped under the open page: disconnected, then live again, resuming after its last journal sequence", async () => {
    const { bus, ids, page, problems } = await sessionPage();
    await page.locator(`article.turn[data-turn="${ids.turnId}"]`).waitFor();
    await server.stop();
    await badge(page, "disconnected");
    expect(await page.locator("#banner").textContent()).toMatch(/\S/);
    await shot(page, "disconnected");
    await server.restart();
    await badge(page, "live");
    expect(await page.locator("#banner").isHidden()).toBe(true);
    const done = await bus.publish(createEvent("TurnDone", { sessionId: ids.sessionId, loopId: ids.loopId, turnId: ids.turnId }));
    await page.locator(`article.turn[data-turn="${ids.turnId}"][data-outcome="done"]`).waitFor({ timeout: 30_000 });
    expect(Number(await page.locator(".session-head").getAttribute("data-seq"))).toBe(done.journalSeq);
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);
});
