import { describe, expect, it } from "vitest";
import {
  defaultRegistry,
  EventValidationError,
  limits,
  NIL_UUID,
  safeValidateEvent,
  validateEvent as validateTyped,
  type EventType,
} from "../../src/index.js";
import { BUILT_IN_TYPES, CREATED_AT, expectValidationError, ID, sample } from "./fixtures.js";

const COORDS = ["loopId", "turnId", "stepId"] as const;

/** validateEvent, seen as a plain record so the tests can read any field. */
const validateEvent = (e: unknown) => validateTyped<Record<string, unknown>>(e);

const without = (o: Record<string, unknown>, ...keys: string[]) => {
  const copy = { ...o };
  for (const k of keys) delete copy[k];
  return copy;
};

describe("the catalogue's identity profiles", () => {
  it("has every type the design names, with its class and scope", () => {
    const table = Object.fromEntries(
      [...defaultRegistry.types()].map((d) => [d.type, [d.class, d.scope, d.endsTurn, d.identity.loopId, d.identity.turnId, d.identity.stepId].join(" ")]),
    );
    expect(table).toEqual({
      PermissionRequested: "enduring loop false required required required",
      PermissionDecided: "enduring loop false required required required",
      UserInputRequested: "enduring loop false required required required",
      ToolCallStarted: "ephemeral loop false required required required",
      ToolCallCompleted: "ephemeral loop false required required required",
      GateOpened: "enduring loop false optional optional optional",
      GateResolved: "enduring loop false optional optional optional",
      StepDone: "enduring loop false required required required",
      TurnStarted: "enduring loop false required required forbidden",
      TurnDone: "enduring loop true required required optional",
      TurnFailed: "enduring loop true required required optional",
      TurnInterrupted: "enduring loop true required required optional",
      LoopStarted: "enduring loop false required forbidden forbidden",
      LoopIdle: "enduring loop false required forbidden forbidden",
      SessionStarted: "enduring session false forbidden forbidden forbidden",
      SessionStopped: "enduring session false forbidden forbidden forbidden",
    });
  });
});

describe.each(BUILT_IN_TYPES)("identity profile of %s", (type: EventType) => {
  const def = defaultRegistry.get(type)!;
  const at = { eventType: type };

  it("accepts the sample and fills in defaults", () => {
    const event = validateEvent(sample(type));
    expect(event.type).toBe(type);
    expect(event.visibility).toBe("public");
  });

  it("requires sessionId: absent, nil, empty", () => {
    expectValidationError(() => validateEvent(without(sample(type), "sessionId")), { ...at, field: "sessionId", rule: "must be set" });
    expectValidationError(() => validateEvent({ ...sample(type), sessionId: NIL_UUID }), { ...at, field: "sessionId", rule: "must be set" });
    expectValidationError(() => validateEvent({ ...sample(type), sessionId: "" }), { ...at, field: "sessionId", rule: "is invalid" });
  });

  it("refuses a malformed sessionId", () => {
    for (const bad of [ID.session.toUpperCase(), "not-a-uuid", `{${ID.session}}`, `${ID.session}.x`, 42]) {
      expectValidationError(() => validateEvent({ ...sample(type), sessionId: bad }), { ...at, field: "sessionId", rule: "is invalid" });
    }
  });

  const required = COORDS.filter((c) => def.identity[c] === "required");
  const forbidden = COORDS.filter((c) => def.identity[c] === "forbidden");

  it.each(required.length ? required : ["(none)"])("requires %s: absent or nil → must be set", (c) => {
    if (c === "(none)") return;
    expectValidationError(() => validateEvent(without(sample(type), c)), { ...at, field: c, rule: "must be set" });
    expectValidationError(() => validateEvent({ ...sample(type), [c]: NIL_UUID }), { ...at, field: c, rule: "must be set" });
  });

  it.each(forbidden.length ? forbidden : ["(none)"])("forbids %s: present → must be zero, nil → counts as unset", (c) => {
    if (c === "(none)") return;
    const present = { ...sample(type), loopId: ID.loop, turnId: ID.turn, stepId: ID.step };
    // The first forbidden coordinate in quartet order is the one named.
    const first = forbidden[0]!;
    expectValidationError(() => validateEvent(present), { ...at, field: first, rule: "must be zero" });
    expectValidationError(() => validateEvent({ ...sample(type), [c]: ID.step }), { ...at, field: c, rule: "must be zero" });
    // Even an invalid value is "present": the profile speaks first.
    expectValidationError(() => validateEvent({ ...sample(type), [c]: "garbage" }), { ...at, field: c, rule: "must be zero" });
    const nil = validateEvent({ ...sample(type), [c]: NIL_UUID });
    expect(nil).not.toHaveProperty(c);
  });

  if (def.identity.stepId !== "forbidden") {
    it("refuses a stepId without a turnId", () => {
      // Gate events carry optional coordinates; use a session-resolved gate so the profile, not the gate rule, speaks.
      const base = sessionResolved(sample(type));
      expectValidationError(() => validateEvent({ ...without(base, "turnId"), stepId: ID.step }), { ...at, field: "turnId", rule: "must be set" });
      expectValidationError(() => validateEvent({ ...base, turnId: NIL_UUID, stepId: ID.step }), { ...at, field: "turnId", rule: "must be set" });
    });
  }

  it("requires eventId and createdAt", () => {
    expectValidationError(() => validateEvent(without(sample(type), "eventId")), { ...at, field: "eventId", rule: "must be set" });
    expectValidationError(() => validateEvent(without(sample(type), "createdAt")), { ...at, field: "createdAt", rule: "must be set" });
    expectValidationError(() => validateEvent({ ...sample(type), eventId: "x" }), { ...at, field: "eventId", rule: "is invalid" });
  });

  it("refuses an invalid visibility", () => {
    for (const bad of ["secret", "PUBLIC", 2, 1, null, true]) {
      expectValidationError(() => validateEvent({ ...sample(type), visibility: bad }), { ...at, field: "visibility", rule: "is invalid" });
    }
    expect(validateEvent({ ...sample(type), visibility: "internal" }).visibility).toBe("internal");
  });
});

