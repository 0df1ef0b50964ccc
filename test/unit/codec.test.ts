import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  AGENCY_MACHINE,
  AGENCY_USER,
  createEvent,
  DEFAULT_MAX_EVENT_BYTES,
  defaultRegistry,
  defineEventType,
  encodeEvent,
  EventDecodeError,
  EventEncodeError,
  EventNotPersistableError,
  EventValidationError,
  marshalEvent,
  NIL_UUID,
  RawJson,
  RegistryError,
  safeUnmarshalEvent,
  unmarshalEvent,
  unmarshalPreview,
  uuidSchema,
  validateEvent,
  WIRE_VERSION,
  type DecodeFailure,
} from "../../src/index.js";
import { decodeEvent } from "../../src/codec/codec.js";
import { CREATED_AT, expectValidationError, ID, sample, thrownBy } from "./fixtures.js";

const utf8 = new TextEncoder();
const text = (b: Uint8Array) => new TextDecoder().decode(b);
const wireOf = (e: unknown) => JSON.parse(text(encodeEvent(e))) as Record<string, unknown>;

/** A valid wire envelope of a LoopStarted, as an object to edit. */
const loopStartedWire = (): Record<string, unknown> => ({
  type: "LoopStarted",
  v: 1,
  session_id: ID.session,
  loop_id: ID.loop,
  event_id: ID.event,
  created_at: CREATED_AT,
});

function expectDecodeError(input: Uint8Array | string, reason: DecodeFailure, options?: { maxBytes?: number }): EventDecodeError {
  const e = thrownBy(() => unmarshalEvent(input, options));
  expect(e).toBeInstanceOf(EventDecodeError);
  const err = e as EventDecodeError;
  expect([err.code, err.name, err.reason]).toEqual(["EVENT_DECODE", "EventDecodeError", reason]);
  return err;
}

describe("marshalEvent", () => {
  it("writes every top-level key in sorted order, type and v among them, as Go writes its envelope map", () => {
    const bytes = marshalEvent(sample("PermissionDecided"));
    expect(text(bytes)).toBe(
      `{"created_at":"${CREATED_AT}","effect":"approve","event_id":"${ID.event}","loop_id":"${ID.loop}","reason":"allowed by policy",` +
        `"session_id":"${ID.session}","step_id":"${ID.step}","tool_execution_id":"${ID.tool}","turn_id":"${ID.turn}","type":"PermissionDecided","v":${WIRE_VERSION}}`,
    );
  });

  it("escapes <, >, & and U+2028/U+2029 as Go does, and writes other text raw", () => {
    const reason = 'quote " backslash \\ <b>&amp;</b> \u2028\u2029 naïve 😀 \u0001 \n\t';
    const wire = text(marshalEvent({ ...sample("PermissionDecided"), reason }));
    expect(wire).toContain(
      '"reason":"quote \\" backslash \\\\ \\u003cb\\u003e\\u0026amp;\\u003c/b\\u003e \\u2028\\u2029 naïve 😀 \\u0001 \\n\\t"',
    );
    expect(wire).not.toMatch(/[<>&\u2028\u2029]/);
    expect(unmarshalEvent<{ reason: string }>(wire).reason).toBe(reason);
  });

  it("ignores the caller's key order", () => {
    const e = sample("PermissionDecided");
    const reversed = Object.fromEntries(Object.entries(e).reverse());
    expect(marshalEvent(reversed)).toEqual(marshalEvent(e));
  });

  it.each(["ToolCallStarted", "ToolCallCompleted"] as const)("refuses the ephemeral %s: EventNotPersistableError", (type) => {
    const e = thrownBy(() => marshalEvent(sample(type)));
    expect(e).toBeInstanceOf(EventNotPersistableError);
    expect(e).toMatchObject({ code: "EVENT_NOT_PERSISTABLE", name: "EventNotPersistableError", eventType: type });
    // encodeEvent is the live channel's encoder and takes it; the preview decoder reads it back,
    // the journal decoder refuses it.
    const bytes = encodeEvent(sample(type));
    expect(unmarshalPreview(bytes)).toEqual(validateEvent(sample(type)));
    expect(decodeEvent(bytes)).toEqual(validateEvent(sample(type)));
    expectValidationError(() => unmarshalEvent(bytes), { eventType: type, field: "type", rule: "is not a known event type" });
  });

  it("unmarshalPreview refuses an enduring event", () => {
    expectValidationError(() => unmarshalPreview(marshalEvent(sample("LoopIdle"))), { eventType: "LoopIdle", field: "type", rule: "is not a known event type" });
  });

  it("refuses an unknown type and an invalid event", () => {
    expectValidationError(() => marshalEvent({ ...sample("LoopIdle"), type: "LoopBusy" }), { eventType: "LoopBusy", field: "type", rule: "is not a known event type" });
    expectValidationError(() => marshalEvent({ ...sample("LoopIdle"), turnId: ID.turn }), { eventType: "LoopIdle", field: "turnId", rule: "must be zero" });
    expectValidationError(() => marshalEvent(null), { eventType: "", field: "event", rule: "is invalid" });
  });

  it("refuses an encoding over the byte cap: EventEncodeError too_large", () => {
    const e = sample("SessionStopped");
    const size = marshalEvent(e).length;
    expect(size).toBeGreaterThan(1);
    expect(marshalEvent(e, { maxBytes: size })).toHaveLength(size);
    const err = thrownBy(() => marshalEvent(e, { maxBytes: size - 1 }));
    expect(err).toBeInstanceOf(EventEncodeError);
    expect(err).toMatchObject({ code: "EVENT_ENCODE", reason: "too_large", eventType: "SessionStopped" });
  });

  it("the default cap is DEFAULT_MAX_EVENT_BYTES, counted in UTF-8 bytes", () => {
    // Text has no cap of its own; 400 000 3-byte characters are 1 200 000 bytes, past 1 MiB.
    const reason = "€".repeat(400_000);
    const big = { ...sample("PermissionDecided"), reason };
    expect(validateEvent<{ reason?: string }>(big).reason).toHaveLength(400_000);
    const under = { ...sample("PermissionDecided"), reason: "€".repeat(300_000) };
    expect(marshalEvent(under).length).toBeGreaterThan(900_000);
    const err = thrownBy(() => marshalEvent(big));
    expect(err).toMatchObject({ code: "EVENT_ENCODE", reason: "too_large" });
    expect((err as Error).message).toContain(String(DEFAULT_MAX_EVENT_BYTES));
  });

  it("refuses camelCase keys the type does not define, naming the key", () => {
    expectValidationError(() => marshalEvent({ ...sample("PermissionDecided"), grantToken: "secret" }), { eventType: "PermissionDecided", field: "grantToken", rule: "is invalid" });
    expectValidationError(() => encodeEvent({ ...sample("ToolCallStarted"), rawArguments: "{}" }), { eventType: "ToolCallStarted", field: "rawArguments", rule: "is invalid" });
  });
});

