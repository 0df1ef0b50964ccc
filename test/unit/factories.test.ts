import { validate as isUuid, version as uuidVersion } from "uuid";
import { afterEach, describe, expect, it, vi } from "vitest";
import { capText, createEvent, limits, marshalEvent, ToolCallCompleted, ToolCallStarted, unmarshalEvent, validateEvent } from "../../src/index.js";
import { CREATED_AT, expectValidationError, ID, LOOP_COORDS, STEP_COORDS } from "./fixtures.js";

/** UTC to the millisecond (Go's form drops trailing fraction zeros, so 0 to 3 digits). */
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;

describe("createEvent stamps ids and times", () => {
  it("a v7 event id and the current time", () => {
    const before = Date.now();
    const e = createEvent("LoopStarted", LOOP_COORDS);
    const after = Date.now();
    expect(isUuid(e.eventId)).toBe(true);
    expect(uuidVersion(e.eventId)).toBe(7);
    expect(e.eventId).toBe(e.eventId.toLowerCase());
    expect(e.createdAt).toMatch(ISO);
    const t = Date.parse(e.createdAt!);
    expect(t).toBeGreaterThanOrEqual(before);
    expect(t).toBeLessThanOrEqual(after);
    // The v7 id carries the same millisecond timestamp in its first 48 bits.
    const idMs = parseInt(e.eventId.replace(/-/g, "").slice(0, 12), 16);
    expect(idMs).toBeGreaterThanOrEqual(before);
    expect(idMs).toBeLessThanOrEqual(after);
  });

  describe("the stamped time", () => {
    afterEach(() => void vi.useRealTimers());
    it.each(["2025-06-01T12:34:56.120Z", "2025-06-01T12:34:56.100Z", "2025-06-01T12:34:56.000Z", "2025-06-01T12:34:56.789Z"])(
      "at %s, the created event survives the journal unchanged",
      (now) => {
        vi.useFakeTimers({ toFake: ["Date"] });
        vi.setSystemTime(new Date(now));
        const e = createEvent("LoopStarted", LOOP_COORDS);
        expect(Date.parse(e.createdAt!)).toBe(Date.parse(now));
        expect(unmarshalEvent(marshalEvent(e))).toEqual(e);
      },
    );
  });

  it("ids are distinct and sort by creation", () => {
    const ids = Array.from({ length: 200 }, () => createEvent("LoopIdle", LOOP_COORDS).eventId);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  it("keeps a given event id and creation time", () => {
    const e = createEvent("LoopStarted", { ...LOOP_COORDS, eventId: ID.event, createdAt: CREATED_AT });
    expect([e.eventId, e.createdAt]).toEqual([ID.event, CREATED_AT]);
    const nanos = createEvent("LoopStarted", { ...LOOP_COORDS, createdAt: "2025-06-01T12:34:56.123456789Z" });
    expect(nanos.createdAt).toBe("2025-06-01T12:34:56.123456789Z");
  });

  it("stamps when the given event id or time is explicitly undefined", () => {
    const e = createEvent("LoopStarted", { ...LOOP_COORDS, eventId: undefined, createdAt: undefined });
    expect(uuidVersion(e.eventId)).toBe(7);
    expect(e.createdAt).toMatch(ISO);
  });

  it("validates what it builds, like validateEvent", () => {
    const e = createEvent("PermissionDecided", { ...STEP_COORDS, toolExecutionId: ID.tool, effect: "deny" });
    expect(validateEvent(e)).toEqual(e);
    expect(e.visibility).toBe("public");
    expectValidationError(() => createEvent("LoopStarted", { ...LOOP_COORDS, eventId: "not-a-uuid" }), { eventType: "LoopStarted", field: "eventId", rule: "is invalid" });
    expectValidationError(() => createEvent("LoopStarted", { ...LOOP_COORDS, turnId: ID.turn }), { eventType: "LoopStarted", field: "turnId", rule: "must be zero" });
    // @ts-expect-error: toolExecutionId is required
    expectValidationError(() => createEvent("ToolCallStarted", { ...STEP_COORDS, toolName: "bash" }), { eventType: "ToolCallStarted", field: "toolExecutionId", rule: "must be set" });
    // @ts-expect-error: "ask" is not an effect
    expectValidationError(() => createEvent("PermissionDecided", { ...STEP_COORDS, toolExecutionId: ID.tool, effect: "ask" }), { eventType: "PermissionDecided", field: "effect", rule: "is invalid" });
  });

  it("takes the type from its first argument, never from the fields", () => {
    const e = createEvent("LoopIdle", { ...LOOP_COORDS, type: "LoopStarted" } as never);
    expect(e.type).toBe("LoopIdle");
  });

  it("refuses an unknown type name", () => {
    expectValidationError(() => createEvent("ToolCallExploded" as never, LOOP_COORDS as never), {
      eventType: "ToolCallExploded",
      field: "type",
      rule: "is not a known event type",
    });
  });

  it("does not change its input", () => {
    const fields = { ...STEP_COORDS, toolExecutionId: ID.tool, summary: "x".repeat(limits.summary + 10) };
    const copy = structuredClone(fields);
    createEvent("ToolCallStarted", fields);
    expect(fields).toEqual(copy);
  });
});

describe("createEvent caps display text on a code-point boundary", () => {
  const started = (summary: string) => createEvent("ToolCallStarted", { ...STEP_COORDS, toolExecutionId: ID.tool, toolName: "bash", summary });
  const completed = (resultPreview: string) => createEvent("ToolCallCompleted", { ...STEP_COORDS, toolExecutionId: ID.tool, resultPreview });

  it.each([
    ["ToolCallStarted.summary", started, (e: { summary?: string }) => e.summary, limits.summary],
    ["ToolCallCompleted.resultPreview", completed, (e: { resultPreview?: string }) => e.resultPreview, limits.resultPreview],
  ] as const)("%s", (_, build, read, cap) => {
    // Under, at and over the cap.
    expect(read(build("short"))).toBe("short");
    expect(read(build("x".repeat(cap)))).toBe("x".repeat(cap));
    expect(read(build("x".repeat(cap + 1000)))).toBe("x".repeat(cap));
    // A surrogate pair straddling the cap is dropped whole, not split.
    const straddling = read(build("x".repeat(cap - 1) + "😀" + "tail"))!;
    expect(straddling).toBe("x".repeat(cap - 1));
    expect(straddling.length).toBe(cap - 1);
    // A pair ending exactly at the cap is kept.
    expect(read(build("x".repeat(cap - 2) + "😀" + "tail"))).toBe("x".repeat(cap - 2) + "😀");
    // All pairs: the cut lands between two of them.
    const pairs = read(build("😀".repeat(cap)))!;
    expect(pairs.length).toBe(cap % 2 === 0 ? cap : cap - 1);
    expect(pairs).toBe("😀".repeat(Math.floor(cap / 2)));
    // A combining sequence is cut by code point; the result is still valid text.
    expect(read(build("e\u0301".repeat(cap)))!.length).toBe(cap);
  });

  it("drops an empty summary or preview instead of failing", () => {
    const s = started("");
    expect(s).not.toHaveProperty("summary");
    const c = completed("");
    expect(c).not.toHaveProperty("resultPreview");
    expect(c.isError).toBe(false);
  });

  it("caps through a definition too", () => {
    const s = createEvent(ToolCallStarted, { ...STEP_COORDS, toolExecutionId: ID.tool, summary: "y".repeat(limits.summary * 2) });
    expect(s.summary).toHaveLength(limits.summary);
    const c = createEvent(ToolCallCompleted, { ...STEP_COORDS, toolExecutionId: ID.tool, isError: true, resultPreview: "z".repeat(limits.resultPreview + 1) });
    expect(c.resultPreview).toHaveLength(limits.resultPreview);
  });

  it("caps only display text: other text has no cap of its own", () => {
    const toolName = "t".repeat(10_000);
    expect(createEvent("ToolCallStarted", { ...STEP_COORDS, toolExecutionId: ID.tool, toolName }).toolName).toBe(toolName);
    const reason = "r".repeat(100_000);
    expect(createEvent("PermissionDecided", { ...STEP_COORDS, toolExecutionId: ID.tool, effect: "deny", reason }).reason).toBe(reason);
  });

  it("keeps free text below the cap as it is: control characters, lone surrogates", () => {
    expect(started("bell \u0007 \u001b[1m").summary).toBe("bell \u0007 \u001b[1m");
    expect(started("bad \ud800 surrogate").summary).toBe("bad \ud800 surrogate");
  });
});

describe("capText", () => {
  it("never splits a pair and never lengthens", () => {
    expect(capText("abc", 5)).toBe("abc");
    expect(capText("abc", 2)).toBe("ab");
    expect(capText("a😀", 2)).toBe("a");
    expect(capText("a😀", 3)).toBe("a😀");
    expect(capText("😀", 1)).toBe("");
    expect(capText("", 0)).toBe("");
  });
});