/** Turns a gate sample into a session-resolved one (other types unchanged). */
function sessionResolved(e: Record<string, unknown>): Record<string, unknown> {
  if (e.type === "GateOpened") return { ...e, gate: { ...(e.gate as object), kind: "harness.open_url", resolver: "session" } };
  if (e.type === "GateResolved") return { ...e, resolver: "session" };
  return e;
}

describe("tool events need a tool execution id", () => {
  const tools: EventType[] = ["PermissionRequested", "PermissionDecided", "UserInputRequested", "ToolCallStarted", "ToolCallCompleted"];
  it.each(tools)("%s: absent → must be set, nil or malformed → is invalid", (type) => {
    expectValidationError(() => validateEvent(without(sample(type), "toolExecutionId")), { eventType: type, field: "toolExecutionId", rule: "must be set" });
    // On the camelCase side the nil UUID in a body field is refused as a value; on the wire it
    // decodes as absent and is "must be set" (see codec.test.ts).
    expectValidationError(() => validateEvent({ ...sample(type), toolExecutionId: NIL_UUID }), { eventType: type, field: "toolExecutionId", rule: "is invalid" });
    expectValidationError(() => validateEvent({ ...sample(type), toolExecutionId: "0190F2A1-5B3C-7D4E-8F60-000000000006" }), {
      eventType: type,
      field: "toolExecutionId",
      rule: "is invalid",
    });
  });
});

