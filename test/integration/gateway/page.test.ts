// The gateway's web page in headless Chromium (Debian's chromium, driven by playwright-core):
// the seed's approval sequence appears live, Approve resolves the gate and the tool runs
// and finalizes, a reload shows the same state, and a gateway restarted mid-stream is
// followed without a gap. Needs `npm run build` (the page's bundle) and /usr/bin/chromium.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, type Jetloop, newId, startGateway, type RunningGateway } from "../../../src/index.js";
import { natsServers, uniqueNamespace } from "../../harness/context.js";

const CHROMIUM = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const OUT = join(import.meta.dirname, "../../../test-output/gateway-page");

let bus: Jetloop;
let gw: RunningGateway;
let browser: BrowserContext;
let profile: string;

beforeAll(async () => {
  mkdirSync(OUT, { recursive: true });
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("gp") });
  await bus.provision();
  gw = await startGateway(bus, { listen: "127.0.0.1:0" });
  profile = mkdtempSync(join(tmpdir(), "jetloop-chromium-"));
  browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS });
});
afterAll(async () => {
  await browser?.close();
  rmSync(profile, { recursive: true, force: true });
  await gw?.close();
  await bus?.close();
});

const status = (page: Page, tool: string) => page.locator(`li[data-tool="${tool}"]`).getAttribute("data-status");
const seq = async (page: Page) => Number(await page.locator("#seq").textContent());

describe("the web page", () => {
  it("shows the approval sequence live, approves from the page, survives a reload and a gateway restart", async () => {
    const sessionId = newId();
    const loopId = newId();
    const ids = { sessionId, loopId, turnId: newId(), stepId: newId() };
    const toolExecutionId = newId();
    await bus.publish(createEvent("SessionStarted", { sessionId }));
    await bus.publish(createEvent("TurnStarted", { sessionId, loopId, turnId: ids.turnId }));
    const gates = await bus.serveGates(sessionId, loopId);
    const page = await browser.newPage();
    await page.goto(`${gw.url}/#${sessionId}`);
    await page.locator("#connection[data-state=live]").waitFor();

    const decision = gates.requestPermission({ turnId: ids.turnId, stepId: ids.stepId, toolExecutionId, toolUseId: "toolu_01", request: { toolName: "bash", summary: "list files" } });
    const approve = page.locator(`li[data-tool="${toolExecutionId}"] button[data-action="Approve"]`);
    await approve.waitFor();
    await page.screenshot({ path: join(OUT, "1-awaiting-approval.png") });

    // A reload rebuilds the same state from the journal.
    const before = await page.locator("#tools").innerHTML();
    const seqBefore = await seq(page);
    await page.reload();
    await approve.waitFor();
    expect(await page.locator("#tools").innerHTML()).toBe(before);
    expect(await seq(page)).toBe(seqBefore);

    await approve.click();
    expect((await decision).effect).toBe("approve");
    await page.locator(`li[data-tool="${toolExecutionId}"][data-status="approved"]`).waitFor();
    await bus.publish(createEvent("ToolCallStarted", { ...ids, toolExecutionId, toolName: "bash", summary: "ls" }));
    await page.locator(`li[data-tool="${toolExecutionId}"][data-status="running"]`).waitFor();
    await bus.publish(createEvent("ToolCallCompleted", { ...ids, toolExecutionId, resultPreview: "a b c" }));
    await page.locator(`li[data-tool="${toolExecutionId}"] pre.preview`).waitFor();
    await page.screenshot({ path: join(OUT, "2-completed.png") });

    // The gateway goes away mid-stream; the result is journaled meanwhile; a new gateway on
    // the same address takes over and the page resumes after its last sequence.
    const address = gw.url.slice("http://".length);
    await gw.close();
    await page.locator("#connection[data-state=reconnecting]").waitFor();
    const stepDone = await bus.publish(
      createEvent("StepDone", {
        ...ids,
        messages: [
          { role: "assistant", blocks: [{ type: "tool_use", id: "toolu_01", name: "bash", input: {} }] },
          { role: "tool", toolUseId: "toolu_01", blocks: [{ type: "text", text: "a b c" }] },
        ],
      }),
    );
    gw = await startGateway(bus, { listen: address });
    await page.locator(`li[data-tool="${toolExecutionId}"][data-status="finalized"]`).waitFor({ timeout: 20_000 });
    await page.locator("#connection[data-state=live]").waitFor();
    expect(await seq(page)).toBe(stepDone.journalSeq);
    expect(await status(page, toolExecutionId)).toBe("finalized");
    await page.screenshot({ path: join(OUT, "3-finalized-after-restart.png") });
    await gates.close();
  }, 90_000);
});
