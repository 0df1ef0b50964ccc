// The policy service against a real server: loops ask for permission (reads under /tmp and
// other requests), a policy service in its own process decides by rule and answers; it is
// SIGKILLed mid-stream and started again. Every request is answered by the rule (none
// forgotten), each gate resolved once (none answered twice), the rule's reason in the
// journal's PermissionDecided; a gate resolved before the service saw it is not decided.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { type GateServer, type Jetloop, type JetloopEvent, newId, type PermissionRequestInput, servePolicy } from "../../src/index.js";
import { sleep, waitFor } from "../harness/async.js";
import { natsServers, provisionedBus } from "../harness/context.js";
import { tmpReadRule } from "./fixtures/tmp-read-rule.js";

let bus: Jetloop;
const cleanup = provisionedBus((b) => void (bus = b));
const dir = mkdtempSync(join(tmpdir(), "jetloop-policy-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const requestArb: fc.Arbitrary<PermissionRequestInput> = fc.record({
  toolName: fc.constantFrom("read", "bash", "write"),
  requirements: fc.array(
    fc.record({
      kind: fc.constantFrom("fs.read", "fs.write", "net.connect"),
      match: fc.constantFrom("/tmp/a", "/tmp/x/**", "/etc/passwd", "/tmp/../etc", "/home/u/**"),
      description: fc.constant("what the tool touches"),
    }),
    { minLength: 1, maxLength: 3 },
  ).map((rs) => rs.filter((r, i) => rs.findIndex((q) => q.kind === r.kind && q.match === r.match) === i)),
});

interface Asked {
  readonly request: PermissionRequestInput;
  readonly decision: Promise<{ effect: string; toolExecutionId: string }>;
}

/** Loops of their own sessions, each asking for `requests` in turn; returns what each was answered. */
async function askAll(requests: readonly PermissionRequestInput[], loops: number, ids: readonly string[] = requests.map(() => newId())): Promise<{ gates: GateServer[]; asked: Asked[] }> {
  const gates: GateServer[] = [];
  const asked: Asked[] = [];
  for (let l = 0; l < loops; l++) {
    const g = await bus.serveGates(newId(), newId());
    cleanup.push(() => g.close());
    gates.push(g);
  }
  for (let i = 0; i < requests.length; i++) {
    const request = requests[i]!;
    const toolExecutionId = ids[i]!;
    const decision = gates[i % loops]!.requestPermission({ turnId: newId(), stepId: newId(), toolExecutionId, request, timeoutMs: 120_000 }).then((d) => ({ effect: d.effect, toolExecutionId }));
    asked.push({ request, decision });
  }
  return { gates, asked };
}

/** The journal's GateResolved and PermissionDecided records of the run's gates. */
async function journalOf(toolExecutionIds: ReadonlySet<string>) {
  const decided: Extract<JetloopEvent, { type: "PermissionDecided" }>[] = [];
  const resolved = new Map<string, number>();
  const gateOf = new Map<string, string>();
  for await (const d of bus.replay({ enduring: "all", types: ["GateOpened", "GateResolved", "PermissionDecided"] })) {
    const e = d.event;
    if (e.type === "GateOpened" && e.gate.subject?.toolExecutionId && toolExecutionIds.has(e.gate.subject.toolExecutionId)) gateOf.set(e.gate.id!, e.gate.subject.toolExecutionId);
    if (e.type === "GateResolved" && e.gateId && gateOf.has(e.gateId)) resolved.set(e.gateId, (resolved.get(e.gateId) ?? 0) + 1);
    if (e.type === "PermissionDecided" && toolExecutionIds.has(e.toolExecutionId)) decided.push(e);
  }
  return { decided, resolved, gateOf };
}

function startChild(durable: string, out: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "test/integration/fixtures/policy-child.ts"], {
    env: { ...process.env, JETLOOP_SERVERS: natsServers().join(","), JETLOOP_NS: bus.namespace, JETLOOP_DURABLE: durable, JETLOOP_OUT: out, JETLOOP_MAX_DELAY_MS: "40" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
  return new Promise((resolve, reject) => {
    child.stdout.on("data", (b: Buffer) => {
      if (b.toString().includes("ready")) resolve(child);
    });
    child.on("exit", (code) => reject(new Error(`policy child exited (${code}) before ready: ${stderr}`)));
  });
}

const exited = (c: ChildProcess) => new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once("exit", () => r())));