describe("zero values are omitted on encode", () => {
  it("ToolCallCompleted: is_error only when true, result_preview only when set", () => {
    const ok = wireOf({ ...sample("ToolCallCompleted"), resultPreview: undefined });
    expect(ok).not.toHaveProperty("is_error");
    expect(ok).not.toHaveProperty("result_preview");
    expect(wireOf({ ...sample("ToolCallCompleted"), isError: false })).not.toHaveProperty("is_error");
    expect(wireOf({ ...sample("ToolCallCompleted"), isError: true })).toMatchObject({ is_error: true, result_preview: "42 passed" });
  });

  it("turn_index only when not 0", () => {
    expect(wireOf({ ...sample("TurnStarted"), turnIndex: 0 })).not.toHaveProperty("turn_index");
    expect(wireOf({ ...sample("TurnStarted"), turnIndex: 1 })).toMatchObject({ turn_index: 1 });
  });

  it("visibility: public absent, internal 1", () => {
    expect(wireOf(sample("LoopIdle"))).not.toHaveProperty("visibility");
    expect(wireOf({ ...sample("LoopIdle"), visibility: "public" })).not.toHaveProperty("visibility");
    expect(wireOf({ ...sample("LoopIdle"), visibility: "internal" })).toMatchObject({ visibility: 1 });
  });

  it("cause: agency a number, the machine's 0 omitted, an empty cause omitted, fields in the runtime's order", () => {
    expect(wireOf({ ...sample("LoopIdle"), cause: { commandId: ID.command, agency: AGENCY_USER } }).cause).toEqual({ command_id: ID.command, agency: 1 });
    expect(wireOf({ ...sample("LoopIdle"), cause: { commandId: ID.command, agency: AGENCY_MACHINE } }).cause).toEqual({ command_id: ID.command });
    expect(wireOf({ ...sample("LoopIdle"), cause: { agency: 200 } }).cause).toEqual({ agency: 200 });
    expect(wireOf({ ...sample("LoopIdle"), cause: { agency: AGENCY_MACHINE } })).not.toHaveProperty("cause");
    expect(wireOf({ ...sample("LoopIdle"), cause: {} })).not.toHaveProperty("cause");
    const all = { agency: 1, stepId: ID.step, turnId: ID.turn, loopId: ID.loop, sessionId: ID.session, toolExecutionId: ID.tool, eventId: ID.event, commandId: ID.command };
    const cause = wireOf({ ...sample("LoopIdle"), cause: all }).cause as Record<string, unknown>;
    expect(Object.keys(cause)).toEqual(["session_id", "loop_id", "turn_id", "step_id", "command_id", "event_id", "tool_execution_id", "agency"]);
  });

  it("nil coordinates are absent; empty strings absent", () => {
    const wire = wireOf({ ...sample("SessionStopped"), loopId: NIL_UUID, agentName: "" });
    expect(Object.keys(wire)).toEqual(["created_at", "event_id", "session_id", "type", "v"]);
  });

  it("createdAt: absent or Go's zero time is not written; any other in Go's form", () => {
    expect(wireOf({ ...sample("SessionStopped"), createdAt: undefined })).not.toHaveProperty("created_at");
    expect(wireOf({ ...sample("SessionStopped"), createdAt: "0001-01-01T00:00:00Z" })).not.toHaveProperty("created_at");
    expect(wireOf({ ...sample("SessionStopped"), createdAt: "2026-11-29T11:15:30.500000+01:00" }).created_at).toBe("2026-11-29T11:15:30.5+01:00");
  });

  it("text that happens to read like the nil UUID is text, not a zero value", () => {
    const e = { ...sample("PermissionDecided"), reason: NIL_UUID, subject: NIL_UUID };
    expect(wireOf(e)).toMatchObject({ reason: NIL_UUID, subject: NIL_UUID });
    expect(unmarshalEvent(marshalEvent(e))).toEqual(validateEvent(e));
    const req = { ...sample("PermissionRequested"), request: { toolName: "t", executionId: NIL_UUID, requirements: [{ kind: "k", match: NIL_UUID, description: "d" }] } };
    const bytes = marshalEvent(req);
    expect((wireOf(req).request as Record<string, unknown>).execution_id).toBe(NIL_UUID);
    expect(unmarshalEvent<{ request: unknown }>(bytes).request).toEqual({ toolName: "t", executionId: NIL_UUID, requirements: [{ kind: "k", match: NIL_UUID, description: "d" }] });
    expect(text(marshalEvent(unmarshalEvent(bytes)))).toBe(text(bytes));
  });
});

