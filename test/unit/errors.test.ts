import { describe, expect, it } from "vitest";
import { CommandError, isJetloopError, OptionsError, PublishConflictError } from "../../src/index.js";

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
