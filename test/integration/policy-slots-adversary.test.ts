// An adversary's look at the policy service's slots: a gate whose delivery stops being
// extended while the service holds it (its subscription's autoExtendMs shorter than the wait
// for a slot plus the decision) comes again while its first copy is still in hand, and is
// decided twice. The service holds every gate it has until it settles it (each step bounded
// by its own timeouts), so it does not take an extension limit; nor a durable name twice.
import { afterAll, describe, expect, it } from "vitest";
import { type GateServer, type Jetloop, newId, type PolicyService, servePolicy } from "../../src/index.js";
import { sessionPartition } from "../../src/partition/partition.js";
import { defaultMembersStreamName, defaultPartitionedStreamName } from "../../src/streams/declared.js";
import { sleep } from "../harness/async.js";
import { provisionedBus } from "../harness/context.js";

const PARTITIONS = 8;
let bus: Jetloop;
const cleanup = provisionedBus((b) => void (bus = b));
afterAll(async () => {
  const jsm = await bus.jetstreamManager();
  for (const s of [defaultPartitionedStreamName(bus.namespace), defaultMembersStreamName(bus.namespace)]) await jsm.streams.delete(s).catch(() => undefined);
});

/** `n` loops, each of its own session (in distinct partitions when `partitions` is given), asking once. */
async function ask(n: number, partitions?: number): Promise<Promise<unknown>[]> {
  const used = new Set<number>();
  const asked: Promise<unknown>[] = [];
  while (asked.length < n) {
    const session = newId();
    if (partitions !== undefined) {
      if (used.has(sessionPartition(session, partitions))) continue;
      used.add(sessionPartition(session, partitions));
    }
    const g: GateServer = await bus.serveGates(session, newId());
    cleanup.push(() => g.close());
    asked.push(g.requestPermission({ turnId: newId(), stepId: newId(), toolExecutionId: newId(), request: { toolName: "read", requirements: [{ kind: "fs.read", match: "/tmp/a", description: "x" }] }, timeoutMs: 60_000 }));
  }
  return asked;
}

describe("policy service slots, adversarially", () => {
  it("refuses an extension limit and a durable inside subscription: options it would otherwise ignore or outlive", async () => {
    const decide = () => ({ effect: "approve" as const, reason: "r" });
    const refused = async (subscription: object) => {
      const s = await servePolicy(bus, { durable: `pol${newId().slice(-8)}`, decide, subscription: { start: "new", ...subscription } }).catch((e: unknown) => e);
      if (s && typeof s === "object" && "close" in s) await (s as PolicyService).close();
      return s;
    };
    for (const autoExtendMs of [0, 1000, 15 * 60_000]) expect(await refused({ autoExtendMs })).toMatchObject({ code: "OPTIONS_INVALID", option: "subscription.autoExtendMs" });
    expect(await refused({ durable: "other" })).toMatchObject({ code: "OPTIONS_INVALID", option: "subscription.durable" });
  });

  it("in a group, a gate that waits for its slot through many ack waits is decided once", async () => {
    await bus.provision({ partitions: PARTITIONS });
    const calls = new Map<string, number>();
    // One slot, 4 gates in 4 partitions, 300 ms each: the last waits about 1 s for its
    // slot, its partition's ack wait (the lease, 400 ms) running out twice meanwhile.
    const service: PolicyService = await servePolicy(bus, {
      durable: `pol${newId().slice(-8)}`,
      concurrency: 1,
      decide: async (c) => {
        calls.set(c.gateId, (calls.get(c.gateId) ?? 0) + 1);
        await sleep(300);
        return { effect: "approve", reason: "slow but sure" };
      },
      subscription: { group: { leaseMs: 400 }, start: "new" },
    });
    cleanup.push(() => service.close());
    const asked = await ask(4, PARTITIONS);
    await Promise.all(asked);
    expect([...calls.values()]).toEqual([1, 1, 1, 1]);
  });

  it("a slow decision under a short ack wait, slots free: decided once", async () => {
    const calls = new Map<string, number>();
    const service: PolicyService = await servePolicy(bus, {
      durable: `pol${newId().slice(-8)}`,
      concurrency: 4,
      decide: async (c) => {
        calls.set(c.gateId, (calls.get(c.gateId) ?? 0) + 1);
        await sleep(800);
        return { effect: "approve", reason: "slow but sure" };
      },
      subscription: { ackWaitMs: 200, start: "new" },
    });
    cleanup.push(() => service.close());
    await Promise.all(await ask(2));
    expect([...calls.values()]).toEqual([1, 1]);
  });
});