describe("policy service", () => {
  it("decides by rule, survives a SIGKILL mid-stream: none forgotten, none answered twice, reasons journaled", async () => {
    const durable = `policy-${newId().slice(-12)}`;
    const out = join(dir, `${durable}.log`);
    writeFileSync(out, "");
    const requests = fc.sample(requestArb, { numRuns: 60, seed: 24 });
    let child = await startChild(durable, out);
    const { asked } = await askAll(requests, 6);
    // Kill it once some, not all, are decided.
    await waitFor("some decided", () => readFileSync(out, "utf8").split("\n").filter(Boolean).length >= 15, 60_000);
    child.kill("SIGKILL");
    await exited(child);
    // Started again at once: the server may still hold the dead process's pull requests and
    // unacknowledged deliveries (their ack wait runs on), the harder case for "none forgotten".
    child = await startChild(durable, out);
    try {
      const answers = await Promise.all(asked.map((a) => a.decision));
      answers.forEach((got, i) => expect(got.effect).toBe(tmpReadRule(asked[i]!).effect));
      const ids = new Set(answers.map((a) => a.toolExecutionId));
      const j = await journalOf(ids);
      expect(j.gateOf.size).toBe(requests.length);
      expect([...j.resolved.values()].every((n) => n === 1)).toBe(true); // one resolution per gate, ever
      expect(j.resolved.size).toBe(requests.length);
      expect(j.decided).toHaveLength(requests.length);
      const reasonOf = new Map(answers.map((a, i) => [a.toolExecutionId, tmpReadRule(asked[i]!).reason]));
      for (const d of j.decided) expect(d.reason).toBe(reasonOf.get(d.toolExecutionId));
    } finally {
      child.kill("SIGTERM");
      await exited(child);
    }

    // Run again over the whole journal: every gate is resolved there, so nothing is decided.
    const again = await servePolicy(bus, { durable: `${durable}-again`, decide: () => { throw new Error("must not be asked"); }, subscription: { start: "all" } });
    cleanup.push(() => bus.parked.drop(`${durable}-again`, "all").catch(() => undefined));
    await waitFor("all seen", () => again.stats().alreadyResolved >= requests.length, 30_000);
    expect(again.stats()).toMatchObject({ approved: 0, denied: 0, retried: 0, parked: 0 });
    await again.close();
  }, 180_000);

  it("property: any requests × decide delays (sync or async), answered by the rule, once each", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(requestArb, fc.integer({ min: -1, max: 30 })), { minLength: 1, maxLength: 12 }), async (cases) => {
        const durable = `prop-${newId().slice(-12)}`;
        const delays = new Map<string, number>();
        const calls = new Map<string, number>();
        const policy = await servePolicy(bus, {
          durable,
          concurrency: 4,
          subscription: { start: "new", backoffMs: [500] },
          decide: (c) => {
            calls.set(c.gateId, (calls.get(c.gateId) ?? 0) + 1);
            const delay = delays.get(c.toolExecutionId) ?? -1;
            if (delay < 0) return tmpReadRule(c); // sync
            return sleep(delay).then(() => tmpReadRule(c));
          },
        });
        try {
          const ids = cases.map(() => newId());
          ids.forEach((id, i) => delays.set(id, cases[i]![1]));
          const { asked } = await askAll(cases.map(([r]) => r), 3, ids);
          const answers = await Promise.all(asked.map((a) => a.decision));
          answers.forEach((got, i) => expect(got.effect).toBe(tmpReadRule(asked[i]!).effect));
          expect([...calls.values()].every((n) => n === 1)).toBe(true);
          expect(calls.size).toBe(cases.length);
        } finally {
          await policy.close();
        }
      }),
      { numRuns: 5 },
    );
  }, 120_000);

  it("options are strict: an unknown key, a missing decide, a bad concurrency are refused at the call", async () => {
    await expect(servePolicy(bus, { decide: () => ({ effect: "deny", reason: "x" }), extra: 1 } as never)).rejects.toMatchObject({ code: "OPTIONS_INVALID" });
    await expect(servePolicy(bus, {} as never)).rejects.toMatchObject({ code: "OPTIONS_INVALID", option: "decide" });
    await expect(servePolicy(bus, { decide: () => ({ effect: "deny", reason: "x" }), concurrency: 0 })).rejects.toMatchObject({ code: "OPTIONS_INVALID", option: "concurrency" });
  });
});
