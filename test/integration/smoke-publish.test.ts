import { describe, expect, it } from "vitest";
import { connect, createEvent, newId } from "../../src/index.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";

describe("publish smoke", () => {
  it("appends and dedupes", async () => {
    const bus = await connect({ servers: natsServers(), namespace: uniqueNamespace() });
    try {
      expect((await bus.provision()).action).toBe("created");
      expect((await bus.provision()).action).toBe("unchanged");
      const ids = { sessionId: newId(), loopId: newId(), turnId: newId(), stepId: newId() };
      const e = createEvent("PermissionDecided", { ...ids, toolExecutionId: newId(), effect: "approve" });
      const r1 = await bus.publish(e);
      const r2 = await bus.publish(e);
      expect(r1.journalSeq).toBe(1);
      expect(r2).toMatchObject({ journalSeq: 1, duplicate: true });
      const many = await bus.publishAll(Array.from({ length: 500 }, () => createEvent("PermissionDecided", { ...ids, toolExecutionId: newId(), effect: "deny" })));
      expect(many.map((r) => r.journalSeq)).toEqual(Array.from({ length: 500 }, (_, i) => i + 2));
      const live = await bus.publish(createEvent("ToolCallStarted", { ...ids, toolExecutionId: newId(), toolName: "bash" }));
      expect(live.journalSeq).toBe(0);
    } finally {
      await bus.close();
    }
  });
});