describe("gate events", () => {
  const gates = ["GateOpened", "GateResolved"] as const;

  it.each(gates)("%s resolved by the loop needs the full quartet", (type) => {
    for (const c of COORDS) {
      // Removing turnId alone leaves a stepId without a turn: the profile names turnId first either way.
      const broken = c === "turnId" ? without(sample(type), "turnId", "stepId") : without(sample(type), c);
      expectValidationError(() => validateEvent(broken), { eventType: type, field: c, rule: "must be set" });
    }
    expectValidationError(() => validateEvent({ ...sample(type), loopId: NIL_UUID }), { eventType: type, field: "loopId", rule: "must be set" });
  });

  it.each(gates)("%s resolved by the session needs only sessionId", (type) => {
    const e = sessionResolved(without(sample(type), "loopId", "turnId", "stepId"));
    const valid = validateEvent(e);
    expect(valid).not.toHaveProperty("loopId");
    // and may still name its loop
    expect(validateEvent({ ...e, loopId: ID.loop }).loopId).toBe(ID.loop);
  });

  it("refuses unknown resolvers and resolution reasons", () => {
    expectValidationError(() => validateEvent({ ...sample("GateResolved"), resolver: "host" }), { eventType: "GateResolved", field: "resolver", rule: "is invalid" });
    expectValidationError(() => validateEvent({ ...sample("GateResolved"), reason: "timeout" }), { eventType: "GateResolved", field: "reason", rule: "is invalid" });
    expectValidationError(() => validateEvent({ ...sample("GateResolved"), reason: undefined }), { eventType: "GateResolved", field: "reason", rule: "must be set" });
    expectValidationError(() => validateEvent({ ...sample("GateResolved"), gateId: NIL_UUID }), { eventType: "GateResolved", field: "gateId", rule: "is invalid" });
    const opened = sample("GateOpened");
    expectValidationError(() => validateEvent({ ...opened, gate: { ...(opened.gate as object), resolver: "user" } }), {
      eventType: "GateOpened",
      field: "gate.resolver",
      rule: "is invalid",
    });
    expectValidationError(() => validateEvent({ ...opened, gate: { ...(opened.gate as object), kind: undefined } }), {
      eventType: "GateOpened",
      field: "gate.kind",
      rule: "must be set",
    });
    expectValidationError(() => validateEvent({ ...opened, gate: undefined }), { eventType: "GateOpened", field: "gate", rule: "must be set" });
  });

  it("accepts every documented resolution reason", () => {
    for (const reason of ["answered", "policy_response", "abandoned", "owner_closed", "restore_unavailable"]) {
      expect(validateEvent({ ...sample("GateResolved"), reason }).reason).toBe(reason);
    }
  });
});