describe("content blocks: what jetloop writes, it reads", () => {
  // Go writes a nil json.RawMessage without omitempty as `"Input":null`; the reader must
  // take the null it writes itself (as it does for a block's nil `Data`).
  it("a tool_use block without input round-trips", () => {
    const e = { ...sample("StepDone"), messages: [{ role: "assistant", blocks: [{ type: "tool_use", id: "toolu_01", name: "bash" }] }] };
    const bytes = marshalEvent(e);
    expect(text(bytes)).toContain('{"ID":"toolu_01","Input":null,"Name":"bash","type":"tool_use"}');
    expect(text(marshalEvent(unmarshalEvent(bytes)))).toBe(text(bytes));
  });

  // Raw JSON (tool input, provider state) and Go maps (form values) are written as given;
  // the reader refuses letter-case key pairs and inexact numbers at every level. Either the
  // writer refuses them too, or the reader takes what was written: never bytes jetloop
  // wrote and cannot read.
  it.each<[string, Record<string, unknown>]>([
    ["tool input with keys differing only in letter case", { ...sample("StepDone"), messages: [{ role: "assistant", blocks: [{ type: "tool_use", id: "t", name: "n", input: { path: "a", Path: "b" } }] }] }],
    ["tool input with an integer beyond 2^53", { ...sample("StepDone"), messages: [{ role: "assistant", blocks: [{ type: "tool_use", id: "t", name: "n", input: { n: 2 ** 60 } }] }] }],
    ["tool input with 1e21", { ...sample("StepDone"), messages: [{ role: "assistant", blocks: [{ type: "tool_use", id: "t", name: "n", input: { n: 1e21 } }] }] }],
    ["form values with keys differing only in letter case", { ...sample("GateResolved"), audit: { kind: "form", data: { values: { name: "a", Name: "b" } } } }],
  ])("%s: refused when written, or read back", (_, e) => {
    let bytes: Uint8Array;
    try {
      bytes = marshalEvent(e);
    } catch (err) {
      expect(err instanceof EventValidationError || err instanceof EventEncodeError, String(err)).toBe(true);
      return;
    }
    expect(text(marshalEvent(unmarshalEvent(bytes)))).toBe(text(bytes));
  });

  it("blocks with Go's always-written fields round-trip, nil Data as null", () => {
    const e = { ...sample("StepDone"), messages: [{ role: "assistant", blocks: [{ type: "image" }, { type: "audio" }, { type: "document" }, { type: "thinking" }] }] };
    const bytes = marshalEvent(e);
    expect(text(bytes)).toContain('{"MediaType":"","Source":{"URL":"","Data":null},"type":"image"}');
    expect(text(marshalEvent(unmarshalEvent(bytes)))).toBe(text(bytes));
  });
});

