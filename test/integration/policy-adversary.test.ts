// The policy service against decide functions that misbehave: one that never settles must
// neither stall the service (its concurrency) nor hold close() forever, and its gate is still
// answered exactly once (by a later attempt), the hung call's late result never answering it.
import { describe, expect, it } from "vitest";
import { newId, servePolicy, type Jetloop, type PolicyDecision } from "../../src/index.js";
import { provisionedBus } from "../harness/context.js";
import { waitFor } from "../harness/async.js";

let bus: Jetloop;
const cleanup = provisionedBus((b) => void (bus = b));

async function loopWithGates(n: number) {
  const session = newId();
  const loop = newId();
  const gates = await bus.serveGates(session, loop);
  cleanup.push(() => gates.close());
  const answers = Array.from({ length: n }, () =>
    gates.requestPermission({ turnId: newId(), stepId: newId(), toolExecutionId: newId(), request: { toolName: "fs_read", requirements: [{ kind: "fs.read", scope: "", match: "/tmp/a", description: "read /tmp/a" }] } }),
  );
  // A gate left open is closed (owner_closed) by the cleanup: that rejection is expected.
  for (const a of answers) a.catch(() => undefined);
  return { session, loop, answers };
}

async function gateResolvedCount(session: string, loop: string): Promise<number> {
  let n = 0;
  for await (const d of bus.session(session).replay({ enduring: { loops: [loop] }, types: ["GateResolved"], includeInternal: true })) if (d.event.type === "GateResolved") n++;
  return n;
}

describe("servePolicy with a decide that never settles", () => {
  it("times the decision out: the service keeps deciding other gates, close() settles, every gate is resolved once, a late result answers nothing", async () => {
    const durable = `pol-${newId().slice(-10)}`;
    const { session, loop, answers } = await loopWithGates(3);
    let calls = 0;
    const late: ((d: PolicyDecision) => void)[] = [];
    const policy = await servePolicy(bus, {
      durable,
      concurrency: 1,
      decideTimeoutMs: 300,
      subscription: { start: "all", maxDeliver: 5, backoffMs: [400] },
      decide: () => {
        calls++;
        // The first call hangs (until released below); every later one decides at once.
        if (calls === 1) return new Promise<PolicyDecision>((r) => late.push(r));
        return { effect: "approve", reason: "reads under /tmp" };
      },
    });
    const settled = await Promise.all(answers);
    expect(settled.map((a) => a.effect)).toEqual(["approve", "approve", "approve"]);
    await waitFor("three approvals", () => policy.stats().approved === 3);
    // The hung call returns now, after its gate was answered by a later attempt: nothing more is written.
    for (const r of late) r({ effect: "deny", reason: "late" });
    const closing = policy.close();
    await expect(Promise.race([closing.then(() => "closed"), new Promise((r) => setTimeout(() => r("hung"), 5000))])).resolves.toBe("closed");
    expect(await gateResolvedCount(session, loop)).toBe(3);
    expect(policy.stats()).toMatchObject({ approved: 3, denied: 0 });
  }, 30_000);

  it("close() settles while a decide hangs (no timeout reached yet): the gate is left for the durable's next delivery", async () => {
    const durable = `pol-${newId().slice(-10)}`;
    const { session, loop } = await loopWithGates(1);
    let entered!: () => void;
    const inDecide = new Promise<void>((r) => (entered = r));
    const policy = await servePolicy(bus, {
      durable,
      decideTimeoutMs: 60_000,
      subscription: { start: "all" },
      decide: () => (entered(), new Promise<PolicyDecision>(() => undefined)),
    });
    await inDecide;
    const closing = policy.close();
    await expect(Promise.race([closing.then(() => "closed"), new Promise((r) => setTimeout(() => r("hung"), 5000))])).resolves.toBe("closed");
    expect(await gateResolvedCount(session, loop)).toBe(0);
  }, 30_000);
});
