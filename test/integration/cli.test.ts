// The command line, spawned as a process the way a user runs it.
import { execFile } from "node:child_process";
import { execSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { connect, createEvent, newId } from "../../src/index.js";
import { natsUrl, uniqueNamespace } from "../harness/context.js";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function jetloop(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], { env, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

describe("jetloop CLI", () => {
  it("prints help for every command and refuses bad usage", async () => {
    for (const command of ["provision", "tail", "replay", "demo"]) {
      const r = await jetloop([command, "--help"]);
      expect(r.code, command).toBe(0);
      expect(r.stdout).toContain(`jetloop ${command}`);
      expect(r.stdout).toContain("--server");
    }
    expect((await jetloop([])).code).toBe(2);
    expect((await jetloop(["frobnicate"])).code).toBe(2);
    const bad = await jetloop(["replay", "--server", natsUrl()]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--session is required");
  });

  it("provisions idempotently and reports drift with --verify", async () => {
    const ns = uniqueNamespace();
    const base = ["--server", natsUrl(), "--namespace", ns];
    const first = await jetloop(["provision", ...base]);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`stream ${ns}_journal: created`);
    const again = await jetloop(["provision", ...base]);
    expect(again.stdout).toContain("unchanged");
    const drift = await jetloop(["provision", "--verify", "--max-event-bytes", "2048", ...base]);
    expect(drift.code).toBe(2);
    expect(drift.stdout).toContain("max_msg_size: live 1048576 → declared 2048");
  });

  it("replays a bounded range as lines or JSON, reporting malformed messages on stderr", async () => {
    const ns = uniqueNamespace();
    const bus = await connect({ servers: natsUrl(), namespace: ns });
    try {
      await bus.provision();
      const sessionId = newId();
      const loopId = newId();
      const coords = { sessionId, loopId, turnId: newId(), stepId: newId() };
      await bus.publish(createEvent("TurnStarted", { sessionId, loopId, turnId: coords.turnId }));
      await bus.publish(createEvent("PermissionDecided", { ...coords, toolExecutionId: newId(), effect: "approve" }));
      // a malformed message on this session's journal subject
      await bus.nc.request(`${ns}.journal.${sessionId}.${loopId}.tool.PermissionDecided`, new TextEncoder().encode("{not json"));
      await bus.publish(createEvent("TurnDone", { sessionId, loopId, turnId: coords.turnId }));

      const base = ["--server", natsUrl(), "--namespace", ns, "--session", sessionId];
      const lines = await jetloop(["replay", ...base]);
      expect(lines.code).toBe(0);
      const out = lines.stdout.trim().split("\n");
      expect(out.map((l) => l.split(/\s+/)[0])).toEqual(["#1", "#2", "#4"]);
      expect(out[1]).toContain("PermissionDecided");
      expect(lines.stderr).toContain("#3");
      expect(lines.stderr).toContain("EVENT_DECODE");

      const json = await jetloop(["replay", ...base, "--from-seq", "2", "--to-seq", "4", "--json"]);
      const parsed = json.stdout.trim().split("\n").map((l) => JSON.parse(l) as { journalSeq: number; event: { type: string } });
      expect(parsed.map((p) => [p.journalSeq, p.event.type])).toEqual([
        [2, "PermissionDecided"],
        [4, "TurnDone"],
      ]);

      const tail = await jetloop(["tail", "--server", natsUrl(), "--namespace", ns, "--session", sessionId, "--all", "--count", "2", "--json"]);
      expect(tail.code).toBe(0);
      expect(tail.stdout.trim().split("\n").map((l) => (JSON.parse(l) as { journalSeq: number }).journalSeq)).toEqual([1, 2]);
    } finally {
      await bus.close();
    }
  });

  it("runs the demo on a throwaway server and leaves no process behind", async () => {
    const env = { ...process.env };
    delete env.NATS_URL;
    const r = await jetloop(["demo"], env);
    expect(r.stderr).toContain("started a throwaway nats-server");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("PermissionDecided");
    expect(r.stdout).toMatch(/approve \(looks safe\)/);
    expect(r.stdout).toMatch(/deny \(outside the allowed paths\)/);
    expect(r.stdout).toContain("demo complete");
    const left = execSync("ps -eo args", { encoding: "utf8" }).split("\n").filter((l) => l.includes("jetloop-demo-") || l.includes("demo-answerer"));
    expect(left).toEqual([]);
  }, 60_000);
});