describe("unmarshalEvent: bytes and JSON", () => {
  const valid = JSON.stringify(loopStartedWire());

  it("decodes bytes and strings alike", () => {
    const expected = validateEvent({ ...sample("LoopStarted") });
    expect(unmarshalEvent(valid)).toEqual(expected);
    expect(unmarshalEvent(utf8.encode(valid))).toEqual(expected);
  });

  it("caps the input size (maxBytes), in bytes for strings too", () => {
    const bytes = utf8.encode(valid);
    expect(unmarshalEvent(bytes, { maxBytes: bytes.length })).toMatchObject({ type: "LoopStarted" });
    expectDecodeError(bytes, "too_large", { maxBytes: bytes.length - 1 });
    expectDecodeError(valid, "too_large", { maxBytes: valid.length - 1 });
    // A string of multi-byte characters is measured in UTF-8 bytes, not code units.
    const wide = JSON.stringify({ ...loopStartedWire(), type: "SessionStopped", loop_id: undefined, agent_name: "é".repeat(1000) });
    expect(wide.length).toBeLessThan(1400);
    expect(utf8.encode(wide).length).toBeGreaterThan(2000);
    expectDecodeError(wide, "too_large", { maxBytes: 1500 });
    expect(unmarshalEvent(wide, { maxBytes: 3000 })).toMatchObject({ type: "SessionStopped" });
    // The default cap.
    expectDecodeError(new Uint8Array(DEFAULT_MAX_EVENT_BYTES + 1), "too_large");
  });

  it.each([
    ["a stray continuation byte", [0x80]],
    ["an invalid byte", [0xff]],
    ["an overlong encoding of '/'", [0xc0, 0xaf]],
    ["an encoded surrogate", [0xed, 0xa0, 0x80]],
    ["a truncated sequence", [0xe2, 0x82]],
    ["a code point past U+10FFFF", [0xf4, 0x90, 0x80, 0x80]],
  ])("refuses invalid UTF-8: %s", (_, bad) => {
    const bytes = utf8.encode(JSON.stringify({ ...loopStartedWire(), agent_name: "XX" }));
    const at = bytes.indexOf(0x58); // the first X
    const broken = new Uint8Array([...bytes.slice(0, at), ...bad, ...bytes.slice(at + 1)]);
    expectDecodeError(broken, "not_utf8");
  });

  it("refuses a byte order mark (as Go does), in bytes and in strings", () => {
    expectDecodeError(new Uint8Array([0xef, 0xbb, 0xbf, ...utf8.encode(valid)]), "malformed_json");
    expectDecodeError(`\ufeff${valid}`, "malformed_json");
  });

  it.each([
    ["empty", ""],
    ["truncated", valid.slice(0, -1)],
    ["trailing data", `${valid} {}`],
    ["two events", `${valid}\n${valid}`],
    ["a trailing comma", `${valid.slice(0, -1)},}`],
    ["single quotes", valid.replaceAll('"', "'")],
    ["NaN", valid.replace('"v":1', '"v":NaN')],
    ["a raw control character in a string", valid.replace(ID.loop, `${ID.loop}\u0001`)],
    ["a bad escape", valid.replace(ID.loop, "\\x41")],
  ])("refuses malformed JSON: %s", (_, input) => {
    expectDecodeError(input, "malformed_json");
  });

  it.each([
    ["at the top level", `{"type":"LoopStarted",${valid.slice(1)}`],
    ["at the top level, last wins would change the loop", valid.replace("}", `,"loop_id":"${ID.turn}"}`)],
    ["equal after unescaping: \\u0074ype", `{"\\u0074ype":"SessionStarted",${valid.slice(1)}`],
    ["equal after unescaping: session\\u005fid", valid.replace("}", `,"session\\u005fid":"${ID.turn}"}`)],
    ["equal after unescaping: \\/", `{"a\\/b":1,"a/b":2,${valid.slice(1)}`],
    ["in the cause", valid.replace("}", `,"cause":{"command_id":"${ID.command}","command_id":"${ID.event}"}}`)],
    ["in an ignored unknown key", valid.replace("}", `,"future":{"a":1,"a":2}}`)],
    ["in an object inside an array", valid.replace("}", `,"future":[1,{"a":1,"b":{},"a":2}]}`)],
  ])("refuses duplicate keys %s", (_, input) => {
    expect(() => JSON.parse(input) as unknown).not.toThrow();
    expectDecodeError(input, "duplicate_key");
  });

  it("allows the same key in sibling objects and in strings", () => {
    const input = valid.replace("}", `,"future":[{"a":1},{"a":2}],"other":{"a":"a","b":"\\"a\\":1"}}`);
    expect(unmarshalEvent(input)).toMatchObject({ type: "LoopStarted" });
  });

  it("refuses nesting deeper than Go's 10,000 (the event object counts), even in ignored keys", () => {
    const nest = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
    expect(unmarshalEvent(valid.replace("}", `,"future":${nest(9_999)}}`))).toMatchObject({ type: "LoopStarted" });
    expectDecodeError(valid.replace("}", `,"future":${nest(10_000)}}`), "too_deep");
    expectDecodeError(valid.replace("}", `,"future":${nest(100_000)}}`), "too_deep");
  });

  it.each([["null"], ["[]"], [`[${valid}]`], ['"LoopStarted"'], ["42"], ["true"]])("refuses %s: not_an_object", (input) => {
    expectDecodeError(input, "not_an_object");
  });
});

