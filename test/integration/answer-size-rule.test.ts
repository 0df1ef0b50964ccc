// The gate server judges an answer's records by the same size rule the journal writer
// enforces (one rule: maxEventBytes lowered by jetloop's header room for this stream and
// namespace). With long but valid names the header room exceeds a fixed allowance, and an
// answer whose PermissionDecided falls between the two caps must be refused with nothing
// written — not get its GateResolved journaled and its decision refused afterwards.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeValidated } from "../../src/codec/codec.js";
import { AGENCY_USER } from "../../src/events/header.js";
import { connect, createEvent, isJetloopError, type Jetloop, newId } from "../../src/index.js";
import { journalHeaderRoom } from "../../src/publish/journal-writer.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";
import { gateOpened } from "../harness/events.js";

const token = (c: string) => c.repeat(64);
let bus: Jetloop;
let namespace: string;
const stream = `S${newId().replaceAll("-", "")}${"x".repeat(160)}`;
beforeAll(async () => {
  namespace = [uniqueNamespace().replaceAll(/[^A-Za-z0-9-]/g, "").slice(0, 64), token("b"), token("c"), token("d")].join(".");
  bus = await connect({ servers: natsServers(), namespace, stream });
  await bus.provision();
});
afterAll(async () => {
  const jsm = await bus.jetstreamManager();
  await jsm.streams.delete(stream).catch(() => undefined);
  await bus.close();
});

describe("an answer's size, judged by the journal's own rule", () => {
  it("a PermissionDecided over the writer's cap is refused before its GateResolved is written; the gate stays open and takes a fitting answer", async () => {
    const room = journalHeaderRoom(stream, namespace);
    expect(room).toBeGreaterThan(600);
    const maxPayload = (bus as unknown as { nc?: { info?: { max_payload?: number } } }).nc?.info?.max_payload ?? 1024 * 1024;
    const cap = Math.min(1024 * 1024, maxPayload - room);
    const sessionId = newId();
    const loopId = newId();
    const coords = { sessionId, loopId, turnId: newId(), stepId: newId() };
    const toolExecutionId = newId();
    // The decision's size for a reason of n bytes: the same fields the gate server writes.
    const sizeFor = (n: number) =>
      encodeValidated(
        createEvent("PermissionDecided", { ...coords, cause: { commandId: newId(), toolExecutionId, agency: AGENCY_USER }, toolExecutionId, effect: "approve", reason: "r".repeat(n) }),
      ).bytes.length;
    const base = sizeFor(0);
    // Over the writer's cap by 100 bytes: between it and a 512-byte allowance.
    const reason = "r".repeat(cap + 100 - base);
    const gates = await bus.serveGates(sessionId, loopId);
    const decision = gates.requestPermission({ turnId: coords.turnId, stepId: coords.stepId, toolExecutionId, request: { toolName: "bash" }, timeoutMs: 60_000 });
    await gateOpened(bus, sessionId, toolExecutionId);
    const answer = bus.session(sessionId).answer(loopId, { kind: "permission", toolExecutionId, effect: "approve", reason }, { timeoutMs: 20_000 });
    const refused = await answer.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isJetloopError(refused, "COMMAND_FAILED")).toBe(true);
    expect((refused as Error).message).not.toMatch(/resolved/);
    const types: string[] = [];
    for await (const d of bus.session(sessionId).replay({ enduring: { loops: [loopId] } })) types.push(d.event.type);
    expect(types).toEqual(["PermissionRequested", "GateOpened"]);
    const ok = await bus.session(sessionId).answer(loopId, { kind: "permission", toolExecutionId, effect: "deny", reason: "too long" });
    expect(ok).toMatchObject({ status: "ok", action: "deny" });
    expect(await decision).toMatchObject({ effect: "deny", answered: true });
    await gates.close();
  }, 60_000);
});
