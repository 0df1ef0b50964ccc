// The seed's watchTools example, almost word for word, against a real server.
import { describe, expect, it } from "vitest";
import { connect, createEvent, newId, type Delivery, type JetloopEvent } from "../../src/index.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";

describe("watchTools", () => {
  it("delivers one loop's tool events, enduring with journal sequences and ephemeral with 0", async () => {
    const bus = await connect({ servers: natsServers(), namespace: uniqueNamespace() });
    try {
      await bus.provision();
      const sessionId = newId();
      const loopId = newId();
      const otherLoop = newId();
      const sub = await bus.session(sessionId).subscribeEvents({
        ephemeral: { loops: [loopId] },
        enduring: { loops: [loopId] },
      });
      const coords = { sessionId, loopId, turnId: newId(), stepId: newId() };
      const toolExecutionId = newId();
      await bus.publish(createEvent("PermissionRequested", { ...coords, toolExecutionId, request: { toolName: "bash", requirements: [{ kind: "fs.read", match: "/tmp", description: "read /tmp" }] } }));
      await bus.publish(createEvent("PermissionDecided", { ...coords, loopId: otherLoop, toolExecutionId, effect: "deny" }));
      await bus.publish(createEvent("PermissionDecided", { ...coords, toolExecutionId, effect: "approve" }));
      await bus.publish(createEvent("ToolCallStarted", { ...coords, toolExecutionId, toolName: "bash" }));
      await bus.publish(createEvent("ToolCallCompleted", { ...coords, toolExecutionId, resultPreview: "ok" }));
      await bus.publish(createEvent("SessionStopped", { sessionId }));
      const log: string[] = [];
      const seen: Delivery<JetloopEvent>[] = [];
      for await (const delivery of sub) {
        seen.push(delivery);
        const e = delivery.event;
        switch (e.type) {
          case "PermissionRequested":
            log.push(`approval requested for ${e.toolExecutionId}: ${e.request.toolName}`);
            break;
          case "PermissionDecided":
            log.push(`decision ${e.effect} at journal ${delivery.journalSeq}`);
            break;
          case "ToolCallStarted":
            log.push(`started ${e.toolName}`);
            break;
          case "ToolCallCompleted":
            log.push(`completed error=${e.isError}: ${e.resultPreview}`);
            break;
          case "SessionStopped":
            log.push("session stopped");
            break;
        }
        if (seen.length === 5) await sub.close();
      }
      expect(sub.err()).toBeUndefined();
      // Journal and live deliveries come over different paths: each is in order, the
      // interleaving between them is not promised.
      const journal = seen.filter((d) => d.journalSeq > 0);
      const live = seen.filter((d) => d.journalSeq === 0);
      expect(journal.map((d) => [d.journalSeq, d.event.type])).toEqual([
        [1, "PermissionRequested"],
        [3, "PermissionDecided"],
        [4, "SessionStopped"],
      ]);
      expect(live.map((d) => d.event.type)).toEqual(["ToolCallStarted", "ToolCallCompleted"]);
      expect(live[0]!.lastJournalSeq).toBe(3);
      expect(log).toEqual(
        expect.arrayContaining([
          `approval requested for ${toolExecutionId}: bash`,
          "decision approve at journal 3",
          "started bash",
          "completed error=false: ok",
          "session stopped",
        ]),
      );
      const replayed = [];
      for await (const d of bus.session(sessionId).replay({ enduring: { loops: [otherLoop] } })) replayed.push(d.journalSeq);
      expect(replayed).toEqual([2, 4]);
    } finally {
      await bus.close();
    }
  });
});
