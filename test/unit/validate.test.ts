import { describe, expect, it } from "vitest";
import {
  AGENCY_MACHINE,
  AGENCY_USER,
  defaultRegistry,
  EventValidationError,
  marshalEvent,
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
      TurnDone: "enduring loop true required required forbidden",
      TurnFailed: "enduring loop true required required forbidden",
      TurnInterrupted: "enduring loop true required required forbidden",
      LoopStarted: "enduring loop false required forbidden forbidden",
      LoopIdle: "enduring loop false required forbidden forbidden",
      SessionStarted: "enduring session false forbidden forbidden forbidden",
      SessionIdle: "enduring session false forbidden forbidden forbidden",
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

  // A type with no required (or forbidden) coordinate gets no case: an empty table
  // produces none, rather than a placeholder that passes without checking anything.
  if (required.length > 0) it.each(required)("requires %s: absent or nil → must be set", (c) => {
    expectValidationError(() => validateEvent(without(sample(type), c)), { ...at, field: c, rule: "must be set" });
    expectValidationError(() => validateEvent({ ...sample(type), [c]: NIL_UUID }), { ...at, field: c, rule: "must be set" });
  });

  if (forbidden.length > 0) it.each(forbidden)("forbids %s: present → must be zero, nil → counts as unset", (c) => {
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

  it("requires eventId; createdAt is optional (Go omits its zero time)", () => {
    expectValidationError(() => validateEvent(without(sample(type), "eventId")), { ...at, field: "eventId", rule: "must be set" });
    expectValidationError(() => validateEvent({ ...sample(type), eventId: "x" }), { ...at, field: "eventId", rule: "is invalid" });
    expect(validateEvent(without(sample(type), "createdAt"))).not.toHaveProperty("createdAt");
  });

  it("refuses a key that is not a field of the type, naming it", () => {
    const err = expectValidationError(() => validateEvent({ ...sample(type), grantToken: "secret" }), { ...at, field: "grantToken", rule: "is invalid" });
    expect(err.code).toBe("EVENT_INVALID");
    // Nor the wire's snake_case or envelope spelling of a field.
    expectValidationError(() => validateEvent({ ...sample(type), session_id: ID.session }), { ...at, field: "session_id", rule: "is invalid" });
    expectValidationError(() => validateEvent({ ...sample(type), v: 1 }), { ...at, field: "v", rule: "is invalid" });
  });

  it("refuses an invalid visibility", () => {
    // On the camelCase side visibility is the name; the wire's 0 and 1 are refused here.
    for (const bad of ["secret", "PUBLIC", 2, 1, 0, null, true]) {
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

  it.each(gates)("%s: any resolver but session needs the full quartet, as the runtime rules", (type) => {
    for (const resolver of ["loop", "user", "host", ""]) {
      const base = type === "GateOpened" ? { ...sample(type), gate: { ...(sample(type).gate as object), resolver } } : { ...sample(type), resolver };
      expect(validateEvent(base).type).toBe(type);
      expectValidationError(() => validateEvent(without(base, "loopId")), { eventType: type, field: "loopId", rule: "must be set" });
      expectValidationError(() => validateEvent(without(base, "turnId", "stepId")), { eventType: type, field: "turnId", rule: "must be set" });
      expectValidationError(() => validateEvent(without(base, "stepId")), { eventType: type, field: "stepId", rule: "must be set" });
    }
    // With no resolver at all (no gate, or a GateResolved without one), too.
    const bare = type === "GateOpened" ? without(sample(type), "gate") : without(sample(type), "resolver");
    expect(validateEvent(bare).type).toBe(type);
    expectValidationError(() => validateEvent(without(bare, "stepId")), { eventType: type, field: "stepId", rule: "must be set" });
  });

  it("GateOpened carries the Go gate, with free-text kinds and resolvers", () => {
    const opened = sample("GateOpened");
    const gate = validateEvent(opened).gate as Record<string, unknown>;
    expect(gate).toEqual(opened.gate);
    expect((validateEvent({ ...opened, gate: { ...(opened.gate as object), kind: "custom.kind", resolver: "user" } }).gate as { kind: string }).kind).toBe("custom.kind");
    expectValidationError(() => validateEvent({ ...opened, gate: { ...(opened.gate as object), id: NIL_UUID } }), { eventType: "GateOpened", field: "gate.id", rule: "is invalid" });
    expectValidationError(() => validateEvent({ ...opened, gate: { ...(opened.gate as object), id: "gate-1" } }), { eventType: "GateOpened", field: "gate.id", rule: "is invalid" });
    expectValidationError(() => validateEvent({ ...opened, gate: { ...(opened.gate as object), subject: { toolExecutionId: "nope" } } }), {
      eventType: "GateOpened",
      field: "gate.subject.toolExecutionId",
      rule: "is invalid",
    });
    // The prompt is an object now, not a string.
    expectValidationError(() => validateEvent({ ...opened, gate: { ...(opened.gate as object), prompt: "Run npm test?" } }), {
      eventType: "GateOpened",
      field: "gate.prompt",
      rule: "is invalid",
    });
    expectValidationError(() => validateEvent({ ...opened, gate: { ...(opened.gate as object), restorable: "yes" } }), {
      eventType: "GateOpened",
      field: "gate.restorable",
      rule: "is invalid",
    });
    expectValidationError(() => validateEvent({ ...opened, gate: "g" }), { eventType: "GateOpened", field: "gate", rule: "is invalid" });
  });

  it("GateResolved: any reason string, a typed audit read strictly", () => {
    const t = "GateResolved";
    for (const reason of ["answered", "policy_response", "abandoned", "owner_closed", "restore_unavailable", "timeout"]) {
      expect(validateEvent({ ...sample(t), reason }).reason).toBe(reason);
    }
    expectValidationError(() => validateEvent({ ...sample(t), gateId: NIL_UUID }), { eventType: t, field: "gateId", rule: "is invalid" });
    for (const audit of [
      { kind: "permission", data: { requirementDescriptions: ["a"], candidateDescriptions: ["b"] } },
      { kind: "ask_user", data: { answerPreview: "yes" } },
      { kind: "form", data: { values: { branch: "main" } } },
      { kind: "form", data: {} },
    ]) {
      expect(validateEvent({ ...sample(t), audit }).audit).toEqual(audit);
    }
    expectValidationError(() => validateEvent({ ...sample(t), audit: { kind: "open_url", data: {} } }), { eventType: t, field: "audit.kind", rule: "is invalid" });
    expectValidationError(() => validateEvent({ ...sample(t), audit: { kind: "ask_user", data: { answerPreview: "x", grantToken: "s" } } }), {
      eventType: t,
      field: "audit.data",
      rule: "is invalid",
    });
    expectValidationError(() => validateEvent({ ...sample(t), audit: { kind: "ask_user" } }), { eventType: t, field: "audit.data", rule: "must be set" });
    expectValidationError(() => validateEvent({ ...sample(t), audit: { kind: "form", data: { values: { n: 1 } } } }), { eventType: t, field: "audit.data.values.n", rule: "is invalid" });
    expect(validateEvent({ ...sample(t), source: { kind: "user", reason: "clicked" } }).source).toEqual({ kind: "user", reason: "clicked" });
  });
});

describe("body rules", () => {
  it("PermissionDecided: effect is approve or deny when present, and may be absent", () => {
    for (const effect of ["approve", "deny"]) expect(validateEvent({ ...sample("PermissionDecided"), effect }).effect).toBe(effect);
    for (const bad of ["ask", "Approve", "allow", "", 0]) {
      expectValidationError(() => validateEvent({ ...sample("PermissionDecided"), effect: bad }), { eventType: "PermissionDecided", field: "effect", rule: "is invalid" });
    }
    expect(validateEvent(without(sample("PermissionDecided"), "effect"))).not.toHaveProperty("effect");
  });

  describe("UserInputRequested.choices", () => {
    const t = "UserInputRequested";
    it("are any strings, as the runtime writes them: empty, repeated, long", () => {
      expect(validateEvent(without(sample(t), "choices"))).not.toHaveProperty("choices");
      expect(validateEvent({ ...sample(t), choices: [] }).choices).toEqual([]);
      expect(validateEvent({ ...sample(t), choices: ["a", "b", "a", ""] }).choices).toEqual(["a", "b", "a", ""]);
      expect(validateEvent({ ...sample(t), choices: ["x".repeat(10_000)] }).choices).toEqual(["x".repeat(10_000)]);
      expect(validateEvent({ ...sample(t), choices: Array.from({ length: 100 }, (_, i) => `c${i}`) }).choices).toHaveLength(100);
    });
    it("but strings", () => {
      expectValidationError(() => validateEvent({ ...sample(t), choices: [1] }), { eventType: t, field: "choices.0", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), choices: "a" }), { eventType: t, field: "choices", rule: "is invalid" });
    });
  });

  describe("text is free text", () => {
    const t = "PermissionDecided";
    it.each([
      ["NUL", "a\u0000b"],
      ["BEL", "a\u0007b"],
      ["ANSI escapes", "\u001b[31mred\u001b[0m"],
      ["vertical tab and form feed", "a\u000bb\u000cc"],
      ["DEL", "a\u007fb"],
      ["tabs and newlines", "line1\n\tline2\r\n"],
      ["a decomposed accent (not NFC)", "e\u0301"],
      ["surrounding white space", "  padded  "],
      ["non-ASCII and emoji", "naïve — ✓ 😀"],
    ])("accepts %s", (_, value) => {
      expect(validateEvent({ ...sample(t), reason: value }).reason).toBe(value);
      expect(validateEvent({ ...sample(t), agentName: value }).agentName).toBe(value);
    });
    it("has no cap of its own below the event's byte cap", () => {
      const long = "x".repeat(100_000);
      expect(validateEvent({ ...sample(t), reason: long }).reason).toBe(long);
      expect(validateEvent({ ...sample("SessionStarted"), agentName: long }).agentName).toBe(long);
    });
    it("treats \"\" as absent: valid, and not written", () => {
      expect(validateEvent({ ...sample(t), reason: "" }).reason).toBe("");
      const wire = new TextDecoder().decode(marshalEvent({ ...sample(t), reason: "" }));
      expect(wire).not.toContain('"reason"');
    });
    it("refuses a non-string", () => {
      expectValidationError(() => validateEvent({ ...sample(t), reason: 7 }), { eventType: t, field: "reason", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), agentName: ["a"] }), { eventType: t, field: "agentName", rule: "is invalid" });
    });
  });

  describe("createdAt is RFC 3339 as Go reads it, any offset", () => {
    const t = "SessionStarted";
    it.each([
      "2025-06-01T12:34:56Z",
      "2025-06-01T12:34:56.1Z",
      "2025-06-01T12:34:56.123Z",
      "2025-06-01T12:34:56.123456789Z",
      "2024-02-29T23:59:59.999999999Z",
      "2000-02-29T00:00:00Z",
      "2025-06-01T12:34:56.123+02:00",
      "2025-06-01T12:34:56-07:30",
    ])("accepts %s, already in Go's form, unchanged", (createdAt) => {
      expect(validateEvent({ ...sample(t), createdAt }).createdAt).toBe(createdAt);
    });
    it.each([
      ["2025-06-01T12:34:56+00:00", "2025-06-01T12:34:56Z"],
      ["2025-06-01T12:34:56.120-07:30", "2025-06-01T12:34:56.12-07:30"],
      ["2025-06-01T12:34:56,5Z", "2025-06-01T12:34:56.5Z"],
      ["2025-06-01T12:34:56.000Z", "2025-06-01T12:34:56Z"],
      ["2025-06-01T12:34:56.1234567891Z", "2025-06-01T12:34:56.123456789Z"],
    ])("accepts %s, normalized to Go's form %s", (createdAt, normalized) => {
      expect(validateEvent({ ...sample(t), createdAt }).createdAt).toBe(normalized);
    });
    it.each([
      "2025-06-01 12:34:56Z",
      "2025-06-01T12:34:56",
      "2025-06-01T12:34:56z",
      "2025-06-01t12:34:56Z",
      "2025-06-01T12:34:56.Z",
      "2025-06-01T12:34:56+0200",
      "2025-06-01T12:34:56+24:00",
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
    it.each([
      ["2025-06-01T12:34:56.120000Z", "2025-06-01T12:34:56.12Z"],
      ["2025-06-01T12:34:56.000Z", "2025-06-01T12:34:56Z"],
      ["2025-06-01T12:34:56+00:00", "2025-06-01T12:34:56Z"],
      ["2025-06-01T12:34:56.5-00:00", "2025-06-01T12:34:56.5Z"],
      ["2025-06-01T12:34:56.100+02:00", "2025-06-01T12:34:56.1+02:00"],
    ])("%s is written in Go's form, %s", (createdAt, written) => {
      const wire = new TextDecoder().decode(marshalEvent({ ...sample(t), createdAt }));
      expect((JSON.parse(wire) as { created_at: string }).created_at).toBe(written);
    });
    it("Go's zero time is not written", () => {
      const wire = new TextDecoder().decode(marshalEvent({ ...sample(t), createdAt: "0001-01-01T00:00:00Z" }));
      expect(wire).not.toContain("created_at");
    });
  });

  describe("cause", () => {
    const t = "PermissionDecided";
    it("keeps a cause with ids and a numeric agency", () => {
      const e = validateEvent({ ...sample(t), cause: { commandId: ID.command, agency: AGENCY_USER } });
      expect(e.cause).toEqual({ commandId: ID.command, agency: 1 });
      expect(validateEvent({ ...sample(t), cause: { agency: AGENCY_MACHINE } }).cause).toEqual({ agency: 0 });
      // Other uint8 values are kept, as the runtime keeps them.
      expect(validateEvent({ ...sample(t), cause: { agency: 255 } }).cause).toEqual({ agency: 255 });
    });
    it("writes nothing for an empty cause or the machine's agency alone", () => {
      for (const cause of [{}, { agency: AGENCY_MACHINE }]) {
        expect(new TextDecoder().decode(marshalEvent({ ...sample(t), cause }))).not.toContain('"cause"');
      }
      expect(new TextDecoder().decode(marshalEvent({ ...sample(t), cause: { agency: AGENCY_USER } }))).toContain('"cause":{"agency":1}');
    });
    it("refuses malformed ids and agencies", () => {
      expectValidationError(() => validateEvent({ ...sample(t), cause: { commandId: "nope" } }), { eventType: t, field: "cause.commandId", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), cause: { stepId: NIL_UUID } }), { eventType: t, field: "cause.stepId", rule: "is invalid" });
      for (const agency of ["user", "machine", -1, 256, 1.5]) {
        expectValidationError(() => validateEvent({ ...sample(t), cause: { agency } }), { eventType: t, field: "cause.agency", rule: "is invalid" });
      }
      expectValidationError(() => validateEvent({ ...sample(t), cause: "user" }), { eventType: t, field: "cause", rule: "is invalid" });
    });
  });

  describe("StepDone", () => {
    const t = "StepDone";
    const assistant = { role: "assistant", blocks: [{ type: "text", text: "done" }] };
    const result = (toolUseId: string) => ({ role: "tool", toolUseId, blocks: [{ type: "text", text: "ok" }] });
    it("is one assistant message, then tool results", () => {
      expect(validateEvent({ ...sample(t), messages: [assistant, result("toolu_01"), result("toolu_02")] }).messages).toHaveLength(3);
      expect(validateEvent({ ...sample(t), messages: [{ role: "assistant" }] }).messages).toEqual([{ role: "assistant" }]);
      expectValidationError(() => validateEvent({ ...sample(t), messages: [result("toolu_01")] }), { eventType: t, field: "messages.0.role", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), messages: [assistant, assistant] }), { eventType: t, field: "messages.1.role", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), messages: [assistant, { role: "user" }] }), { eventType: t, field: "messages.1.role", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), messages: [{ role: "system" }] }), { eventType: t, field: "messages.0.role", rule: "is invalid" });
    });
    it("requires at least one message with a known role", () => {
      expectValidationError(() => validateEvent({ ...sample(t), messages: [] }), { eventType: t, field: "messages", rule: "is invalid" });
      expectValidationError(() => validateEvent(without(sample(t), "messages")), { eventType: t, field: "messages", rule: "must be set" });
      expectValidationError(() => validateEvent({ ...sample(t), messages: [{ role: "robot" }] }), { eventType: t, field: "messages.0.role", rule: "is invalid" });
    });
    it("checks the content blocks and the usage", () => {
      expectValidationError(() => validateEvent({ ...sample(t), messages: [{ role: "assistant", blocks: [{ type: "video" }] }] }), {
        eventType: t,
        field: "messages.0.blocks.0.type",
        rule: "is invalid",
      });
      expectValidationError(() => validateEvent({ ...sample(t), messages: [{ role: "assistant", blocks: [{ type: "text", text: 7 }] }] }), {
        eventType: t,
        field: "messages.0.blocks.0.text",
        rule: "is invalid",
      });
      expectValidationError(() => validateEvent({ ...sample(t), messages: [{ role: "assistant", blocks: [{ type: "image", source: { data: "not base64!" } }] }] }), {
        eventType: t,
        field: "messages.0.blocks.0.source.data",
        rule: "is invalid",
      });
      // Recorded verbatim, as the pinned core records it: more reasoning than output is kept.
      const verbatim = validateEvent({ ...sample(t), messages: [{ role: "assistant", usage: { outputTokens: 1, reasoningTokens: 2 } }] }) as { messages: unknown[] };
      expect(verbatim.messages[0]).toEqual({ role: "assistant", usage: { outputTokens: 1, reasoningTokens: 2 } });
      expectValidationError(() => validateEvent({ ...sample(t), messages: [{ role: "assistant", usage: { inputTokens: -1 } }] }), {
        eventType: t,
        field: "messages.0.usage.inputTokens",
        rule: "is invalid",
      });
      const nested = { role: "tool", blocks: [{ type: "tool_result", toolUseId: "toolu_01", content: [{ type: "text", text: "ok" }], isError: true }] };
      expect(validateEvent({ ...sample(t), messages: [assistant, nested] }).messages).toEqual([assistant, nested]);
    });
  });

  describe("turn events", () => {
    it("TurnFailed: err defaults to kind unknown, and its fields are any text", () => {
      const t = "TurnFailed";
      expect(validateEvent(without(sample(t), "err")).err).toEqual({ kind: "unknown", message: "" });
      expect(validateEvent({ ...sample(t), err: { message: "boom" } }).err).toEqual({ kind: "", message: "boom" });
      expect(validateEvent({ ...sample(t), err: { kind: "timeout", message: "", modelFacing: true, modelFacingDetail: "retry" } }).err).toEqual({
        kind: "timeout",
        message: "",
        modelFacing: true,
        modelFacingDetail: "retry",
      });
      expectValidationError(() => validateEvent({ ...sample(t), err: "boom" }), { eventType: t, field: "err", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), err: { kind: 1 } }), { eventType: t, field: "err.kind", rule: "is invalid" });
    });
    it.each(["TurnStarted", "TurnDone", "TurnFailed", "TurnInterrupted"] as const)("%s.turnIndex is an optional safe integer", (t) => {
      expect(validateEvent(without(sample(t), "turnIndex"))).not.toHaveProperty("turnIndex");
      for (const ok of [0, 2, -1, Number.MAX_SAFE_INTEGER]) expect(validateEvent({ ...sample(t), turnIndex: ok }).turnIndex).toBe(ok);
      for (const bad of [1.5, "1", Number.MAX_SAFE_INTEGER + 1, Infinity, NaN]) {
        expectValidationError(() => validateEvent({ ...sample(t), turnIndex: bad }), { eventType: t, field: "turnIndex", rule: "is invalid" });
      }
    });
    it("TurnInterrupted and SessionStopped carry no reason", () => {
      expectValidationError(() => validateEvent({ ...sample("TurnInterrupted"), reason: "stop" }), { eventType: "TurnInterrupted", field: "reason", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample("SessionStopped"), reason: "stop" }), { eventType: "SessionStopped", field: "reason", rule: "is invalid" });
    });
    it("TurnStarted and TurnDone carry a message; TurnDone its usage", () => {
      const message = { role: "user", blocks: [{ type: "text", text: "fix the build" }] };
      expect(validateEvent({ ...sample("TurnStarted"), message }).message).toEqual(message);
      const usage = { inputTokens: 10, outputTokens: 20, cacheReadTokens: 0, cacheCreationTokens: 0, reasoningTokens: 5 };
      const done = validateEvent({ ...sample("TurnDone"), message: { role: "assistant", blocks: [] }, usage });
      expect(done.usage).toEqual(usage);
      expectValidationError(() => validateEvent({ ...sample("TurnDone"), usage: { inputTokens: 1.5 } }), { eventType: "TurnDone", field: "usage.inputTokens", rule: "is invalid" });
    });
  });

  describe("loops and sessions", () => {
    it("LoopStarted follows the runtime's rules for runtime and agent runtime", () => {
      const t = "LoopStarted";
      const runtime = { key: { provider: "anthropic", model: "claude" } };
      expect(validateEvent({ ...sample(t), runtime }).runtime).toEqual(runtime);
      expectValidationError(() => validateEvent({ ...sample(t), runtime: { key: { provider: "anthropic" } } }), { eventType: t, field: "runtime.key.model", rule: "must be set" });
      expectValidationError(() => validateEvent({ ...sample(t), runtime: { ...runtime, effort: "extreme" } }), { eventType: t, field: "runtime.effort", rule: "is invalid" });
      const managed = { harness: "claude-code", profile: "default", credentialMode: "native-auth", source: "native", selectionKind: "harness-managed" };
      expect(validateEvent({ ...sample(t), agentRuntime: managed }).agentRuntime).toEqual(managed);
      expectValidationError(() => validateEvent({ ...sample(t), agentRuntime: managed, runtime }), { eventType: t, field: "runtime", rule: "must be zero" });
      const gateway = { harness: "h", profile: "p", credentialMode: "gateway-backed", source: "gateway", selectionKind: "explicit", modelAlias: "sonnet" };
      expectValidationError(() => validateEvent({ ...sample(t), agentRuntime: gateway }), { eventType: t, field: "runtime", rule: "must be set" });
      expect(validateEvent({ ...sample(t), agentRuntime: gateway, runtime }).agentRuntime).toEqual(gateway);
      expectValidationError(() => validateEvent({ ...sample(t), agentRuntime: { ...gateway, credentialMode: "native-auth" }, runtime }), {
        eventType: t,
        field: "agentRuntime.credentialMode",
        rule: "is invalid",
      });
    });
    it("SessionStarted: the manifest's fields depend on its schema version", () => {
      const t = "SessionStarted";
      expect(validateEvent({ ...sample(t), manifest: { schemaVersion: 3, runtimeProfile: "p" } }).manifest).toEqual({ schemaVersion: 3, runtimeProfile: "p" });
      expectValidationError(() => validateEvent({ ...sample(t), manifest: { schemaVersion: 2, runtimeProfile: "p" } }), { eventType: t, field: "manifest.schemaVersion", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), manifest: { schemaVersion: 1, hookPolicyRev: "r" } }), { eventType: t, field: "manifest.schemaVersion", rule: "is invalid" });
      expectValidationError(() => validateEvent({ ...sample(t), manifest: { schemaVersion: 4 } }), { eventType: t, field: "manifest.schemaVersion", rule: "is invalid" });
    });
  });

  it("PermissionRequested: the request is checked by the runtime's validator", () => {
    const t = "PermissionRequested";
    // A pure tool asks with no requirements: absent, empty and `{ requirements: [] }` are all valid.
    expect(validateEvent(without(sample(t), "request")).request).toEqual({ requirements: [] });
    expect(validateEvent({ ...sample(t), request: { toolName: "x", requirements: [] } }).request).toEqual({ toolName: "x", requirements: [] });
    expectValidationError(() => validateEvent({ ...sample(t), request: null }), { eventType: t, field: "request", rule: "is invalid" });
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

  it("refuses unknown top-level keys of a camelCase event (they would never be encoded)", () => {
    expectValidationError(() => validateEvent({ ...sample("PermissionDecided"), grantToken: "secret" }), { eventType: "PermissionDecided", field: "grantToken", rule: "is invalid" });
    expectValidationError(() => validateEvent({ ...sample("PermissionDecided"), rawArguments: "{}" }), { eventType: "PermissionDecided", field: "rawArguments", rule: "is invalid" });
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
