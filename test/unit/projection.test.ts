import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createEvent, type JetloopEvent, ProjectionDeliveryError } from "../../src/index.js";
import {
  rebuildToolActivity,
  ToolActivityProjection,
  type ToolActivityDelivery,
} from "../../src/projection/index.js";
import { grantRequest, ID, STEP_COORDS } from "./fixtures.js";

// --- events and deliveries ------------------------------------------------------

type Coords = { sessionId: string; loopId: string; turnId: string; stepId: string };

const uid = (n: number) => `0190f2a1-5b3c-7d4e-8f60-${(0xb00 + n).toString(16).padStart(12, "0")}`;
const LOOP2 = uid(1);
const C1: Coords = STEP_COORDS;
const C2: Coords = { ...STEP_COORDS, loopId: LOOP2 };
const turnOf = ({ sessionId, loopId, turnId }: Coords) => ({ sessionId, loopId, turnId });
const GATE = ID.gate;
/** The model provider's id of a call, as a gate's subject links it. */
const toolUseOf = (tool: string) => `toolu_${tool.slice(-6)}`;

const ev = {
  requested: (tool: string = ID.tool, c: Coords = C1) =>
    createEvent("PermissionRequested", { ...c, toolExecutionId: tool, request: grantRequest() }),
  decided: (effect: "approve" | "deny", tool: string = ID.tool, c: Coords = C1, reason = `${effect} by policy`) =>
    createEvent("PermissionDecided", { ...c, toolExecutionId: tool, effect, reason }),
  input: (tool: string = ID.tool, c: Coords = C1) =>
    createEvent("UserInputRequested", { ...c, toolExecutionId: tool, question: "Which branch?", choices: ["main", "dev"] }),
  started: (tool: string = ID.tool, c: Coords = C1) =>
    createEvent("ToolCallStarted", { ...c, toolExecutionId: tool, toolName: "bash", summary: "npm test" }),
  completed: (tool: string = ID.tool, c: Coords = C1, isError = false) =>
    createEvent("ToolCallCompleted", { ...c, toolExecutionId: tool, isError, resultPreview: isError ? "1 failed" : "42 passed" }),
  gateOpened: (kind: string, tool: string = ID.tool, c: Coords = C1, gateId: string = GATE) =>
    createEvent("GateOpened", {
      ...c,
      gate: {
        id: gateId,
        kind,
        resolver: "loop",
        subject: { toolExecutionId: tool, toolUseId: toolUseOf(tool), turnId: c.turnId, stepId: c.stepId },
        prompt: { title: "Run npm test?", controls: [{ action: "Approve", label: "Approve" }, { action: "Deny", label: "Deny" }] },
      },
    }),
  gateResolved: (
    action: string | undefined,
    reason: "answered" | "policy_response" | "abandoned" = "answered",
    c: Coords = C1,
    gateId: string = GATE,
  ) => createEvent("GateResolved", { ...c, gateId, resolver: "loop", reason, action }),
  /** The runtime's StepDone: the model's tool_use blocks and one tool message per result, by provider id. */
  stepDone: (results: { tool: string; isError?: boolean; content?: string }[], c: Coords = C1, declared = results.map((r) => r.tool)) =>
    createEvent("StepDone", {
      ...c,
      messages: [
        {
          role: "assistant" as const,
          blocks: [
            { type: "text" as const, text: declared.length > 0 ? "running tools" : "thinking" },
            ...declared.map((t) => ({ type: "tool_use" as const, id: toolUseOf(t), name: "bash", input: { command: "npm test" } })),
          ],
        },
        ...results.map((r) => ({
          role: "tool" as const,
          toolUseId: toolUseOf(r.tool),
          isError: r.isError ?? false,
          blocks: [{ type: "text" as const, text: r.content ?? (r.isError ? "1 failed" : "42 passed") }],
        })),
      ],
    }),
  turnDone: (c: Coords = C1) => createEvent("TurnDone", { ...turnOf(c), turnIndex: 2 }),
  turnFailed: (c: Coords = C1) =>
    createEvent("TurnFailed", { ...turnOf(c), turnIndex: 2, err: { kind: "model_error", message: "rate limited" } }),
  turnInterrupted: (c: Coords = C1) => createEvent("TurnInterrupted", { ...turnOf(c), turnIndex: 2 }),
};

/** A delivery as the tests build it: a ToolActivityDelivery with a typed event. */
type Delivery = ToolActivityDelivery & { readonly event: JetloopEvent };

/** Hands out journal sequences in order; previews get 0. */
function journal() {
  let seq = 0;
  return {
    durable: (event: JetloopEvent): Delivery => ({ event, journalSeq: ++seq }),
    live: (event: JetloopEvent): Delivery => ({ event, journalSeq: 0 }),
  };
}

