// Scenario 12 (RELIABILITY.md): a page from another origin, and a DNS-rebinding page,
// against a default gateway in headless Chromium. None of them approves the pending gate
// or reads the session list; the gateway's own page approves it; an allowlisted origin
// gets CORS. Needs `npm run build` (the page's bundle) and /usr/bin/chromium.
import { describe, expect, it } from "vitest";
import { defaultContext } from "../../harness/reliability/scenarios/common.js";
import { browserBoundaryScenario } from "../../harness/reliability/scenarios/browser-boundary.js";
import { saveRecord } from "../../harness/reliability/save.js";

describe("reliability: the browser boundary", () => {
  it("refuses every foreign approval and read, and serves the own page and an allowlisted origin", async () => {
    const r = await browserBoundaryScenario(defaultContext());
    saveRecord(r.record);
    // Every attempt reached the gateway and was refused there (403), preflight included.
    for (const a of r.attempts) {
      expect(a.gateway.length, a.what).toBeGreaterThan(0);
      expect(a.gateway.every((s) => s === 403), `${a.what}: ${a.gateway.join(",")}`).toBe(true);
    }
    const byWhat = new Map(r.attempts.map((a) => [a.what, a.browser]));
    // The page learns nothing it could use: an opaque reply, or a rejected fetch.
    expect(byWhat.get("no-cors POST, text/plain, from another origin")).toBe("opaque");
    expect(byWhat.get("fetch POST, application/json, from another origin")).toBe("rejected: TypeError");
    expect(byWhat.get("fetch GET /v1/sessions from another origin")).toBe("rejected: TypeError");
    expect(byWhat.get("GET /v1/sessions under Host rebind.test (DNS rebinding)")).toBe("403");
    expect(byWhat.get("POST the approval under Host rebind.test (same origin to the page)")).toBe("403");
    expect(r.gateOpenAfterAttacks).toBe(true);
    expect(r.ownPageStatus).toBe(200);
    expect(r.decision).toBe("approve");
    expect(r.allowedRead.status).toBe(200);
    expect(r.allowedRead.sessions).toBeGreaterThan(0);
    expect(r.allowedPreflight).toBe(204);
  }, 60_000);
});
