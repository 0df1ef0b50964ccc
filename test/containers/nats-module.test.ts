// jetloop against the stock testcontainers NATS module (@testcontainers/nats), as an
// application's own tests would start it: user and password on the command line,
// JetStream on, a random host port.
import { NatsContainer, type StartedNatsContainer } from "@testcontainers/nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, newId, type Jetloop } from "../../src/index.js";
import { testcontainersDefaults } from "../harness/backend.js";
import { imageFor } from "../harness/containers.js";
import { uniqueNamespace } from "../harness/context.js";

let container: StartedNatsContainer;
let bus: Jetloop;

beforeAll(async () => {
  testcontainersDefaults();
  container = await new NatsContainer(await imageFor()).withJetStream().start();
  const { servers, user, pass } = container.getConnectionOptions();
  bus = await connect({ servers, user, pass, namespace: uniqueNamespace() });
  await bus.provision();
});

afterAll(async () => {
  await bus?.close();
  await container?.stop();
});

describe("on @testcontainers/nats' NatsContainer", () => {
  it("publishes to the journal and delivers to a subscriber, previews included", async () => {
    const sessionId = newId();
    const loopId = newId();
    const ids = { sessionId, loopId, turnId: newId(), stepId: newId(), toolExecutionId: newId() };
    const sub = await bus.session(sessionId).subscribeEvents({ enduring: { loops: [loopId] }, ephemeral: { loops: [loopId] } }, { start: "all" });
    const decided = await bus.publish(createEvent("PermissionDecided", { ...ids, effect: "approve" }));
    expect(decided.journalSeq).toBe(1);
    const started = await bus.publish(createEvent("ToolCallStarted", { ...ids, toolName: "bash" }));
    expect(started.journalSeq).toBe(0);
    const seen: string[] = [];
    for await (const d of sub) {
      seen.push(`${d.event.type}@${d.journalSeq}`);
      if (seen.length === 2) break;
    }
    await sub.close();
    expect(seen).toEqual(["PermissionDecided@1", "ToolCallStarted@0"]);
  });
});
