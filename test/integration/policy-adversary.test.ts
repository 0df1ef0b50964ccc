// The policy service against decide functions that misbehave: one that never settles must
// neither stall the service (its concurrency) nor hold close() forever, and its gate is still
// answered exactly once (by a later attempt), the hung call's late result never answering it.
import { jetstreamManager } from "@nats-io/jetstream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { connect, newId, servePolicy, type Jetloop, type PolicyDecision } from "../../src/index.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";
import { waitFor } from "../harness/async.js";

/**
 * The durable's consumer once nothing is outstanding: every delivery acknowledged or
 * terminated, nothing pending. From then on the server has nothing to deliver again, so
 * what the service was called with is final: proven by the server's state, not by a quiet
 * window.
 */
async function settled(durable: string): Promise<{ deliveries: number }> {
  const jsm = await jetstreamManager(bus.nc);
  return waitFor(
    `the consumer ${durable} settled`,
    async () => {
      const info = await jsm.consumers.info(bus.stream, durable);
      // delivered.consumer_seq counts every delivery, a redelivery too.
      return info.num_ack_pending === 0 && info.num_pending === 0 && { deliveries: info.delivered.consumer_seq };
    },
    15_000,
    50,
  );
}

// A namespace per test: a policy serves every gate of its namespace, so tests must not share one.
let bus: Jetloop;
let cleanup: (() => Promise<unknown>)[] = [];
beforeEach(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace() });
  await bus.provision();
});
afterEach(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => undefined);
  cleanup = [];
  const jsm = await jetstreamManager(bus.nc);
  for (const s of [bus.stream, bus.parked.stream]) await jsm.streams.delete(s).catch(() => undefined);
  await bus.close();
});

async function loopWithGates(n: number, summary: (i: number) => string = () => "read /tmp/a") {
  const session = newId();
  const loop = newId();
  const gates = await bus.serveGates(session, loop);
  cleanup.push(() => gates.close());
  const answers = Array.from({ length: n }, (_, i) =>
    // Two controls (the loop narrows the Go three), so "always" is a control these gates do not offer.
    gates.requestPermission({ turnId: newId(), stepId: newId(), toolExecutionId: newId(), controls: ["Approve", "Deny"], request: { toolName: "fs_read", summary: summary(i), requirements: [{ kind: "fs.read", scope: "", match: "/tmp/a", description: "read /tmp/a" }] } }),
  );
  // A gate left open is closed (owner_closed) by the cleanup: that rejection is expected.
  for (const a of answers) a.catch(() => undefined);
  return { session, loop, answers };
}

async function gateResolvedCount(session: string, loop: string, type: "GateResolved" | "PermissionDecided" = "GateResolved"): Promise<number> {
  let n = 0;
  for await (const d of bus.session(session).replay({ enduring: { loops: [loop] }, types: [type], includeInternal: true })) if (d.event.type === type) n++;
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
      subscription: { start: "all", maxDeliver: 5, backoffMs: [2000] },
      decide: () => {
        calls++;
        // The first call hangs (until released below); every later one decides at once.
        if (calls === 1) return new Promise<PolicyDecision>((r) => late.push(r));
        return { effect: "approve", reason: "reads under /tmp" };
      },
    });
    const settled = await Promise.all(answers);
    expect(settled.map((a) => a.effect)).toEqual(["approve", "approve", "approve"]);
    await waitFor("three approvals", () => policy.stats().approved >= 3);
    // The hung call returns now, after its gate was answered by a later attempt: nothing more is written.
    for (const r of late) r({ effect: "deny", reason: "late" });
    const closing = policy.close();
    await expect(Promise.race([closing.then(() => "closed"), new Promise((r) => setTimeout(() => r("hung"), 5000))])).resolves.toBe("closed");
    expect(await gateResolvedCount(session, loop)).toBe(3);
    expect(policy.stats().denied).toBe(0);
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

/** What a decide may return that is not a decision: each must park its gate, answered by nobody. */
const garbage: unknown[] = [
  null,
  undefined,
  "approve",
  42,
  [],
  {},
  { effect: "approve" },
  { effect: "approve", reason: "" },
  { effect: "ask", reason: "x" },
  { effect: "APPROVE", reason: "x" },
  { effect: "approve", reason: "x", extra: true },
  { effect: "approve", reason: 7 },
  { effect: "approve", reason: "x", action: "Approve always for this workspace" }, // not offered by this gate
  { effect: "approve", reason: "x", action: "Deny" }, // the control contradicts the effect
  { effect: "deny", reason: "x", action: "x".repeat(257) },
];

