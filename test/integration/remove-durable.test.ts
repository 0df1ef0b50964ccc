// bus.removeDurable: a plain durable's consumers — its journal consumer on every shard and
// its replay consumer on the parked store — are removed, and nothing else: another durable,
// a durable of another namespace, and what it parked stay. Unsplit and split namespaces.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, isJetloopError, newId, type Jetloop } from "../../src/index.js";
import { natsUrl, uniqueNamespace } from "../harness/context.js";

const buses: Jetloop[] = [];
let jsm: JetStreamManager;

beforeAll(async () => {
  const probe = await connect({ servers: natsUrl(), namespace: uniqueNamespace() });
  buses.push(probe);
  jsm = await jetstreamManager(probe.nc);
});

afterAll(async () => {
  for (const b of buses) await b.close();
});

/** Every consumer of the namespace's streams, as `stream/consumer`, sorted. */
async function consumersOf(bus: Jetloop): Promise<string[]> {
  const names: string[] = [];
  for (const stream of await jsm.streams.names().next()) {
    if (!stream.startsWith(bus.namespace)) continue;
    for (const c of await jsm.consumers.list(stream).next()) names.push(`${stream}/${c.config.durable_name ?? c.name}`);
  }
  return names.sort();
}

describe.each([1, 3])("removeDurable on a namespace of %i shard(s)", (shards) => {
  it("removes the durable's journal and replay consumers on every shard it has, keeps the rest and its parked entries", async () => {
    const bus = await connect({ servers: natsUrl(), namespace: uniqueNamespace(), shards });
    buses.push(bus);
    await bus.provision();
    // Sessions spread over the shards, so the durable has a consumer on each it reads.
    const sessions = Array.from({ length: 12 }, () => newId());
    for (const sessionId of sessions) await bus.publish(createEvent("TurnStarted", { sessionId, loopId: newId(), turnId: newId() }));
    for (const durable of ["gone", "kept"]) {
      const sub = await bus.subscribeEvents({ enduring: "all" }, { durable, maxDeliver: 1, start: "all" });
      // One parked entry each: the replay consumer exists, and the entry must outlive the removal.
      for await (const d of sub) {
        d.term("parked for the test");
        break;
      }
      await sub.close();
    }
    expect((await bus.parked.list("gone")).length).toBe(1);
    const before = await consumersOf(bus);
    const removed = await bus.removeDurable("gone");
    const after = await consumersOf(bus);
    // Exactly the removed ones went, and each was one of "gone"'s.
    expect(before.filter((c) => !after.includes(c)).sort()).toEqual([...removed.removed].sort());
    expect(removed.removed.length).toBeGreaterThanOrEqual(2);
    expect(removed.removed.every((c) => c.split("/")[1]!.startsWith("gone"))).toBe(true);
    expect(after.filter((c) => c.split("/")[1]!.startsWith("gone"))).toEqual([]);
    expect(after.filter((c) => c.split("/")[1]!.startsWith("kept")).length).toBeGreaterThanOrEqual(2);
    expect((await bus.parked.list("gone")).length).toBe(1);
    // Again: nothing of it is left, an outcome, not an error.
    expect(await bus.removeDurable("gone")).toEqual({ removed: [] });
  });
});

describe("removeDurable refuses", () => {
  it("a name that is no durable name, before asking the server", async () => {
    const bus = buses[0]!;
    for (const name of ["", "a.b", "a b", "*", ">", "x".repeat(65), 42 as unknown as string]) {
      const e = await bus.removeDurable(name).catch((x: unknown) => x);
      expect({ name, code: isJetloopError(e) ? e.code : String(e) }).toEqual({ name, code: "OPTIONS_INVALID" });
    }
  });
});
