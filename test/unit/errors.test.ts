import { describe, expect, it } from "vitest";
import { CommandError, isJetloopError, OptionsError, PublishConflictError, PublishTimeoutError } from "../../src/index.js";

describe("isJetloopError", () => {
  it("is the one guard: any JetloopError, or one with the given code", () => {
    const conflict = new PublishConflictError("s", 1, 2);
    expect(isJetloopError(conflict)).toBe(true);
    expect(isJetloopError(conflict, "PUBLISH_CONFLICT")).toBe(true);
    expect(isJetloopError(conflict, "PUBLISH_FAILED")).toBe(false);
    expect(isJetloopError(new CommandError("GATE_UNKNOWN", "no such gate"), "GATE_UNKNOWN")).toBe(true);
    expect(isJetloopError(new OptionsError("servers", "bad"), "OPTIONS_INVALID")).toBe(true);
    expect(isJetloopError(new Error("plain"))).toBe(false);
    expect(isJetloopError({ code: "PUBLISH_CONFLICT" }, "PUBLISH_CONFLICT")).toBe(false);
  });
});

describe("PublishTimeoutError", () => {
  it("states exactly when publishing again is safe: fenced at any delay, unfenced within the window or through resume", () => {
    const unfenced = new PublishTimeoutError("ns.journal.x", "e1", 3, 2000);
    expect(unfenced).toMatchObject({ code: "PUBLISH_TIMEOUT", fenced: false });
    expect(unfenced.message).toContain("may or may not be stored");
    expect(unfenced.message).toContain("only within the stream's duplicate window of its first attempt");
    expect(unfenced.message).toContain("publishAll with resume.since");
    expect(unfenced.message).not.toMatch(/again is safe/);
    const fenced = new PublishTimeoutError("ns.journal.x", "e1", 3, 2000, true);
    expect(fenced.message).toContain("with the same expectedLastSeq stores it at most once at any delay");
  });
});