describe("servePolicy with a decide that returns garbage", () => {
  it(`${garbage.length} shapes: each gate parked with the reason after one call, none answered`, async () => {
    const durable = `pol-${newId().slice(-10)}`;
    const { session, loop } = await loopWithGates(garbage.length, (i) => `g${i}`);
    const calls = new Map<string, number>();
    const policy = await servePolicy(bus, {
      durable,
      subscription: { start: "all", maxDeliver: 3, backoffMs: [3000] },
      decide: ({ request }) => {
        const key = request.summary ?? "";
        calls.set(key, (calls.get(key) ?? 0) + 1);
        return garbage[Number(key.slice(1))] as PolicyDecision;
      },
    });
    cleanup.push(() => policy.close());
    await waitFor("every gate parked", () => policy.stats().parked === garbage.length, 15_000).catch((e: unknown) => { throw new Error(`${String(e)} ${JSON.stringify(policy.stats())} ${JSON.stringify([...calls])}`); });
    // Each gate's one delivery is terminated as it is parked: none can come again.
    expect(await settled(durable)).toEqual({ deliveries: garbage.length });
    expect(policy.stats()).toMatchObject({ received: garbage.length, approved: 0, denied: 0, parked: garbage.length });
    expect([...calls.values()]).toEqual(garbage.map(() => 1));
    expect(await gateResolvedCount(session, loop)).toBe(0);
    expect(await gateResolvedCount(session, loop, "PermissionDecided")).toBe(0);
    const parked = await bus.parked.list(durable);
    expect(parked.length).toBe(garbage.length);
    await policy.close();
  }, 30_000);

  it("a decide that always throws: called maxDeliver times, then parked; the gate stays open", async () => {
    const durable = `pol-${newId().slice(-10)}`;
    const { session, loop } = await loopWithGates(1);
    let calls = 0;
    const policy = await servePolicy(bus, {
      durable,
      subscription: { start: "all", maxDeliver: 3, backoffMs: [100] },
      decide: () => {
        calls++;
        throw new Error("policy store unreachable");
      },
    });
    cleanup.push(() => policy.close());
    await waitFor("parked", async () => (await bus.parked.list(durable)).length === 1, 15_000).catch((e: unknown) => {
      throw new Error(`${String(e)} ${JSON.stringify(policy.stats())} calls ${calls}`);
    });
    // Delivered maxDeliver times, the last terminated as it is parked: none can come again.
    expect(await settled(durable)).toEqual({ deliveries: 3 });
    expect(calls).toBe(3);
    expect(await gateResolvedCount(session, loop)).toBe(0);
    await policy.close();
  }, 30_000);
});

describe("servePolicy run twice over, at once", () => {
  it("two replicas of one durable and a second durable: every gate resolved once, one PermissionDecided each", async () => {
    const n = 12;
    const { session, loop, answers } = await loopWithGates(n);
    const shared = `pol-${newId().slice(-10)}`;
    const other = `pol-${newId().slice(-10)}`;
    const slow = async () => (await new Promise((r) => setTimeout(r, Math.random() * 50)), { effect: "approve" as const, reason: "reads under /tmp" });
    const services = await Promise.all(
      [shared, shared, other].map((durable) => servePolicy(bus, { durable, subscription: { start: "all" }, decide: slow })),
    );
    for (const s of services) cleanup.push(() => s.close());
    const settled = await Promise.all(answers);
    expect(settled.every((a) => a.effect === "approve")).toBe(true);
    await waitFor("every service done", () => services.reduce((k, s) => k + s.stats().approved + s.stats().alreadyResolved, 0) >= 2 * n, 15_000).catch((e: unknown) => {
      throw new Error(`${String(e)} ${JSON.stringify(services.map((s) => s.stats()))}`);
    });
    expect(await gateResolvedCount(session, loop)).toBe(n);
    expect(await gateResolvedCount(session, loop, "PermissionDecided")).toBe(n);
    const approved = services.reduce((k, s) => k + s.stats().approved, 0);
    expect(approved).toBe(n); // each gate counted as answered by exactly one service
    for (const s of services) await s.close();
  }, 30_000);
});

describe("servePolicy with gates waiting for a slot", () => {
  it("a short ack wait: gates queued behind a busy slot are kept alive, each decided once (not only answered once)", async () => {
    const n = 30;
    const durable = `pol-${newId().slice(-10)}`;
    const { session, loop, answers } = await loopWithGates(n, (i) => `g${i}`);
    const calls = new Map<string, number>();
    // One slot, 40 ms a decision: past the 16 the service buffers, gates wait in the pull buffer; the last over a second, two ack waits.
    const policy = await servePolicy(bus, {
      durable,
      concurrency: 1,
      subscription: { start: "all", ackWaitMs: 500 },
      decide: async ({ request }) => {
        const key = request.summary ?? "";
        calls.set(key, (calls.get(key) ?? 0) + 1);
        await new Promise((r) => setTimeout(r, 40));
        return { effect: "approve", reason: "reads under /tmp" };
      },
    });
    cleanup.push(() => policy.close());
    expect((await Promise.all(answers)).every((a) => a.effect === "approve")).toBe(true);
    // Kept alive while queued: no delivery came again (the server counts one delivery a
    // gate), and with everything acknowledged none can.
    expect(await settled(durable)).toEqual({ deliveries: n });
    expect([...calls.values()]).toEqual(Array.from({ length: n }, () => 1));
    expect(calls.size).toBe(n);
    expect(policy.stats()).toMatchObject({ received: n, approved: n, retried: 0 });
    expect(await gateResolvedCount(session, loop)).toBe(n);
    await policy.close();
  }, 30_000);

  it("refuses a maxAckPending above its concurrency (such gates would wait unextended)", async () => {
    await expect(servePolicy(bus, { durable: "pol-x", concurrency: 2, subscription: { maxAckPending: 3 }, decide: () => ({ effect: "deny", reason: "x" }) })).rejects.toMatchObject({ code: "OPTIONS_INVALID", option: "subscription.maxAckPending" });
  });
});