describe("unmarshalEvent: the envelope", () => {
  const decodeWire = (w: Record<string, unknown>) => unmarshalEvent(JSON.stringify(w));

  it("requires a type", () => {
    const { type: _type, ...rest } = loopStartedWire();
    expectDecodeError(JSON.stringify(rest), "missing_type");
    expectValidationError(() => decodeWire({ ...loopStartedWire(), type: "" }), { eventType: "", field: "type", rule: "must be set" });
    expectDecodeError(JSON.stringify({ ...loopStartedWire(), type: null }), "null_value");
    expectValidationError(() => decodeWire({ ...loopStartedWire(), type: ["LoopStarted"] }), { eventType: "", field: "type", rule: "is invalid" });
  });

  it("refuses an unknown type: EVENT_TYPE_UNKNOWN", () => {
    expectValidationError(() => decodeWire({ ...loopStartedWire(), type: "LoopExploded" }), { eventType: "LoopExploded", field: "type", rule: "is not a known event type" });
    expectValidationError(() => decodeWire({ ...loopStartedWire(), type: "loop_started" }), { eventType: "loop_started", field: "type", rule: "is not a known event type" });
  });

  it("accepts v 1 or no v, refuses any other", () => {
    expect(decodeWire(loopStartedWire())).toMatchObject({ type: "LoopStarted" });
    const { v: _v, ...noV } = loopStartedWire();
    expect(decodeWire(noV)).toMatchObject({ type: "LoopStarted" });
    // The runtime wrote 0 before it versioned the envelope.
    expect(decodeWire({ ...loopStartedWire(), v: 0 })).toMatchObject({ type: "LoopStarted" });
    for (const v of [2, -1, 1.5, "1", true, [1], {}]) {
      expectValidationError(() => decodeWire({ ...loopStartedWire(), v }), { eventType: "LoopStarted", field: "v", rule: "is invalid" });
    }
    expectDecodeError(JSON.stringify({ ...loopStartedWire(), v: null }), "null_value");
    expectDecodeError(JSON.stringify(loopStartedWire()).replace('"v":1', '"v":1.0'), "inexact_number");
  });

  it("reads the keys in any order; writes them back sorted", () => {
    const shuffled = JSON.stringify(Object.fromEntries(Object.entries(loopStartedWire()).reverse()));
    const e = unmarshalEvent(shuffled);
    expect(text(marshalEvent(e))).toBe(JSON.stringify(Object.fromEntries(Object.entries(loopStartedWire()).sort(([a], [b]) => (a < b ? -1 : 1)))));
  });

  it("ignores envelope keys it does not know (reader leniency)", () => {
    const e = decodeWire({ ...loopStartedWire(), future_field: { any: ["thing"] }, header: { session_id: ID.turn }, grant_token: "secret" });
    expect(e).toEqual(validateEvent(sample("LoopStarted")));
    expect(JSON.stringify(e)).not.toContain("secret");
  });

  it("does not read camelCase keys: the wire is snake_case", () => {
    const { loop_id: _l, ...rest } = loopStartedWire();
    expectValidationError(() => decodeWire({ ...rest, loopId: ID.loop }), { eventType: "LoopStarted", field: "loopId", rule: "must be set" });
  });

  it("refuses letter-case variants of keys (Go would read them as the field): letter_case_key", () => {
    const { loop_id: _l, ...rest } = loopStartedWire();
    expectDecodeError(JSON.stringify({ ...rest, Loop_Id: ID.loop }), "letter_case_key");
    expectDecodeError(JSON.stringify({ ...loopStartedWire(), LOOP_ID: ID.turn }), "letter_case_key");
    const { type: _t, ...noType } = loopStartedWire();
    expectDecodeError(JSON.stringify({ ...noType, Type: "LoopStarted" }), "letter_case_key");
    expectDecodeError(JSON.stringify({ ...loopStartedWire(), cause: { Command_ID: ID.command } }), "letter_case_key");
  });

  it("refuses upper-case UUIDs (ids are subject tokens: one spelling each)", () => {
    expectValidationError(() => decodeWire({ ...loopStartedWire(), event_id: ID.event.toUpperCase() }), { eventType: "LoopStarted", field: "eventId", rule: "is invalid" });
    expectValidationError(() => decodeWire({ ...loopStartedWire(), loop_id: ID.loop.toUpperCase() }), { eventType: "LoopStarted", field: "loopId", rule: "is invalid" });
  });

  it("refuses unknown keys inside the request", () => {
    const wire = wireOf(sample("PermissionRequested"));
    const request = wire.request as Record<string, unknown> & { requirements: Record<string, unknown>[] };
    expectValidationError(() => decodeWire({ ...wire, request: { ...request, grant_token: "secret" } }), {
      eventType: "PermissionRequested",
      field: "request.grant_token",
      rule: "is invalid",
    });
    const reqs = structuredClone(request.requirements);
    reqs[0]!.raw_arguments = "{}";
    expectValidationError(() => decodeWire({ ...wire, request: { ...request, requirements: reqs } }), {
      eventType: "PermissionRequested",
      field: "request.requirements.0.raw_arguments",
      rule: "is invalid",
    });
    expectDecodeError(JSON.stringify({ ...wire, request: null }), "null_value");
    expectValidationError(() => decodeWire({ ...wire, request: JSON.stringify(request) }), { eventType: "PermissionRequested", field: "request", rule: "is invalid" });
    // No request is the empty one, written back as `{}`.
    const { request: _r, ...noRequest } = wire;
    const decoded = decodeWire(noRequest) as { request: unknown };
    expect(decoded.request).toEqual({ requirements: [] }); // a subscriber always reads a list
    expect(wireOf(decoded).request).toEqual({});
  });

  it("refuses a request that breaks an invariant", () => {
    const wire = wireOf(sample("PermissionRequested"));
    const request = structuredClone(wire.request) as { requirements: Record<string, unknown>[] };
    delete request.requirements[0]!.grant_target;
    expectValidationError(() => decodeWire({ ...wire, request }), { eventType: "PermissionRequested", field: "request.requirements.0.grantClass", rule: "is invalid" });
  });

  it("refuses a malformed body, naming the field", () => {
    const pd = wireOf(sample("PermissionDecided"));
    expectValidationError(() => decodeWire({ ...pd, effect: "ask" }), { eventType: "PermissionDecided", field: "effect", rule: "is invalid" });
    expect(decodeWire({ ...pd, effect: undefined })).not.toHaveProperty("effect");
    expectValidationError(() => decodeWire({ ...pd, reason: 42 }), { eventType: "PermissionDecided", field: "reason", rule: "is invalid" });
    expectValidationError(() => decodeWire({ ...pd, created_at: "yesterday" }), { eventType: "PermissionDecided", field: "createdAt", rule: "is invalid" });
    expectValidationError(() => decodeWire({ ...pd, visibility: 2 }), { eventType: "PermissionDecided", field: "visibility", rule: "is invalid" });
    expectValidationError(() => decodeWire({ ...pd, visibility: -1 }), { eventType: "PermissionDecided", field: "visibility", rule: "is invalid" });
    expectValidationError(() => decodeWire({ ...pd, cause: { agency: 256 } }), { eventType: "PermissionDecided", field: "cause.agency", rule: "is invalid" });
    expectValidationError(() => decodeWire({ ...pd, cause: { agency: "user" } }), { eventType: "PermissionDecided", field: "cause.agency", rule: "is invalid" });
    expectValidationError(() => decodeWire({ ...pd, step_id: ID.step.toUpperCase() }), { eventType: "PermissionDecided", field: "stepId", rule: "is invalid" });
    const tc = wireOf(sample("ToolCallCompleted"));
    expectValidationError(() => decodeWire({ ...tc, is_error: "true" }), { eventType: "ToolCallCompleted", field: "isError", rule: "is invalid" });
    const ts = wireOf(sample("TurnStarted"));
    expectValidationError(() => decodeWire({ ...ts, turn_index: 1.5 }), { eventType: "TurnStarted", field: "turnIndex", rule: "is invalid" });
    const { turn_index: _index, ...noIndex } = ts;
    // Numbers JavaScript cannot read exactly are refused before validation; one past
    // float64's range is refused as Go refuses it anywhere.
    for (const n of ["1e2", "2.0", "9007199254740993"]) {
      expectDecodeError(`${JSON.stringify(noIndex).slice(0, -1)},"turn_index":${n}}`, "inexact_number");
    }
    expectDecodeError(`${JSON.stringify(noIndex).slice(0, -1)},"turn_index":1e400}`, "number_out_of_range");
    expectValidationError(() => decodeWire({ ...ts, step_id: ID.step }), { eventType: "TurnStarted", field: "stepId", rule: "must be zero" });
  });

  it("reads numbers for visibility and agency", () => {
    const pd = wireOf(sample("PermissionDecided"));
    expect(decodeWire({ ...pd, visibility: 0 }).visibility).toBe("public");
    expect(decodeWire({ ...pd, visibility: 1 }).visibility).toBe("internal");
    expect(decodeWire({ ...pd, cause: { agency: 1 } }).cause).toEqual({ agency: AGENCY_USER });
    expect(decodeWire({ ...pd, cause: { agency: 9 } }).cause).toEqual({ agency: 9 });
    expect(decodeWire({ ...pd, cause: { agency: 0 } }).cause).toBeUndefined();
    expect(decodeWire({ ...pd, cause: {} }).cause).toBeUndefined();
  });

  it("treats nil UUIDs as absent", () => {
    // A required coordinate → must be set.
    expectValidationError(() => decodeWire({ ...loopStartedWire(), loop_id: NIL_UUID }), { eventType: "LoopStarted", field: "loopId", rule: "must be set" });
    expectValidationError(() => decodeWire({ ...loopStartedWire(), session_id: NIL_UUID }), { eventType: "LoopStarted", field: "sessionId", rule: "must be set" });
    expectValidationError(() => decodeWire({ ...loopStartedWire(), event_id: NIL_UUID }), { eventType: "LoopStarted", field: "eventId", rule: "must be set" });
    // A forbidden one → fine.
    expect(decodeWire({ ...loopStartedWire(), turn_id: NIL_UUID, step_id: NIL_UUID })).not.toHaveProperty("turnId");
    // The tool execution id → must be set.
    expectValidationError(() => decodeWire({ ...wireOf(sample("ToolCallStarted")), tool_execution_id: NIL_UUID }), {
      eventType: "ToolCallStarted",
      field: "toolExecutionId",
      rule: "must be set",
    });
    // In the cause.
    expect(decodeWire({ ...loopStartedWire(), cause: { command_id: NIL_UUID, event_id: ID.event } }).cause).toEqual({ eventId: ID.event });
    expect(decodeWire({ ...loopStartedWire(), cause: { command_id: NIL_UUID } }).cause).toBeUndefined();
  });

  it("refuses null in place of a value (Go writes none): null_value", () => {
    expectDecodeError(JSON.stringify({ ...loopStartedWire(), agent_name: null }), "null_value");
    expectDecodeError(JSON.stringify({ ...loopStartedWire(), cause: { command_id: null } }), "null_value");
    // An unknown key is ignored, whatever its value.
    expect(decodeWire({ ...loopStartedWire(), future: null })).toMatchObject({ type: "LoopStarted" });
  });
});