const isEnduring = (d: ToolActivityDelivery) => d.journalSeq > 0;
const keyOf = (a: { loopId: string; toolExecutionId: string }) => `${a.loopId} ${a.toolExecutionId}`;
/** The projection's entries in a canonical order, for comparing two projections. */
const snapshot = (p: ToolActivityProjection) => [...p.list()].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));

/** Applies deliveries one by one and records the status of `tool` in loop 1 after each. */
function statuses(p: ToolActivityProjection, deliveries: ToolActivityDelivery[], tool: string = ID.tool) {
  return deliveries.map((d) => {
    p.apply(d);
    return p.get(C1.loopId, tool)?.status;
  });
}

// --- the seed's sequence ----------------------------------------------------------

describe("the seed's approval and execution sequence", () => {
  it("approve branch: awaiting approval → approved → running → completed → finalized", () => {
    const j = journal();
    const feed = [
      j.durable(ev.requested()),
      j.durable(ev.decided("approve")),
      j.live(ev.started()),
      j.live(ev.completed()),
      j.durable(ev.stepDone([{ tool: ID.tool }])),
      j.durable(ev.turnDone()),
    ];
    const p = new ToolActivityProjection();
    expect(statuses(p, feed.slice(0, 4))).toEqual(["awaiting_approval", "approved", "running", "completed"]);

    const beforeStepDone = p.get(C1.loopId, ID.tool)!;
    expect(beforeStepDone).toMatchObject({
      toolName: "bash",
      liveOnly: false,
      request: { journalSeq: 1, request: { toolName: "bash", summary: "run the test suite" } },
      decision: { journalSeq: 2, effect: "approve", reason: "approve by policy" },
      live: { started: { toolName: "bash", summary: "npm test" }, completed: { isError: false, resultPreview: "42 passed" } },
    });
    expect(beforeStepDone.request!.eventId).toBe(feed[0]!.event.eventId);
    expect(beforeStepDone.decision!.at).toBe(feed[1]!.event.createdAt);

    p.apply(feed[4]!);
    const finalized = p.get(C1.loopId, ID.tool)!;
    // No gate linked the model's tool_use id to the call: the step finalizes it, and the
    // tool message is not attributed to it.
    expect(finalized).toMatchObject({ status: "finalized", result: { journalSeq: 3, stepId: C1.stepId } });
    expect(finalized.result!.message).toBeUndefined();
    expect(finalized.live).toBeUndefined();

    p.apply(feed[5]!);
    expect(p.get(C1.loopId, ID.tool)).toMatchObject({ status: "finalized", endedWithoutResult: false, turnOutcome: { kind: "done", journalSeq: 4 } });
    expect(p.turnOutcome(C1.loopId, C1.turnId)).toMatchObject({ kind: "done", turnIndex: 2 });
    expect(p.lastJournalSeq).toBe(4);
  });

  it("applyAll takes an async iterable, as replay returns, and resolves once it has ended", async () => {
    const j = journal();
    const deliveries = [j.durable(ev.requested()), j.durable(ev.decided("approve"))];
    async function* replayed() {
      for (const d of deliveries) yield await Promise.resolve(d);
    }
    const p = await new ToolActivityProjection().applyAll(replayed());
    expect(p.lastJournalSeq).toBe(2);
    expect(p.get(C1.loopId, ID.tool)).toEqual(rebuildToolActivity(deliveries).get(C1.loopId, ID.tool));
  });

  it("a completion preview carries isError, and StepDone's tool message decides where a gate linked the call", () => {
    const j = journal();
    const p = rebuildToolActivity([
      j.durable(ev.requested()),
      j.durable(ev.gateOpened("harness.permission")),
      j.durable(ev.decided("approve")),
      j.live(ev.completed(ID.tool, C1, true)),
    ]);
    expect(p.get(C1.loopId, ID.tool)).toMatchObject({ status: "completed", live: { completed: { isError: true, resultPreview: "1 failed" } } });
    p.apply(j.durable(ev.stepDone([{ tool: ID.tool, isError: true }])));
    expect(p.get(C1.loopId, ID.tool)).toMatchObject({
      status: "finalized",
      toolName: "bash",
      result: { isError: true, toolUseId: toolUseOf(ID.tool), message: { role: "tool", blocks: [{ type: "text", text: "1 failed" }] } },
    });
  });

  it("deny branch: awaiting approval → denied, and StepDone's error result does not undo the denial", () => {
    const j = journal();
    const p = new ToolActivityProjection();
    const feed = [
      j.durable(ev.requested()),
      j.durable(ev.decided("deny", ID.tool, C1, "not in the allow list")),
      j.durable(ev.stepDone([{ tool: ID.tool, isError: true, content: "permission denied" }])),
      j.durable(ev.turnDone()),
    ];
    expect(statuses(p, feed)).toEqual(["awaiting_approval", "denied", "denied", "denied"]);
    expect(p.get(C1.loopId, ID.tool)).toMatchObject({
      decision: { effect: "deny", reason: "not in the allow list", journalSeq: 2 },
      result: { journalSeq: 3 },
      endedWithoutResult: false,
    });
  });

  it("deny branch ending in a terminal turn outcome instead of StepDone", () => {
    const j = journal();
    const p = rebuildToolActivity([j.durable(ev.requested()), j.durable(ev.decided("deny")), j.durable(ev.turnInterrupted())]);
    expect(p.get(C1.loopId, ID.tool)).toMatchObject({
      status: "denied",
      endedWithoutResult: true,
      turnOutcome: { kind: "interrupted", turnIndex: 2 },
    });
  });
});

