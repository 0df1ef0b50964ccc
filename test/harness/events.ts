// Waiting on the event itself: a test that needs a state goes on once the event that makes
// it is in the journal, never after a fixed time. Each wait is bounded by the test's own
// timeout, and the subscription it reads is closed whatever happens.
import type { Jetloop, JetloopEvent } from "../../src/index.js";

/** Resolves with the first journal event of `sessionId`, from the start, for which `matches` holds. */
export async function journaled(bus: Jetloop, sessionId: string, types: string[], matches: (e: JetloopEvent) => boolean): Promise<JetloopEvent> {
  const sub = await bus.session(sessionId).subscribeEvents({ enduring: "all", types }, { start: "all" });
  try {
    for await (const d of sub) if (matches(d.event)) return d.event;
  } finally {
    await sub.close();
  }
  throw new Error(`the subscription of session ${sessionId} ended before the event awaited (${types.join(", ")})`);
}

/**
 * Resolves once the gate asking about `toolExecutionId` is open: its GateOpened is in the
 * journal. A gate server opens a gate before it writes GateOpened, so an answer sent after
 * this finds it.
 */
export async function gateOpened(bus: Jetloop, sessionId: string, toolExecutionId: string): Promise<void> {
  await journaled(bus, sessionId, ["GateOpened"], (e) => e.type === "GateOpened" && e.gate?.subject?.toolExecutionId === toolExecutionId);
}
