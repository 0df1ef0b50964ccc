// Two successors of a dead actor start at once with closeOrphans: both find no live actor
// (neither subscribed yet), both scan the journal and both close the dead actor's gates.
// One GateResolved per gate, ever: the second close must not be journaled again. And one
// actor serves the loop afterwards: two would both get every answer, and the one that does
// not know the gate could reply GATE_UNKNOWN first while the other applied it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CommandError, connect, createEvent, type GateServer, type Jetloop, newId } from "../../src/index.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";

let buses: Jetloop[] = [];
beforeAll(async () => {
  const namespace = uniqueNamespace();
  buses = await Promise.all([0, 1, 2, 3].map(() => connect({ servers: natsServers(), namespace })));
  await buses[0]!.provision();
});
afterAll(() => Promise.all(buses.map((b) => b.close())));

describe("closeOrphans from two successors at once", () => {
  it("journals one GateResolved abandoned per orphan and leaves one actor serving, for 8 runs of 3 orphans", async () => {
    for (let run = 0; run < 8; run++) {
      const [dead, a, b, c] = buses as [Jetloop, Jetloop, Jetloop, Jetloop];
      const sessionId = newId();
      const loopId = newId();
      const gateIds = [newId(), newId(), newId()];
      // What a dead actor left: its GateOpened, no resolution.
      for (const id of gateIds) {
        await dead.publish(
          createEvent("GateOpened", { sessionId, loopId, turnId: newId(), stepId: newId(), gate: { id, kind: "harness.permission", resolver: "loop", subject: { toolExecutionId: newId() } } }),
        );
      }
      // Started together, or staggered by up to 40 ms (the later ones may find the first serving).
      const offsets = [a, b, c].map(() => (run === 0 ? 0 : Math.floor(Math.random() * 40)));
      const started = await Promise.allSettled(
        [a, b, c].map(async (bus, i) => {
          await new Promise((r) => setTimeout(r, offsets[i]));
          return bus.serveGates(sessionId, loopId, { closeOrphans: true });
        }),
      );
      const counts = new Map<string, number>();
      for await (const d of dead.session(sessionId).replay({ enduring: "all", types: ["GateResolved"] })) {
        if (d.event.type === "GateResolved") counts.set(d.event.gateId!, (counts.get(d.event.gateId!) ?? 0) + 1);
      }
      expect(Object.fromEntries(counts)).toEqual(Object.fromEntries(gateIds.map((id) => [id, 1])));
      const serving = started.filter((x): x is PromiseFulfilledResult<GateServer> => x.status === "fulfilled").map((x) => x.value);
      const stoodDown = started.filter((x): x is PromiseRejectedResult => x.status === "rejected").map((x) => x.reason as unknown);
      expect(serving, `run ${run} (offsets ${offsets.join(", ")} ms): one successor serves`).toHaveLength(1);
      for (const e of stoodDown) expect(e instanceof CommandError && e.code === "COMMAND_FAILED", String(e)).toBe(true);
      // Every answer to the one actor's gate is its: never GATE_UNKNOWN from a successor that stood down.
      await expectAnswered(dead, serving[0]!, sessionId, loopId);
      // A further actor for the served loop is refused, successor or not.
      for (const closeOrphans of [false, true]) {
        await expect(dead.serveGates(sessionId, loopId, { closeOrphans })).rejects.toMatchObject({ code: "COMMAND_FAILED" });
      }
      await serving[0]!.close();
    }
  }, 120_000);
});

const request = { toolName: "bash", summary: "list files", requirements: [{ kind: "fs.read", match: "/tmp/*", description: "read /tmp" }] };

/** Opens a permission gate on `gates` and answers it from `bus` as soon as it is journaled: approved, by that actor. */
async function expectAnswered(bus: Jetloop, gates: GateServer, sessionId: string, loopId: string): Promise<void> {
  const coords = { turnId: newId(), stepId: newId(), toolExecutionId: newId() };
  const watcher = await bus.session(sessionId).subscribeEvents({ enduring: { loops: [loopId] } }, { start: "new" });
  const decision = gates.requestPermission({ ...coords, request });
  for await (const d of watcher) {
    if (d.event.type !== "GateOpened") continue;
    const outcome = await bus.session(sessionId).answer(loopId, { kind: "permission", toolExecutionId: coords.toolExecutionId, effect: "approve" });
    expect(outcome).toMatchObject({ status: "ok", action: "approve" });
    break;
  }
  expect((await decision).effect).toBe("approve");
  await watcher.close();
}