describe("body rules", () => {
  it("PermissionDecided: effect is approve or deny, never ask", () => {
    for (const effect of ["approve", "deny"]) expect(validateEvent({ ...sample("PermissionDecided"), effect }).effect).toBe(effect);
    for (const bad of ["ask", "Approve", "allow", "", 0]) {
      expectValidationError(() => validateEvent({ ...sample("PermissionDecided"), effect: bad }), { eventType: "PermissionDecided", field: "effect", rule: "is invalid" });
    }
    expectValidationError(() => validateEvent(without(sample("PermissionDecided"), "effect")), { eventType: "PermissionDecided", field: "effect", rule: "must be set" });
  });

  describe("UserInputRequested.choices", () => {
    const t = "UserInputRequested";
    it("must be non-empty when present", () => {
      expectValidationError(() => validateEvent({ ...sample(t), choices: [] }), { eventType: t, field: "choices", rule: "is invalid" });
      expect(validateEvent(without(sample(t), "choices"))).not.toHaveProperty("choices");
    });
    it("must be distinct", () => {
      expectValidationError(() => validateEvent({ ...sample(t), choices: ["a", "b", "a"] }), { eventType: t, field: "choices", rule: "is invalid" });
    });
    it("each choice is well-formed text within the name cap", () => {
      expect(validateEvent({ ...sample(t), choices: ["x".repeat(limits.name)] }).choices).toHaveLength(1);
      expectValidationError(() => validateEvent({ ...sample(t), choices: ["ok", "x".repeat(limits.name + 1)] }), { eventType: t, field: "choices.1", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), choices: ["ok", ""] }), { eventType: t, field: "choices.1", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), choices: ["\ud800"] }), { eventType: t, field: "choices.0", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), choices: [1] }), { eventType: t, field: "choices.0", rule: "is invalid" });
    });
    it("at most limits.choices of them", () => {
      const many = Array.from({ length: limits.choices + 1 }, (_, i) => `c${i}`);
      expect(validateEvent({ ...sample(t), choices: many.slice(0, limits.choices) }).choices).toHaveLength(limits.choices);
      expectValidationError(() => validateEvent({ ...sample(t), choices: many }), { eventType: t, field: "choices", rule: "is invalid" });
    });
  });

  describe("text is well-formed", () => {
    const t = "PermissionDecided";
    const bad: [string, string][] = [
      ["a lone high surrogate", "abc\ud83dxyz"],
      ["a lone high surrogate at the end", "abc\ud83d"],
      ["a lone low surrogate", "\ude00abc"],
      ["two low surrogates", "\ude00\ude00"],
      ["reversed pair", "\ude00\ud83d"],
      ["NUL", "a\u0000b"],
      ["BEL", "a\u0007b"],
      ["ESC", "\u001b[31mred"],
      ["vertical tab", "a\u000bb"],
      ["form feed", "a\u000cb"],
      ["DEL", "a\u007fb"],
    ];
    it.each(bad)("refuses %s", (_, value) => {
      expectValidationError(() => validateEvent({ ...sample(t), reason: value }), { eventType: t, field: "reason", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), agentName: value }), { eventType: t, field: "agentName", rule: "is invalid" });
    });
    it("accepts tabs, newlines, surrogate pairs and non-ASCII", () => {
      for (const ok of ["a\tb", "line1\nline2\r\n", "😀 ok", "naïve — ✓", "\u0080\u009f"]) {
        expect(validateEvent({ ...sample(t), reason: ok }).reason).toBe(ok);
      }
    });
    it("refuses an empty optional string (absent is the zero value)", () => {
      expectValidationError(() => validateEvent({ ...sample(t), reason: "" }), { eventType: t, field: "reason", rule: "is invalid" });
    });
  });

  describe("caps come from limits", () => {
    const cases: [EventType, string, number][] = [
      ["PermissionDecided", "reason", limits.text],
      ["PermissionDecided", "subject", limits.text],
      ["PermissionDecided", "audit", limits.text],
      ["UserInputRequested", "question", limits.text],
      ["ToolCallStarted", "toolName", limits.name],
      ["ToolCallStarted", "summary", limits.summary],
      ["ToolCallCompleted", "resultPreview", limits.resultPreview],
      ["SessionStopped", "reason", limits.text],
      ["TurnInterrupted", "reason", limits.text],
      ["GateResolved", "action", limits.name],
      ["LoopStarted", "agentName", limits.name],
    ];
    it.each(cases)("%s.%s ≤ %d UTF-16 code units", (type, field, cap) => {
      expect(validateEvent({ ...sample(type), [field]: "x".repeat(cap) })[field]).toHaveLength(cap);
      expectValidationError(() => validateEvent({ ...sample(type), [field]: "x".repeat(cap + 1) }), { eventType: type, field, rule: "is invalid" });
      // Caps count code units: a pair is two.
      expectValidationError(() => validateEvent({ ...sample(type), [field]: "x".repeat(cap - 1) + "😀" }), { eventType: type, field, rule: "is invalid" });
    });
  });

  describe("createdAt is RFC 3339 UTC with up to nanoseconds", () => {
    const t = "SessionStarted";
    it.each([
      "2025-06-01T12:34:56Z",
      "2025-06-01T12:34:56.1Z",
      "2025-06-01T12:34:56.123Z",
      "2025-06-01T12:34:56.123456789Z",
      "2024-02-29T23:59:59.999999999Z",
      "2000-02-29T00:00:00Z",
      "0001-01-01T00:00:00Z",
    ])("accepts %s", (createdAt) => {
      expect(validateEvent({ ...sample(t), createdAt }).createdAt).toBe(createdAt);
    });
    it.each([
      "2025-06-01 12:34:56Z",
      "2025-06-01T12:34:56",
      "2025-06-01T12:34:56+00:00",
      "2025-06-01T12:34:56.123+02:00",
      "2025-06-01T12:34:56z",
      "2025-06-01t12:34:56Z",
      "2025-06-01T12:34:56.Z",
      "2025-06-01T12:34:56.1234567890Z",
      "2025-6-1T12:34:56Z",
      "+2025-06-01T12:34:56Z",
      "2025-13-01T00:00:00Z",
      "2025-00-10T00:00:00Z",
      "2025-06-00T00:00:00Z",
      "2025-06-31T00:00:00Z",
      "2025-02-29T00:00:00Z",
      "1900-02-29T00:00:00Z",
      "2024-02-30T00:00:00Z",
      "2025-06-01T24:00:00Z",
      "2025-06-01T12:60:00Z",
      "2025-06-01T12:34:60Z",
      "",
      "1748781296789",
    ])("refuses %j", (createdAt) => {
      expectValidationError(() => validateEvent({ ...sample(t), createdAt }), { eventType: t, field: "createdAt", rule: "is invalid" });
    });
    it("refuses a number or a Date", () => {
      expectValidationError(() => validateEvent({ ...sample(t), createdAt: 1748781296789 }), { eventType: t, field: "createdAt", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), createdAt: new Date(CREATED_AT) }), { eventType: t, field: "createdAt", rule: "is invalid" });
    });
  });

  describe("cause", () => {
    const t = "PermissionDecided";
    it("keeps a cause with ids, drops an empty one", () => {
      const e = validateEvent({ ...sample(t), cause: { commandId: ID.command, agency: "user" } });
      expect(e.cause).toEqual({ commandId: ID.command, agency: "user" });
      expect(validateEvent({ ...sample(t), cause: {} }).cause).toBeUndefined();
      expect(validateEvent({ ...sample(t), cause: { agency: "machine" } }).cause).toBeUndefined();
      expect(validateEvent({ ...sample(t), cause: { agency: "user" } }).cause).toEqual({ agency: "user" });
    });
    it("refuses malformed ids and agencies", () => {
      expectValidationError(() => validateEvent({ ...sample(t), cause: { commandId: "nope" } }), { eventType: t, field: "cause.commandId", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), cause: { stepId: NIL_UUID } }), { eventType: t, field: "cause.stepId", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), cause: { agency: "robot" } }), { eventType: t, field: "cause.agency", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), cause: "user" }), { eventType: t, field: "cause", rule: "is invalid" });
    });
  });

  describe("StepDone", () => {
    const t = "StepDone";
    const result = (id: string) => ({ role: "tool", toolExecutionId: id, content: "ok" });
    it("binds each tool result to a distinct toolExecutionId", () => {
      expect(validateEvent({ ...sample(t), messages: [result(ID.tool), result(ID.tool2)] }).messages).toHaveLength(2);
      expectValidationError(() => validateEvent({ ...sample(t), messages: [result(ID.tool), result(ID.tool2), result(ID.tool)] }), {
        eventType: t,
        field: "messages.2.toolExecutionId",
        rule: "is invalid",
      });
    });
    it("requires the toolExecutionId of a tool result", () => {
      expectValidationError(() => validateEvent({ ...sample(t), messages: [{ role: "tool", content: "ok" }] }), {
        eventType: t,
        field: "messages.0.toolExecutionId",
        rule: "must be set",
      });
      expectValidationError(() => validateEvent({ ...sample(t), messages: [result(NIL_UUID)] }), { eventType: t, field: "messages.0.toolExecutionId", rule: "is invalid" });
    });
    it("requires at least one message with a known role", () => {
      expectValidationError(() => validateEvent({ ...sample(t), messages: [] }), { eventType: t, field: "messages", rule: "is invalid" });
      expectValidationError(() => validateEvent(without(sample(t), "messages")), { eventType: t, field: "messages", rule: "must be set" });
      expectValidationError(() => validateEvent({ ...sample(t), messages: [{ role: "system", content: "x" }] }), { eventType: t, field: "messages.0.role", rule: "is invalid" });
    });
    it("checks tool calls of the assistant message", () => {
      expectValidationError(() => validateEvent({ ...sample(t), messages: [{ role: "assistant", toolCalls: [{ toolName: "bash" }] }] }), {
        eventType: t,
        field: "messages.0.toolCalls.0.toolExecutionId",
        rule: "must be set",
      });
      expectValidationError(() => validateEvent({ ...sample(t), messages: [{ role: "assistant", toolCalls: [] }] }), { eventType: t, field: "messages.0.toolCalls", rule: "is invalid" });
    });
  });

  describe("turn events", () => {
    it("TurnFailed needs err with a kind", () => {
      const t = "TurnFailed";
      expectValidationError(() => validateEvent(without(sample(t), "err")), { eventType: t, field: "err", rule: "must be set" });
      expectValidationError(() => validateEvent({ ...sample(t), err: { message: "boom" } }), { eventType: t, field: "err.kind", rule: "must be set" });
      expectValidationError(() => validateEvent({ ...sample(t), err: { kind: "" } }), { eventType: t, field: "err.kind", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), err: "boom" }), { eventType: t, field: "err", rule: "is invalid" });
      expect(validateEvent({ ...sample(t), err: { kind: "timeout" } }).err).toEqual({ kind: "timeout" });
    });
    it.each(["TurnStarted", "TurnDone", "TurnFailed", "TurnInterrupted"] as const)("%s.turnIndex is a non-negative integer, default 0", (t) => {
      expect(validateEvent(without(sample(t), "turnIndex")).turnIndex).toBe(0);
      for (const bad of [-1, 1.5, "1", Number.MAX_SAFE_INTEGER + 1, Infinity, NaN]) {
        expectValidationError(() => validateEvent({ ...sample(t), turnIndex: bad }), { eventType: t, field: "turnIndex", rule: "is invalid" });
      }
    });
  });

  it("PermissionRequested needs a valid request", () => {
    const t = "PermissionRequested";
    expectValidationError(() => validateEvent(without(sample(t), "request")), { eventType: t, field: "request", rule: "must be set" });
    expectValidationError(() => validateEvent({ ...sample(t), request: null }), { eventType: t, field: "request", rule: "is invalid" });
    expectValidationError(() => validateEvent({ ...sample(t), request: { toolName: "x", requirements: [] } }), { eventType: t, field: "request.requirements", rule: "is invalid" });
    expectValidationError(() => validateEvent({ ...sample(t), request: { toolName: "x", requirements: [{ kind: "k", match: "m", description: "d", grantClass: "g" }] } }), {
      eventType: t,
      field: "request.requirements.0.grantClass",
      rule: "is invalid",
    });
    expectValidationError(() => validateEvent({ ...sample(t), request: { toolName: "x", grantToken: "secret", requirements: [{ kind: "k", match: "m", description: "d" }] } }), {
      eventType: t,
      field: "request",
      rule: "is invalid",
    });
  });

  it("drops unknown body keys of a camelCase event (they are never encoded)", () => {
    const e = validateEvent({ ...sample("PermissionDecided"), grantToken: "secret", rawArguments: "{}" });
    expect(e).not.toHaveProperty("grantToken");
    expect(e).not.toHaveProperty("rawArguments");
  });
});