describe("safeUnmarshalEvent", () => {
  it("returns the event or the typed error as a value", () => {
    const ok = safeUnmarshalEvent(JSON.stringify(loopStartedWire()));
    expect(ok).toEqual({ success: true, data: validateEvent(sample("LoopStarted")) });
    const decodeFailure = safeUnmarshalEvent("{");
    expect(decodeFailure.success).toBe(false);
    if (!decodeFailure.success) expect(decodeFailure.error).toBeInstanceOf(EventDecodeError);
    const invalid = safeUnmarshalEvent(JSON.stringify({ ...loopStartedWire(), type: "Nope" }));
    expect(invalid.success).toBe(false);
    if (!invalid.success) {
      expect(invalid.error).toBeInstanceOf(EventValidationError);
      expect(invalid.error.code).toBe("EVENT_TYPE_UNKNOWN");
    }
    const big = safeUnmarshalEvent(new Uint8Array(100), { maxBytes: 10 });
    expect(big.success || big.error).toMatchObject({ reason: "too_large" });
  });
});

describe("an application's own event type", () => {
  const DeployFinished = defineEventType({
    type: "DeployFinished",
    family: "deploy",
    class: "enduring",
    scope: "loop",
    identity: { turnId: "forbidden", stepId: "forbidden" },
    body: {
      deployId: uuidSchema,
      targetEnv: z.enum(["staging", "production"]),
      replicas: z.number().int().min(0).default(0),
      healthy: z.boolean().default(false),
      notes: z.string().min(1).max(4096).optional(),
    },
    check: (e) => (e.targetEnv === "production" && e.replicas === 0 ? { field: "replicas", rule: "is invalid", detail: "production needs replicas" } : undefined),
  });
  const DeployProgress = defineEventType({ type: "DeployProgress", family: "deploy", class: "ephemeral", scope: "loop", body: { percent: z.number().min(0).max(100) } });
  const registry = defaultRegistry.with(DeployFinished).with(DeployProgress);
  const event = { type: "DeployFinished", sessionId: ID.session, loopId: ID.loop, eventId: ID.event, createdAt: CREATED_AT, deployId: ID.command, targetEnv: "staging" } as const;

  it("flows through validate, marshal and unmarshal", () => {
    const valid = validateEvent(event, registry);
    expect(valid).toMatchObject({ ...event, replicas: 0, healthy: false, visibility: "public" });
    const bytes = marshalEvent(valid, { registry });
    expect(text(bytes)).toBe(
      `{"created_at":"${CREATED_AT}","deploy_id":"${ID.command}","event_id":"${ID.event}","loop_id":"${ID.loop}","session_id":"${ID.session}","target_env":"staging","type":"DeployFinished","v":1}`,
    );
    expect(unmarshalEvent(bytes, { registry })).toEqual(valid);
    const full = { ...event, targetEnv: "production", replicas: 3, healthy: true, notes: "ok" } as const;
    expect(unmarshalEvent(marshalEvent(full, { registry }), { registry })).toEqual(validateEvent(full, registry));
  });

  it("is built with createEvent", () => {
    // A fixed time: a stamped one may carry trailing fraction zeros, which the wire drops (factories.test.ts).
    const e = createEvent(DeployFinished, { sessionId: ID.session, loopId: ID.loop, createdAt: CREATED_AT, deployId: ID.command, targetEnv: "production", replicas: 2 });
    expect(e.type).toBe("DeployFinished");
    expect(unmarshalEvent(marshalEvent(e, { registry }), { registry })).toEqual(e);
  });

  it("keeps its identity profile and its check", () => {
    expectValidationError(() => validateEvent({ ...event, turnId: ID.turn }, registry), { eventType: "DeployFinished", field: "turnId", rule: "must be zero" });
    expectValidationError(() => validateEvent({ ...event, loopId: undefined }, registry), { eventType: "DeployFinished", field: "loopId", rule: "must be set" });
    expectValidationError(() => validateEvent({ ...event, targetEnv: "production" }, registry), { eventType: "DeployFinished", field: "replicas", rule: "is invalid" });
    expectValidationError(() => unmarshalEvent(JSON.stringify({ ...JSON.parse(text(marshalEvent(event, { registry }))), target_env: "qa" }), { registry }), {
      eventType: "DeployFinished",
      field: "targetEnv",
      rule: "is invalid",
    });
  });

  it("is unknown to a registry that does not have it", () => {
    const bytes = marshalEvent(event, { registry });
    expectValidationError(() => unmarshalEvent(bytes), { eventType: "DeployFinished", field: "type", rule: "is not a known event type" });
    expectValidationError(() => validateEvent(event), { eventType: "DeployFinished", field: "type", rule: "is not a known event type" });
    expect(defaultRegistry.has("DeployFinished")).toBe(false); // `with` returns a new registry
  });

  it("an ephemeral custom type is not persistable but encodes for the live channel", () => {
    const progress = { type: "DeployProgress", sessionId: ID.session, loopId: ID.loop, eventId: ID.event, createdAt: CREATED_AT, percent: 50 };
    expect(thrownBy(() => marshalEvent(progress, { registry }))).toBeInstanceOf(EventNotPersistableError);
    expect(unmarshalPreview(encodeEvent(progress, { registry }), { registry })).toEqual(validateEvent(progress, registry));
    expect(() => unmarshalEvent(encodeEvent(progress, { registry }), { registry })).toThrow(/never in the journal/);
  });

  it("cannot replace a built-in type or be registered twice", () => {
    const fake = defineEventType({ type: "PermissionDecided", family: "tool", class: "enduring", scope: "loop", body: { effect: z.literal("approve") } });
    expect(() => defaultRegistry.with(fake)).toThrow(RegistryError);
    expect(() => defaultRegistry.with(fake)).toThrow(/built in and cannot be replaced/);
    expect(() => registry.with(DeployFinished)).toThrow(/already registered/);
  });

  it.each([
    ["sessionId"],
    ["eventId"],
    ["createdAt"],
    ["visibility"],
    ["cause"],
    ["type"],
    ["v"],
    // Wire names collide too: these would overwrite the header on the wire.
    ["session_id"],
    ["loop_id"],
    ["created_at"],
  ])("refuses the reserved body key %s", (key) => {
    const spec = { type: "Bad", family: "bad", class: "enduring", scope: "session", body: { [key]: z.string() } } as const;
    const e = thrownBy(() => defineEventType(spec));
    expect(e).toBeInstanceOf(RegistryError);
    expect(e).toMatchObject({ code: "REGISTRY" });
    expect((e as Error).message).toMatch(/reserved/);
  });

  it("refuses two body keys with one wire name", () => {
    expect(() => defineEventType({ type: "Bad", family: "bad", class: "enduring", scope: "session", body: { fooBar: z.string(), foo_bar: z.string() } })).toThrow(
      /wire name foo_bar/,
    );
  });

  it("refuses bad names and contradictory specs", () => {
    const base = { family: "x", class: "enduring", scope: "session", body: {} } as const;
    for (const type of ["", "lower", "Has.Dot", "Has Space", "Has>", "A".repeat(65)]) {
      expect(() => defineEventType({ ...base, type })).toThrow(RegistryError);
    }
    for (const family of ["", "Upper", "a.b", "a*", "x".repeat(33)]) {
      expect(() => defineEventType({ ...base, type: "Ok", family })).toThrow(RegistryError);
    }
    expect(() => defineEventType({ ...base, type: "Ok", class: "ephemeral", endsTurn: true, scope: "loop" })).toThrow(/terminal event must be enduring/);
    expect(() => defineEventType({ ...base, type: "Ok", identity: { loopId: "required" } })).toThrow(/fixed identity profile/);
  });
});

