// An answer that arrives while a gate's own records (PermissionRequested, GateOpened) are
// still being written — an answerer naming the tool execution, spamming from the moment it
// learns it — must not be journaled before the gate's GateOpened: the journal would hold a
// resolution of a gate not yet open, and every reader (projection, status, a successor's
// orphan scan) would then see the gate open for ever. The same for close() racing the open.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, GateLedger, isJetloopError, type Jetloop, newId } from "../../src/index.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";

let actor: Jetloop;
let answerer: Jetloop;
beforeAll(async () => {
  const namespace = uniqueNamespace();
  actor = await connect({ servers: natsServers(), namespace });
  await actor.provision();
  answerer = await connect({ servers: natsServers(), namespace });
});
afterAll(async () => {
  await answerer.close();
  await actor.close();
});

const request = { toolName: "bash", summary: "list files" };

/** The gate records of one loop in journal order; checks each GateResolved follows its GateOpened, once. */
async function journalOrder(sessionId: string, loopId: string): Promise<{ types: string[]; open: number }> {
  const ledger = new GateLedger();
  const types: string[] = [];
  for await (const d of actor.session(sessionId).replay({ enduring: { loops: [loopId] }, types: ["PermissionRequested", "GateOpened", "GateResolved", "PermissionDecided"] })) {
    types.push(d.event.type);
    const v = ledger.apply(d.event);
    if (d.event.type === "GateResolved") expect(v.kind, `GateResolved at ${d.journalSeq} before its GateOpened`).toBe("resolved");
  }
  return { types, open: ledger.open({ loopId }).length };
}

describe("an answer racing the gate's own records", () => {
  it("is journaled after GateOpened, for every gate of 20 answered by a spammer naming the tool execution", async () => {
    const sessionId = newId();
    const loopId = newId();
    const gates = await actor.serveGates(sessionId, loopId);
    for (let i = 0; i < 20; i++) {
      const toolExecutionId = newId();
      let answered = false;
      const spam = async () => {
        while (!answered) {
          try {
            await answerer.session(sessionId).answer(loopId, { kind: "permission", toolExecutionId, effect: "approve" });
            answered = true;
          } catch (e) {
            if (!isJetloopError(e, "GATE_UNKNOWN") && !isJetloopError(e, "GATE_RESOLVED")) throw e;
          }
        }
      };
      const spammers = Array.from({ length: 4 }, spam);
      // Let the spam reach the actor before the gate opens.
      await new Promise((r) => setTimeout(r, 5));
      const decision = await gates.requestPermission({ turnId: newId(), stepId: newId(), toolExecutionId, request });
      expect(decision).toMatchObject({ effect: "approve", answered: true });
      await Promise.all(spammers);
    }
    await gates.close();
    const { types, open } = await journalOrder(sessionId, loopId);
    expect(open).toBe(0);
    expect(types).toEqual(Array.from({ length: 20 }, () => ["PermissionRequested", "GateOpened", "GateResolved", "PermissionDecided"]).flat());
  }, 60_000);

  it("close() racing requestPermission journals owner_closed after GateOpened, never before", async () => {
    const sessionId = newId();
    const loopId = newId();
    for (let i = 0; i < 20; i++) {
      const gates = await actor.serveGates(sessionId, loopId);
      const decision = gates.requestPermission({ turnId: newId(), stepId: newId(), toolExecutionId: newId(), request });
      decision.catch(() => undefined);
      // close while PermissionRequested (or GateOpened) is in flight
      await new Promise((r) => setImmediate(r));
      await gates.close();
      const code = await decision.then(
        () => "resolved",
        (e: unknown) => (isJetloopError(e) ? e.code : String(e)),
      );
      expect(["GATE_CLOSED", "CONNECTION_CLOSED"]).toContain(code);
    }
    const { open } = await journalOrder(sessionId, loopId);
    expect(open).toBe(0);
  }, 60_000);
});