describe("the event type", () => {
  it("an unknown type is EVENT_TYPE_UNKNOWN", () => {
    const err = expectValidationError(() => validateEvent({ ...sample("SessionStarted"), type: "SessionExploded" }), {
      eventType: "SessionExploded",
      field: "type",
      rule: "is not a known event type",
    });
    expect(err.code).toBe("EVENT_TYPE_UNKNOWN");
    expect(err.message).toBe("SessionExploded: type is not a known event type");
    // Not the name of a prototype member either.
    for (const type of ["constructor", "__proto__", "toString", "permissionRequested"]) {
      expectValidationError(() => validateEvent({ ...sample("SessionStarted"), type }), { eventType: type, field: "type", rule: "is not a known event type" });
    }
  });
  it("a missing or malformed type is EVENT_INVALID", () => {
    expectValidationError(() => validateEvent(without(sample("SessionStarted"), "type")), { eventType: "", field: "type", rule: "must be set" });
    expectValidationError(() => validateEvent({ ...sample("SessionStarted"), type: "" }), { eventType: "", field: "type", rule: "must be set" });
    expectValidationError(() => validateEvent({ ...sample("SessionStarted"), type: 7 }), { eventType: "", field: "type", rule: "is invalid" });
  });
  it("a non-object is EVENT_INVALID", () => {
    for (const bad of [null, undefined, "SessionStarted", 1, [sample("SessionStarted")]]) {
      expectValidationError(() => validateEvent(bad), { eventType: "", field: "event", rule: "is invalid" });
    }
  });
});

describe("safeValidateEvent", () => {
  it("returns the event or the error as a value", () => {
    const ok = safeValidateEvent(sample("LoopIdle"));
    expect(ok.success).toBe(true);
    if (ok.success) expect(ok.data).toMatchObject({ type: "LoopIdle", visibility: "public" });
    const bad = safeValidateEvent({ ...sample("LoopIdle"), turnId: ID.turn });
    expect(bad.success).toBe(false);
    if (!bad.success) {
      expect(bad.error).toBeInstanceOf(EventValidationError);
      expect([bad.error.field, bad.error.rule]).toEqual(["turnId", "must be zero"]);
    }
  });
  it("does not mutate its input", () => {
    const input = { ...sample("LoopIdle"), turnId: NIL_UUID };
    const copy = structuredClone(input);
    validateEvent(input);
    expect(input).toEqual(copy);
  });
});