describe("gates", () => {
  it("a permission gate: open → awaiting approval; resolved with approve → approved, even before PermissionDecided", () => {
    const j = journal();
    const p = new ToolActivityProjection();
    const feed = [
      j.durable(ev.requested()),
      j.durable(ev.gateOpened("harness.permission")),
      j.durable(ev.gateResolved("Approve")),
      j.durable(ev.decided("approve")),
      j.live(ev.started()),
      j.durable(ev.stepDone([{ tool: ID.tool }])),
    ];
    expect(statuses(p, feed)).toEqual(["awaiting_approval", "awaiting_approval", "approved", "approved", "running", "finalized"]);
    expect(p.get(C1.loopId, ID.tool)).toMatchObject({
      permissionGate: {
        id: GATE,
        kind: "harness.permission",
        journalSeq: 2,
        prompt: { title: "Run npm test?", controls: [{ action: "Approve" }, { action: "Deny" }] },
        resolution: { journalSeq: 3, reason: "answered", action: "Approve", resolver: "loop" },
      },
    });
  });

  it("a permission gate alone (no PermissionRequested) is awaiting approval", () => {
    const j = journal();
    const p = rebuildToolActivity([j.durable(ev.gateOpened("harness.permission"))]);
    expect(p.get(C1.loopId, ID.tool)).toMatchObject({ status: "awaiting_approval", permissionGate: { id: GATE }, liveOnly: false });
  });

  it("a gate resolved with deny → denied", () => {
    const j = journal();
    const p = rebuildToolActivity([j.durable(ev.requested()), j.durable(ev.gateOpened("harness.permission")), j.durable(ev.gateResolved("Deny"))]);
    expect(p.get(C1.loopId, ID.tool)?.status).toBe("denied");
  });

  it("a gate closed without an approve or deny leaves nobody asked: pending", () => {
    const j = journal();
    const p = rebuildToolActivity([
      j.durable(ev.requested()),
      j.durable(ev.gateOpened("harness.permission")),
      j.durable(ev.gateResolved(undefined, "abandoned")),
    ]);
    expect(p.get(C1.loopId, ID.tool)).toMatchObject({ status: "pending", permissionGate: { resolution: { reason: "abandoned" } } });
  });

  it("PermissionDecided wins over the gate that fed it", () => {
    const j = journal();
    const p = rebuildToolActivity([
      j.durable(ev.gateOpened("harness.permission")),
      j.durable(ev.gateResolved("Approve")),
      j.durable(ev.decided("deny", ID.tool, C1, "grant expired")),
    ]);
    expect(p.get(C1.loopId, ID.tool)).toMatchObject({ status: "denied", decision: { reason: "grant expired" } });
  });

  it("a GateResolved for a gate the projection never saw open is skipped", () => {
    const j = journal();
    const p = rebuildToolActivity([j.durable(ev.requested()), j.durable(ev.gateResolved("Approve"))]);
    expect(p.get(C1.loopId, ID.tool)?.status).toBe("awaiting_approval");
    expect(p.lastJournalSeq).toBe(2);
  });

  it("applies a GateResolved only from the loop and session whose GateOpened opened the gate, once; reports the rest", () => {
    // Every resolution a writer on another loop's or session's subjects could forge, and a second one from the right loop.
    const SESSION2 = uid(2);
    fc.assert(
      fc.property(
        fc.array(fc.record({ loop: fc.constantFrom(C1.loopId, LOOP2), session: fc.constantFrom(C1.sessionId, SESSION2), action: fc.constantFrom("Approve", "Deny") }), {
          minLength: 1,
          maxLength: 6,
        }),
        (forged) => {
          const j = journal();
          const p = new ToolActivityProjection();
          p.apply(j.durable(ev.requested()));
          p.apply(j.durable(ev.gateOpened("harness.permission")));
          let bound: string | undefined;
          for (const f of forged) {
            const c = { ...C1, loopId: f.loop, sessionId: f.session };
            const r = p.apply(j.durable(ev.gateResolved(f.action, "answered", c)));
            const rightPlace = f.loop === C1.loopId && f.session === C1.sessionId;
            if (rightPlace && bound === undefined) {
              bound = f.action;
              expect(r.violations).toBeUndefined();
            } else {
              expect(r.violations).toEqual([
                expect.objectContaining({
                  gateId: GATE,
                  rule: f.session !== C1.sessionId ? "other_session" : f.loop !== C1.loopId ? "other_loop" : "already_resolved",
                }),
              ]);
            }
            const status = p.get(C1.loopId, ID.tool)!.status;
            expect(status).toBe(bound === undefined ? "awaiting_approval" : bound === "Approve" ? "approved" : "denied");
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("takes the tool execution id from the cause when the gate does not name it", () => {
    const j = journal();
    const opened = createEvent("GateOpened", {
      ...C1,
      cause: { toolExecutionId: ID.tool2 },
      gate: { id: GATE, kind: "harness.permission", resolver: "loop" },
    });
    const p = rebuildToolActivity([j.durable(opened)]);
    expect(p.get(C1.loopId, ID.tool2)).toMatchObject({ status: "awaiting_approval", permissionGate: { id: GATE } });
    const unattributed = createEvent("GateOpened", { ...C1, gate: { id: uid(9), kind: "harness.permission", resolver: "loop" } });
    expect(p.apply(j.durable(unattributed)).changed).toEqual([]);
    expect(p.size).toBe(1);
  });
});

describe("user input", () => {
  it("UserInputRequested + an ask-user gate: awaiting input until answered, whatever the previews say", () => {
    const j = journal();
    const p = new ToolActivityProjection();
    const feed = [
      j.live(ev.started()),
      j.durable(ev.input()),
      j.durable(ev.gateOpened("harness.ask_user")),
      j.durable(ev.gateResolved("main", "answered")),
      j.live(ev.completed()),
      j.durable(ev.stepDone([{ tool: ID.tool, content: "main" }])),
    ];
    // The ask-user tool was already running when it asked.
    expect(statuses(p, feed)).toEqual(["running", "awaiting_input", "awaiting_input", "running", "completed", "finalized"]);
    expect(p.get(C1.loopId, ID.tool)).toMatchObject({
      input: { question: "Which branch?", choices: ["main", "dev"], journalSeq: 1 },
      inputGate: { id: GATE, kind: "harness.ask_user", resolution: { reason: "answered", action: "main" } },
      result: { message: { role: "tool", blocks: [{ type: "text", text: "main" }] } },
    });
  });

  it("an answered input with no permission and no live start is pending, not running", () => {
    const j = journal();
    const p = rebuildToolActivity([j.durable(ev.input()), j.durable(ev.gateOpened("harness.ask_user")), j.durable(ev.gateResolved("dev"))]);
    expect(p.get(C1.loopId, ID.tool)?.status).toBe("pending");
  });

  it("a question asked after the gate closed is a new question", () => {
    const j = journal();
    const p = rebuildToolActivity([j.durable(ev.gateOpened("harness.ask_user")), j.durable(ev.gateResolved("dev")), j.durable(ev.input())]);
    expect(p.get(C1.loopId, ID.tool)?.status).toBe("awaiting_input");
  });

  it("user input after an approval", () => {
    const j = journal();
    const p = rebuildToolActivity([j.durable(ev.requested()), j.durable(ev.decided("approve")), j.durable(ev.input())]);
    expect(p.get(C1.loopId, ID.tool)?.status).toBe("awaiting_input");
    p.apply(j.durable(ev.turnFailed()));
    expect(p.get(C1.loopId, ID.tool)).toMatchObject({ status: "awaiting_input", endedWithoutResult: true, turnOutcome: { kind: "failed" } });
  });
});

// --- reconnect ----------------------------------------------------------------------

describe("a UI that reconnects", () => {
  const j = journal();
  const approvePhase = [j.durable(ev.requested()), j.durable(ev.decided("approve")), j.live(ev.started()), j.live(ev.completed())];
  const finish = [j.durable(ev.stepDone([{ tool: ID.tool }])), j.durable(ev.turnDone())];

  it("rebuilt from the enduring events only, an approved call with no result is approved (outcome pending), not running", () => {
    const followed = rebuildToolActivity(approvePhase.slice(0, 3));
    const rebuilt = rebuildToolActivity(approvePhase.filter(isEnduring));
    expect(followed.get(C1.loopId, ID.tool)?.status).toBe("running");
    expect(rebuilt.get(C1.loopId, ID.tool)?.status).toBe("approved");
    expect(rebuilt.get(C1.loopId, ID.tool)?.live).toBeUndefined();
  });

  it("the rebuilt projection and the one that followed live agree once StepDone is applied", () => {
    const followed = rebuildToolActivity([...approvePhase, finish[0]!]);
    const rebuilt = rebuildToolActivity([...approvePhase, finish[0]!].filter(isEnduring));
    expect(snapshot(rebuilt)).toEqual(snapshot(followed));
    expect(rebuilt.lastJournalSeq).toBe(followed.lastJournalSeq);
    followed.apply(finish[1]!);
    rebuilt.apply(finish[1]!);
    expect(snapshot(rebuilt)).toEqual(snapshot(followed));
  });

  it("resetLive() on reconnect: running falls back to approved, and the journal resumes after lastJournalSeq", () => {
    const p = rebuildToolActivity(approvePhase.slice(0, 3));
    expect(p.get(C1.loopId, ID.tool)?.status).toBe("running");
    const { changed, removed } = p.resetLive();
    expect(changed.map((a) => a.status)).toEqual(["approved"]);
    expect(removed).toEqual([]);
    expect(p.get(C1.loopId, ID.tool)?.live).toBeUndefined();
    expect(p.lastJournalSeq).toBe(2);
    // The same start preview is not a duplicate any more: the new connection may see it.
    expect(p.apply(approvePhase[2]!).status).toBe("applied");
    expect(p.get(C1.loopId, ID.tool)?.status).toBe("running");
  });

  it("resetLive() drops live-only calls", () => {
    const p = rebuildToolActivity([journal().live(ev.started(ID.tool2))]);
    expect(p.get(C1.loopId, ID.tool2)?.liveOnly).toBe(true);
    expect(p.resetLive()).toEqual({ changed: [], removed: [{ loopId: C1.loopId, toolExecutionId: ID.tool2 }] });
    expect(p.size).toBe(0);
  });
});

// --- keys, duplicates, order --------------------------------------------------------------

describe("keys", () => {
  it("two loops with the same tool execution id stay separate", () => {
    const j = journal();
    const p = rebuildToolActivity([
      j.durable(ev.requested(ID.tool, C1)),
      j.durable(ev.requested(ID.tool, C2)),
      j.durable(ev.decided("approve", ID.tool, C1)),
      j.durable(ev.decided("deny", ID.tool, C2)),
      j.live(ev.started(ID.tool, C1)),
      j.durable(ev.stepDone([{ tool: ID.tool }], C2)),
      j.durable(ev.turnFailed(C1)),
    ]);
    expect(p.size).toBe(2);
    expect(p.get(C1.loopId, ID.tool)).toMatchObject({ loopId: C1.loopId, status: "approved", endedWithoutResult: true, turnOutcome: { kind: "failed" } });
    expect(p.get(LOOP2, ID.tool)).toMatchObject({ loopId: LOOP2, status: "denied", turnOutcome: undefined, result: { journalSeq: 5, stepId: C2.stepId } });
    expect(p.list({ loopId: LOOP2 }).map((a) => a.status)).toEqual(["denied"]);
    expect(p.turnOutcome(LOOP2, C2.turnId)).toBeUndefined();
  });

  it("list() filters by loop and turn", () => {
    const j = journal();
    const other: Coords = { ...C1, turnId: uid(2), stepId: uid(3) };
    const p = rebuildToolActivity([j.durable(ev.requested(ID.tool, C1)), j.durable(ev.requested(ID.tool2, other)), j.durable(ev.requested(ID.tool, C2))]);
    expect(p.list().length).toBe(3);
    expect(p.list({ loopId: C1.loopId }).map((a) => a.toolExecutionId)).toEqual([ID.tool, ID.tool2]);
    expect(p.list({ loopId: C1.loopId, turnId: other.turnId }).map((a) => a.toolExecutionId)).toEqual([ID.tool2]);
  });
});

describe("duplicate and out-of-order deliveries", () => {
  it("applying the same journal sequence twice changes nothing", () => {
    const j = journal();
    const requested = j.durable(ev.requested());
    const decided = j.durable(ev.decided("approve"));
    const p = rebuildToolActivity([requested, decided]);
    const before = p.get(C1.loopId, ID.tool);
    expect(p.apply(decided)).toEqual({ status: "duplicate", changed: [], removed: [] });
    expect(p.apply(requested).status).toBe("duplicate");
    expect(p.get(C1.loopId, ID.tool)).toBe(before);
    expect(p.lastJournalSeq).toBe(2);
  });

  it("an enduring event older than lastJournalSeq is ignored, even if not applied before", () => {
    const p = new ToolActivityProjection();
    p.apply({ event: ev.decided("approve"), journalSeq: 7 });
    expect(p.apply({ event: ev.decided("deny"), journalSeq: 5 }).status).toBe("duplicate");
    expect(p.get(C1.loopId, ID.tool)?.status).toBe("approved");
  });

  it("previews are deduplicated by event id, and the first of each kind wins", () => {
    const j = journal();
    const p = rebuildToolActivity([j.durable(ev.requested()), j.durable(ev.decided("approve"))]);
    const started = j.live(ev.started());
    expect(p.apply(started).status).toBe("applied");
    const entry = p.get(C1.loopId, ID.tool);
    expect(p.apply(started)).toEqual({ status: "duplicate", changed: [], removed: [] });
    expect(p.apply(j.live(ev.started())).changed).toEqual([]);
    expect(p.get(C1.loopId, ID.tool)).toBe(entry);
  });

  it("a completion overtaking its start still shows completed, and the late start does not move it back", () => {
    const j = journal();
    const p = rebuildToolActivity([j.durable(ev.requested()), j.durable(ev.decided("approve"))]);
    expect(statuses(p, [j.live(ev.completed()), j.live(ev.started())])).toEqual(["completed", "completed"]);
  });

  it("a start that overtakes its approval shows once the approval arrives", () => {
    const j = journal();
    const requested = j.durable(ev.requested());
    const decided = j.durable(ev.decided("approve"));
    const p = new ToolActivityProjection();
    expect(statuses(p, [requested, j.live(ev.started()), decided])).toEqual(["awaiting_approval", "awaiting_approval", "running"]);
  });

  it("a preview for an unknown call creates a live-only entry that the journal later adopts", () => {
    const j = journal();
    const p = new ToolActivityProjection();
    const r = p.apply(j.live(ev.started()));
    expect(r.changed).toMatchObject([{ status: "running", liveOnly: true, toolName: "bash" }]);
    expect(p.apply(j.durable(ev.requested())).changed).toMatchObject([{ status: "awaiting_approval", liveOnly: false }]);
    expect(p.apply(j.durable(ev.decided("approve"))).changed).toMatchObject([{ status: "running" }]);
  });

  it("returns changed entries as new objects and leaves others untouched", () => {
    const j = journal();
    const p = rebuildToolActivity([j.durable(ev.requested(ID.tool)), j.durable(ev.requested(ID.tool2))]);
    const other = p.get(C1.loopId, ID.tool2);
    const { changed } = p.apply(j.durable(ev.decided("approve", ID.tool)));
    expect(changed).toEqual([p.get(C1.loopId, ID.tool)]);
    expect(p.get(C1.loopId, ID.tool2)).toBe(other);
  });

  it("enduring events the projection does not use still advance lastJournalSeq", () => {
    const p = new ToolActivityProjection();
    expect(p.apply({ event: createEvent("TurnStarted", { ...turnOf(C1), turnIndex: 2 }), journalSeq: 3 })).toEqual({
      status: "applied",
      changed: [],
      removed: [],
    });
    expect(p.apply({ event: { type: "AcmeAudit" }, journalSeq: 4 }).status).toBe("applied");
    expect(p.apply({ event: { type: "AcmePreview" }, journalSeq: 0 }).status).toBe("ignored");
    expect(p.lastJournalSeq).toBe(4);
  });

  it("rejects a journal sequence that does not fit the event's class", () => {
    const p = new ToolActivityProjection();
    for (const [event, journalSeq] of [
      [ev.requested(), 0],
      [ev.started(), 3],
      [ev.requested(), -1],
      [ev.requested(), 1.5],
      [ev.requested(), Number.NaN],
    ] as const) {
      const thrown = (() => {
        try {
          p.apply({ event, journalSeq });
        } catch (e) {
          return e;
        }
      })();
      expect(thrown).toBeInstanceOf(ProjectionDeliveryError);
      expect(thrown).toMatchObject({ code: "DELIVERY_INVALID", eventType: event.type });
    }
    expect(p.size).toBe(0);
    expect(p.lastJournalSeq).toBe(0);
  });
});

describe("previews never override durable facts", () => {
  it("previews after finalization do not move the call back", () => {
    const j = journal();
    const p = rebuildToolActivity([j.durable(ev.requested()), j.durable(ev.decided("approve")), j.durable(ev.stepDone([{ tool: ID.tool }]))]);
    const finalized = p.get(C1.loopId, ID.tool);
    expect(p.apply(j.live(ev.started())).status).toBe("ignored");
    expect(p.apply(j.live(ev.completed(ID.tool, C1, true))).status).toBe("ignored");
    expect(p.get(C1.loopId, ID.tool)).toBe(finalized);
    expect(finalized).toMatchObject({ status: "finalized", result: { journalSeq: 3 } });
  });

  it("previews do not move a call out of awaiting approval or denied", () => {
    const j = journal();
    const p = rebuildToolActivity([j.durable(ev.requested())]);
    expect(statuses(p, [j.live(ev.started()), j.live(ev.completed())])).toEqual(["awaiting_approval", "awaiting_approval"]);
    expect(statuses(p, [j.durable(ev.decided("deny"))])).toEqual(["denied"]);
  });

  it("a preview for a call of a turn that has ended is ignored", () => {
    const j = journal();
    const p = rebuildToolActivity([j.durable(ev.turnInterrupted())]);
    expect(p.apply(j.live(ev.started())).status).toBe("ignored");
    expect(p.size).toBe(0);
  });
});

describe("turn outcomes", () => {
  it("a failed turn leaves approved calls approved, with the outcome attached and no result", () => {
    const j = journal();
    const feed = [
      j.durable(ev.requested(ID.tool)),
      j.durable(ev.decided("approve", ID.tool)),
      j.durable(ev.requested(ID.tool2)),
      j.durable(ev.decided("approve", ID.tool2)),
      j.live(ev.started(ID.tool)),
      j.live(ev.started(uid(5))), // a call the journal never names
      j.durable(ev.turnFailed()),
    ];
    const followed = new ToolActivityProjection().applyAll(feed.slice(0, -1));
    expect(followed.get(C1.loopId, ID.tool)?.status).toBe("running");
    const r = followed.apply(feed.at(-1)!);
    expect(r.removed).toEqual([{ loopId: C1.loopId, toolExecutionId: uid(5) }]);
    expect(r.changed.map((a) => a.toolExecutionId).sort()).toEqual([ID.tool, ID.tool2].sort());

    for (const tool of [ID.tool, ID.tool2]) {
      expect(followed.get(C1.loopId, tool)).toMatchObject({
        status: "approved",
        endedWithoutResult: true,
        turnOutcome: { kind: "failed", error: { kind: "model_error", message: "rate limited" }, journalSeq: 5 },
      });
      expect(followed.get(C1.loopId, tool)?.live).toBeUndefined();
    }
    expect(snapshot(rebuildToolActivity(feed.filter(isEnduring)))).toEqual(snapshot(followed));
  });

  it("StepDone after the turn ended still records the result; a second terminal outcome is ignored", () => {
    const j = journal();
    const p = rebuildToolActivity([
      j.durable(ev.requested()),
      j.durable(ev.decided("approve")),
      j.durable(ev.turnFailed()),
      j.durable(ev.stepDone([{ tool: ID.tool }])),
      j.durable(ev.turnDone()),
    ]);
    expect(p.get(C1.loopId, ID.tool)).toMatchObject({ status: "finalized", endedWithoutResult: false, turnOutcome: { kind: "failed" } });
  });

  it("a tool_use block no gate linked to a call creates no entry: nothing names the execution", () => {
    const j = journal();
    const p = rebuildToolActivity([j.durable(ev.stepDone([], C1, [ID.tool2]))]);
    expect(p.size).toBe(0);
  });

  it("StepDone finalizes every call of its step and only its step", () => {
    const j = journal();
    const other = { ...C1, stepId: uid(7) };
    const p = rebuildToolActivity([
      j.durable(ev.requested(ID.tool, C1)),
      j.durable(ev.requested(ID.tool2, other)),
      j.durable(ev.decided("approve", ID.tool, C1)),
      j.durable(ev.decided("approve", ID.tool2, other)),
      j.durable(ev.stepDone([], C1)),
    ]);
    expect(p.get(C1.loopId, ID.tool)).toMatchObject({ status: "finalized", result: { journalSeq: 5, stepId: C1.stepId } });
    expect(p.get(C1.loopId, ID.tool2)).toMatchObject({ status: "approved" });
    expect(p.get(C1.loopId, ID.tool2)!.result).toBeUndefined();
  });
});

// --- property: dropped previews never change the settled state ------------------------------

type Branch = "policy" | "gate" | "deny" | "free" | "input" | "unfinished";
interface ToolPlan {
  branch: Branch;
  isError: boolean;
}

/** The enduring and live events of one call, in the order the loop publishes them. */
function toolEvents(tool: string, c: Coords, plan: ToolPlan, gateId: string): { event: JetloopEvent; live: boolean }[] {
  const d = (event: JetloopEvent) => ({ event, live: false });
  const l = (event: JetloopEvent) => ({ event, live: true });
  const run = [l(ev.started(tool, c)), l(ev.completed(tool, c, plan.isError))];
  switch (plan.branch) {
    case "policy":
      return [d(ev.requested(tool, c)), d(ev.decided("approve", tool, c)), ...run];
    case "gate":
      return [
        d(ev.requested(tool, c)),
        d(ev.gateOpened("harness.permission", tool, c, gateId)),
        d(ev.gateResolved("approve", "answered", c, gateId)),
        d(ev.decided("approve", tool, c)),
        ...run,
      ];
    case "deny":
      return [d(ev.requested(tool, c)), d(ev.decided("deny", tool, c))];
    case "free":
      return run;
    case "input":
      return [
        run[0]!,
        d(ev.input(tool, c)),
        d(ev.gateOpened("harness.ask_user", tool, c, gateId)),
        d(ev.gateResolved("main", "answered", c, gateId)),
        run[1]!,
      ];
    case "unfinished":
      return [d(ev.requested(tool, c)), d(ev.decided("approve", tool, c)), run[0]!];
  }
}

const planArb = fc.record({
  branch: fc.constantFrom<Branch>("policy", "gate", "deny", "free", "input", "unfinished"),
  isError: fc.boolean(),
});

/** One turn per loop, 1–3 calls per loop; the same tool execution ids in both loops. */
const scenarioArb = fc.record({
  loops: fc.array(fc.array(planArb, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 2 }),
  ending: fc.constantFrom("done", "failed", "interrupted", "none"),
  interleave: fc.array(fc.nat(), { maxLength: 40 }),
});

type Scenario = typeof scenarioArb extends fc.Arbitrary<infer S> ? S : never;

/** The deliveries the loops publish, the calls' events interleaved by `picks`. */
function publish(scenario: Scenario) {
  const lanes: { event: JetloopEvent; live: boolean }[][] = [];
  const tails: JetloopEvent[] = [];
  scenario.loops.forEach((plans, li) => {
    const c: Coords = li === 0 ? C1 : C2;
    const tools = plans.map((_, i) => uid(100 + i));
    plans.forEach((plan, i) => lanes.push(toolEvents(tools[i]!, c, plan, uid(200 + li * 10 + i))));
    const results = plans.flatMap((plan, i) =>
      plan.branch === "unfinished" ? [] : [{ tool: tools[i]!, isError: plan.branch === "deny" || plan.isError }],
    );
    // An unfinished call never gets a result, and a free call (no approval asked) is named by
    // no enduring event (StepDone names calls by the model's ids only), so their turn must
    // end for them to settle.
    const ending = scenario.ending === "none" && plans.some((p) => p.branch === "unfinished" || p.branch === "free") ? "failed" : scenario.ending;
    tails.push(ev.stepDone(results, c, tools));
    if (ending === "done") tails.push(ev.turnDone(c));
    if (ending === "failed") tails.push(ev.turnFailed(c));
    if (ending === "interrupted") tails.push(ev.turnInterrupted(c));
  });
  const order: { event: JetloopEvent; live: boolean }[] = [];
  let pick = 0;
  while (lanes.some((lane) => lane.length > 0)) {
    const open = lanes.filter((lane) => lane.length > 0);
    order.push(open[(scenario.interleave[pick++] ?? 0) % open.length]!.shift()!);
  }
  order.push(...tails.map((event) => ({ event, live: false })));
  let seq = 0;
  return order.map(({ event, live }): Delivery => ({ event, journalSeq: live ? 0 : ++seq }));
}

/**
 * What a subscriber may receive: each preview dropped or moved anywhere (the live path
 * races the journal consumer), and enduring deliveries redelivered later.
 */
const receivedArb = (published: Delivery[]) =>
  fc
    .tuple(
      fc.array(fc.record({ drop: fc.boolean(), at: fc.nat() }), { minLength: published.length, maxLength: published.length }),
      fc.array(fc.record({ of: fc.nat(), at: fc.nat() }), { maxLength: 4 }),
    )
    .map(([fates, redeliveries]) => {
      const received = published.filter((d) => isEnduring(d));
      published.forEach((d, i) => {
        const fate = fates[i]!;
        if (!isEnduring(d) && !fate.drop) received.splice(fate.at % (received.length + 1), 0, d);
      });
      // A redelivery comes after the original: an ordered consumer never goes back.
      const enduring = published.filter(isEnduring);
      for (const { of, at } of redeliveries) {
        const original = enduring[of % enduring.length]!;
        const after = received.indexOf(original) + 1;
        received.splice(after + (at % (received.length - after + 1)), 0, original);
      }
      return received;
    });

describe("property: previews dropped or reordered never change the settled state", () => {
  it("after StepDone (and the turn's end) the state equals the no-drop state", () => {
    fc.assert(
      fc.property(
        scenarioArb.chain((s) => {
          const published = publish(s);
          return fc.tuple(fc.constant(published), receivedArb(published));
        }),
        ([published, received]) => {
          const reference = rebuildToolActivity(published);
          const p = new ToolActivityProjection();
          const startedSeen = new Set<string>();
          for (const d of received) {
            p.apply(d);
            if (d.event.type === "ToolCallStarted") startedSeen.add(`${d.event.loopId} ${d.event.toolExecutionId}`);
            // Never infer running: running only for a call whose start was delivered.
            for (const a of p.list()) if (a.status === "running") expect(startedSeen.has(keyOf(a))).toBe(true);
          }
          expect(snapshot(p)).toEqual(snapshot(reference));
          expect(p.lastJournalSeq).toBe(reference.lastJournalSeq);
          for (const a of snapshot(p)) {
            expect(["finalized", "denied", "approved"]).toContain(a.status);
            expect(a.live).toBeUndefined();
            expect(a.liveOnly).toBe(false);
          }
          // And the journal alone gives the same state.
          expect(snapshot(rebuildToolActivity(published.filter(isEnduring)))).toEqual(snapshot(reference));
        },
      ),
      { numRuns: 500 },
    );
    // 500 runs take a few seconds, more on a loaded two-core machine.
  }, 30_000);
});