describe("raw JSON and the one limit of writer and reader", () => {
  const stepWith = (input: unknown) => ({
    ...sample("StepDone"),
    messages: [{ role: "assistant", blocks: [{ type: "tool_use", id: "toolu_01", name: "bash", input }] }],
  });
  const nest = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;

  it("takes a tool's input as a JavaScript value and writes it once, as JavaScript orders it", () => {
    const bytes = marshalEvent(stepWith({ command: "ls", 10: 1, html: "<a&b>" }));
    expect(text(bytes)).toContain('"Input":{"10":1,"command":"ls","html":"\\u003ca\\u0026b\\u003e"}');
    const back = unmarshalEvent<{ messages: { blocks: { input: RawJson }[] }[] }>(bytes);
    const input = back.messages[0]!.blocks[0]!.input;
    expect(input).toBeInstanceOf(RawJson);
    expect(input.value()).toEqual({ 10: 1, command: "ls", html: "<a&b>" });
    expect(JSON.stringify({ input })).toBe('{"input":{"10":1,"command":"ls","html":"<a&b>"}}');
  });

  it("keeps a RawJson's text: any number form, key order and escape", () => {
    const raw = RawJson.fromText('{ "z": 1.0, "a": [-0, 3e+0, 12345678901234567890], "p": "\\/work" }');
    expect(raw.text).toBe('{"z":1.0,"a":[-0,3e+0,12345678901234567890],"p":"\\/work"}');
    expect(text(marshalEvent(stepWith(raw)))).toContain(`"Input":${raw.text}`);
  });

  it("refuses a tool input that no reader would read: keys equal ignoring case, a value JSON cannot hold", () => {
    expect(() => marshalEvent(stepWith({ path: "a", Path: "b" }))).toThrow(EventValidationError);
    expect(() => marshalEvent(stepWith({ n: Number.NaN }))).toThrow(EventValidationError);
    expect(() => RawJson.fromText('{"a":1}x')).toThrow(/malformed JSON/);
  });

  it("publishes nothing nested deeper than the reader reads: Go's 10,000, the event object counting", () => {
    // root 1, messages 2, a message 3, its blocks 4, a block 5: the input's first bracket is 6.
    const fits = marshalEvent(stepWith(RawJson.fromText(nest(9_995))));
    expect(unmarshalEvent(fits)).toMatchObject({ type: "StepDone" });
    const e = thrownBy(() => marshalEvent(stepWith(RawJson.fromText(nest(9_996)))));
    expect(e).toBeInstanceOf(EventEncodeError);
    expect((e as EventEncodeError).reason).toBe("too_deep");
  });
});
