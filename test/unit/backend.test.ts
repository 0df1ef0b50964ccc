// The harness's backend setting (test/harness/backend.ts): checked eagerly, and
// "processes" never asks for a container engine.
import { describe, expect, it } from "vitest";
import { backendSetting, resolveBackend } from "../harness/backend.js";

describe("JETLOOP_NATS_BACKEND", () => {
  it("defaults to auto and takes the three settings, trimmed", () => {
    expect(backendSetting({})).toBe("auto");
    expect(backendSetting({ JETLOOP_NATS_BACKEND: "" })).toBe("auto");
    expect(backendSetting({ JETLOOP_NATS_BACKEND: " containers " })).toBe("containers");
    expect(backendSetting({ JETLOOP_NATS_BACKEND: "processes" })).toBe("processes");
  });

  it("refuses anything else, naming the allowed values", () => {
    expect(() => backendSetting({ JETLOOP_NATS_BACKEND: "docker" })).toThrow(/"auto", "containers" or "processes", not "docker"/);
  });

  it("processes: chosen without probing for an engine", async () => {
    await expect(resolveBackend("processes")).resolves.toEqual({ backend: "processes", reason: "JETLOOP_NATS_BACKEND=processes" });
  });
});
