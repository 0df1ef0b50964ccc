/**
 * Fixed, valid sample events (camelCase, as a caller builds them) for the unit tests:
 * one per built-in type, with readable ids. Tests copy and break them.
 */
import { expect } from "vitest";
import {
  defaultRegistry,
  EventValidationError,
  type EventType,
  type PermissionRequest,
  type ValidationRule,
} from "../../src/index.js";

export const ID = {
  session: "0190f2a1-5b3c-7d4e-8f60-000000000001",
  loop: "0190f2a1-5b3c-7d4e-8f60-000000000002",
  turn: "0190f2a1-5b3c-7d4e-8f60-000000000003",
  step: "0190f2a1-5b3c-7d4e-8f60-000000000004",
  event: "0190f2a1-5b3c-7d4e-8f60-000000000005",
  tool: "0190f2a1-5b3c-7d4e-8f60-000000000006",
  tool2: "0190f2a1-5b3c-7d4e-8f60-000000000007",
  gate: "0190f2a1-5b3c-7d4e-8f60-000000000008",
  command: "0190f2a1-5b3c-7d4e-8f60-000000000009",
  execution: "0190f2a1-5b3c-7d4e-8f60-00000000000a",
} as const;

export const CREATED_AT = "2025-06-01T12:34:56.789Z";

export const STEP_COORDS = { sessionId: ID.session, loopId: ID.loop, turnId: ID.turn, stepId: ID.step } as const;
export const TURN_COORDS = { sessionId: ID.session, loopId: ID.loop, turnId: ID.turn } as const;
export const LOOP_COORDS = { sessionId: ID.session, loopId: ID.loop } as const;
export const SESSION_COORDS = { sessionId: ID.session } as const;

/** A request with no grant: only the required fields. */
export function minimalRequest(): PermissionRequest {
  return {
    toolName: "read_file",
    requirements: [{ kind: "fs.read", match: "/etc/hosts", description: "read /etc/hosts" }],
  };
}

/** A request with a command.execute grant and a second requirement with candidates. */
export function grantRequest(): PermissionRequest {
  return {
    toolName: "bash",
    summary: "run the test suite",
    executionId: ID.execution,
    command: "npm test",
    workingDirectory: "/work/app",
    expiresAtUnixMilli: 1748781296789,
    requirements: [
      {
        kind: "command.execute",
        match: "npm test",
        description: "run npm test",
        grantClass: "command.start.v1",
        grantTarget: "npm test",
      },
      {
        kind: "fs.write",
        scope: "workspace",
        match: "/work/app/coverage",
        description: "write coverage reports",
        grantClass: "fs.write.v1",
        grantTarget: "/work/app",
        // Candidates carry their requirement's kind and grant exactly.
        candidates: [
          { kind: "fs.write", match: "/work/app/coverage/**", description: "any coverage file", grantClass: "fs.write.v1", grantTarget: "/work/app" },
          { kind: "fs.write", match: "/work/app/**", description: "anywhere in the app", grantClass: "fs.write.v1", grantTarget: "/work/app" },
        ],
      },
    ],
  };
}

type Sample = Record<string, unknown> & { type: EventType };

/** A valid event of each built-in type, fresh on every call. */
export function sample(type: EventType): Sample {
  const header = { eventId: ID.event, createdAt: CREATED_AT };
  switch (type) {
    case "PermissionRequested":
      return { type, ...header, ...STEP_COORDS, toolExecutionId: ID.tool, request: grantRequest() };
    case "PermissionDecided":
      return { type, ...header, ...STEP_COORDS, toolExecutionId: ID.tool, effect: "approve", reason: "allowed by policy" };
    case "UserInputRequested":
      return { type, ...header, ...STEP_COORDS, toolExecutionId: ID.tool, question: "Which branch?", choices: ["main", "dev"] };
    case "ToolCallStarted":
      return { type, ...header, ...STEP_COORDS, toolExecutionId: ID.tool, toolName: "bash", summary: "npm test" };
    case "ToolCallCompleted":
      return { type, ...header, ...STEP_COORDS, toolExecutionId: ID.tool, resultPreview: "42 passed" };
    case "GateOpened":
      return {
        type,
        ...header,
        ...STEP_COORDS,
        gate: {
          id: ID.gate,
          kind: "harness.permission",
          resolver: "loop",
          blocks: "tool_call",
          effect: "resume",
          criticality: "critical",
          subject: { toolExecutionId: ID.tool, toolUseId: "toolu_01", turnId: ID.turn, stepId: ID.step },
          prompt: {
            title: "Run npm test?",
            body: "bash wants to run npm test",
            controls: [
              { action: "Approve", label: "Approve" },
              { action: "Deny", label: "Deny" },
            ],
          },
        },
      };
    case "GateResolved":
      return {
        type,
        ...header,
        ...STEP_COORDS,
        gateId: ID.gate,
        resolver: "loop",
        reason: "answered",
        action: "Approve",
        audit: { kind: "permission", data: { requirementDescriptions: ["run npm test"] } },
      };
    case "StepDone":
      return {
        type,
        ...header,
        ...STEP_COORDS,
        messages: [
          {
            role: "assistant",
            blocks: [
              { type: "text", text: "running tests" },
              { type: "tool_use", id: "toolu_01", name: "bash", input: { command: "npm test" } },
            ],
          },
          { role: "tool", toolUseId: "toolu_01", blocks: [{ type: "text", text: "42 passed" }] },
        ],
      };
    case "TurnStarted":
      return { type, ...header, ...TURN_COORDS, turnIndex: 2 };
    case "TurnDone":
      return { type, ...header, ...TURN_COORDS, turnIndex: 2 };
    case "TurnFailed":
      return { type, ...header, ...TURN_COORDS, turnIndex: 2, err: { kind: "model_error", message: "rate limited" } };
    case "TurnInterrupted":
      return { type, ...header, ...TURN_COORDS, turnIndex: 2 };
    case "LoopStarted":
    case "LoopIdle":
      return { type, ...header, ...LOOP_COORDS };
    case "SessionStarted":
    case "SessionIdle":
    case "SessionStopped":
      return { type, ...header, ...SESSION_COORDS };
  }
}

export const BUILT_IN_TYPES: EventType[] = [...defaultRegistry.types()].map((d) => d.type as EventType);

/** Runs `fn`, expecting an EventValidationError with exactly these properties. */
export function expectValidationError(
  fn: () => unknown,
  expected: { eventType: string; field: string; rule: ValidationRule },
): EventValidationError {
  let thrown: unknown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  expect(thrown, `expected ${expected.field} ${expected.rule}`).toBeInstanceOf(EventValidationError);
  const err = thrown as EventValidationError;
  expect({ code: err.code, name: err.name, eventType: err.eventType, field: err.field, rule: err.rule }).toEqual({
    code: expected.rule === "is not a known event type" ? "EVENT_TYPE_UNKNOWN" : "EVENT_INVALID",
    name: "EventValidationError",
    ...expected,
  });
  return err;
}

/** Runs `fn` and returns what it threw (failing the test if it did not throw). */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  expect.fail("expected a throw");
}
