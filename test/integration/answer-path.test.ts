// The seed's approval sequence end to end: PermissionRequested → the answer over NATS →
// PermissionDecided → ToolCallStarted → ToolCallCompleted → StepDone, both branches.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CommandError, connect, createEvent, isJetloopError, type Jetloop, newId } from "../../src/index.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";
import { gateOpened } from "../harness/events.js";

let bus: Jetloop;
beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace() });
  await bus.provision();
});
afterAll(() => bus.close());

const request = { toolName: "bash", summary: "list files", requirements: [{ kind: "fs.read", match: "/tmp/*", description: "read /tmp" }] };

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "resolved";
  } catch (e) {
    return isJetloopError(e) ? e.code : String(e);
  }
}

describe("answer path", () => {
  for (const effect of ["approve", "deny"] as const) {
    it(`runs the ${effect} branch`, async () => {
      const sessionId = newId();
      const loopId = newId();
      const coords = { turnId: newId(), stepId: newId(), toolExecutionId: newId() };
      const watcher = await bus.session(sessionId).subscribeEvents({ enduring: { loops: [loopId] }, ephemeral: { loops: [loopId] } }, { start: "all" });
      const gates = await bus.serveGates(sessionId, loopId);
      const decision = gates.requestPermission({ ...coords, request });
      const seen: string[] = [];
      for await (const d of watcher) {
        seen.push(d.event.type);
        if (d.event.type === "GateOpened") {
          const outcome = await bus.session(sessionId).answer(loopId, { kind: "permission", toolExecutionId: coords.toolExecutionId, effect, reason: "test" });
          expect(outcome).toMatchObject({ status: "ok", action: effect, gateId: d.event.gate?.id, duplicate: false });
          const { effect: decided } = await decision;
          expect(decided).toBe(effect);
          const ids = { sessionId, loopId, turnId: coords.turnId, stepId: coords.stepId, toolExecutionId: coords.toolExecutionId };
          if (effect === "approve") {
            await bus.publish(createEvent("ToolCallStarted", { ...ids, toolName: "bash" }));
            await bus.publish(createEvent("ToolCallCompleted", { ...ids, resultPreview: "a b c" }));
          }
          await bus.publish(
            createEvent("StepDone", {
              sessionId,
              loopId,
              turnId: coords.turnId,
              stepId: coords.stepId,
              messages: [
                { role: "assistant", blocks: [{ type: "tool_use", id: "toolu_01", name: "bash", input: {} }] },
                { role: "tool", toolUseId: "toolu_01", blocks: [{ type: "text", text: effect === "approve" ? "a b c" : "denied" }], ...(effect === "deny" ? { isError: true } : {}) },
              ],
            }),
          );
        }
        if (d.event.type === "StepDone") break;
      }
      const tail = effect === "approve" ? ["ToolCallStarted", "ToolCallCompleted", "StepDone"] : ["StepDone"];
      expect(seen).toEqual(["PermissionRequested", "GateOpened", "GateResolved", "PermissionDecided", ...tail]);
      await gates.close();
    });
  }

  it("refuses with typed errors and publishes nothing twice", async () => {
    const sessionId = newId();
    const loopId = newId();
    const session = bus.session(sessionId);
    const toolExecutionId = newId();
    expect(await codeOf(session.answer(loopId, { kind: "permission", toolExecutionId, effect: "approve" }))).toBe("COMMAND_NO_LISTENER");
    const gates = await bus.serveGates(sessionId, loopId);
    expect(await codeOf(session.answer(loopId, { kind: "permission", toolExecutionId, effect: "approve" }))).toBe("GATE_UNKNOWN");
    const decision = gates.requestPermission({ turnId: newId(), stepId: newId(), toolExecutionId, request });
    await gateOpened(bus, sessionId, toolExecutionId);
    expect(await codeOf(session.answer(loopId, { kind: "input", toolExecutionId, answer: "yes" }))).toBe("COMMAND_INVALID");
    const commandId = newId();
    const first = await session.answer(loopId, { kind: "permission", toolExecutionId, effect: "deny", commandId });
    const again = await session.answer(loopId, { kind: "permission", toolExecutionId, effect: "deny", commandId });
    expect(again).toEqual({ ...first, duplicate: true });
    // The loser is told the gate is resolved, and how.
    const late = await session.answer(loopId, { kind: "permission", toolExecutionId, effect: "approve" }).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(CommandError);
    expect(late).toMatchObject({ code: "GATE_RESOLVED", outcome: { gateId: first.gateId, action: "deny", control: "Deny", journalSeq: first.journalSeq } });
    expect((await decision).effect).toBe("deny");
    // malformed on the wire: a raw request with an unknown field
    const raw = await bus.nc.request(`${bus.namespace}.cmd.${sessionId}.${loopId}.answer`, new TextEncoder().encode('{"kind":"permission","command_id":"' + newId() + '","tool_execution_id":"' + toolExecutionId + '","effect":"approve","grant_token":"x"}'));
    expect(new TextDecoder().decode(raw.data)).toContain("COMMAND_INVALID");
    const decided = [];
    for await (const d of session.replay({ enduring: "all", types: ["PermissionDecided", "GateResolved"] })) decided.push(d.event.type);
    expect(decided).toEqual(["GateResolved", "PermissionDecided"]);
    await gates.close();
  });

  it("refuses an input gate with no choices before writing anything; free text when choices are omitted", async () => {
    const sessionId = newId();
    const loopId = newId();
    const gates = await bus.serveGates(sessionId, loopId);
    const c = { turnId: newId(), stepId: newId(), toolExecutionId: newId() };
    expect(await codeOf(gates.requestInput({ ...c, question: "Pick one", choices: [] }))).toBe("OPTIONS_INVALID");
    expect(await codeOf(gates.requestPermission({ ...c, request, controls: ["Approve", "Maybe" as never] }))).toBe("OPTIONS_INVALID");
    const journal = [];
    for await (const d of bus.session(sessionId).replay({ enduring: "all" })) journal.push(d.event.type);
    expect(journal).toEqual([]);
    const free = gates.requestInput({ ...c, question: "Why?" });
    await gateOpened(bus, sessionId, c.toolExecutionId);
    await bus.session(sessionId).answer(loopId, { kind: "input", toolExecutionId: c.toolExecutionId, answer: "because" });
    expect(await free).toMatchObject({ answer: "because", answered: true });
    await gates.close();
  });

  it("passes the control chosen to the loop: Approve always for this workspace approves and says so", async () => {
    const sessionId = newId();
    const loopId = newId();
    const gates = await bus.serveGates(sessionId, loopId);
    const c = { turnId: newId(), stepId: newId(), toolExecutionId: newId() };
    const decision = gates.requestPermission({ ...c, request, controls: ["Approve", "Approve always for this workspace", "Deny"] });
    await gateOpened(bus, sessionId, c.toolExecutionId);
    const outcome = await bus.session(sessionId).answer(loopId, { kind: "permission", toolExecutionId: c.toolExecutionId, action: "Approve always for this workspace" });
    expect(outcome).toMatchObject({ action: "approve", control: "Approve always for this workspace" });
    expect(await decision).toMatchObject({ effect: "approve", action: "Approve always for this workspace", answered: true });
    await gates.close();
  });

  it("closeOrphans refuses while another actor serves the loop: its gates are its own", async () => {
    const sessionId = newId();
    const loopId = newId();
    const live = await bus.serveGates(sessionId, loopId);
    const toolExecutionId = newId();
    const pending = live.requestPermission({ turnId: newId(), stepId: newId(), toolExecutionId, request });
    const settled = pending.catch((e: unknown) => e);
    await gateOpened(bus, sessionId, toolExecutionId);
    expect(await codeOf(bus.serveGates(sessionId, loopId, { closeOrphans: true }))).toBe("COMMAND_FAILED");
    await live.close();
    expect(await settled).toMatchObject({ code: "GATE_CLOSED", journaled: true });
    // Closed by its owner: nothing is left for a successor to close.
    const successor = await bus.serveGates(sessionId, loopId, { closeOrphans: true });
    expect(successor.orphansClosed).toEqual([]);
    await successor.close();
  });
});
