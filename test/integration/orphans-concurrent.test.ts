// Two successors of a dead actor start at once with closeOrphans: both find no live actor
// (neither subscribed yet), both scan the journal and both close the dead actor's gates.
// One GateResolved per gate, ever: the second close must not be journaled again.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, type Jetloop, newId } from "../../src/index.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";

let buses: Jetloop[] = [];
beforeAll(async () => {
  const namespace = uniqueNamespace();
  buses = await Promise.all([0, 1, 2].map(() => connect({ servers: natsServers(), namespace })));
  await buses[0]!.provision();
});
afterAll(() => Promise.all(buses.map((b) => b.close())));

describe("closeOrphans from two successors at once", () => {
  it("journals one GateResolved abandoned per orphan, for 5 runs of 3 orphans", async () => {
    for (let run = 0; run < 5; run++) {
      const [dead, a, b] = buses as [Jetloop, Jetloop, Jetloop];
      const sessionId = newId();
      const loopId = newId();
      const gateIds = [newId(), newId(), newId()];
      // What a dead actor left: its GateOpened, no resolution.
      for (const id of gateIds) {
        await dead.publish(
          createEvent("GateOpened", { sessionId, loopId, turnId: newId(), stepId: newId(), gate: { id, kind: "harness.permission", resolver: "loop", subject: { toolExecutionId: newId() } } }),
        );
      }
      const started = await Promise.allSettled([a.serveGates(sessionId, loopId, { closeOrphans: true }), b.serveGates(sessionId, loopId, { closeOrphans: true })]);
      const counts = new Map<string, number>();
      for await (const d of dead.session(sessionId).replay({ enduring: "all", types: ["GateResolved"] })) {
        if (d.event.type === "GateResolved") counts.set(d.event.gateId!, (counts.get(d.event.gateId!) ?? 0) + 1);
      }
      expect(Object.fromEntries(counts)).toEqual(Object.fromEntries(gateIds.map((id) => [id, 1])));
      for (const s of started) if (s.status === "fulfilled") await s.value.close();
    }
  }, 120_000);
});
