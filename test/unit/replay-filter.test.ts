// What a replay refuses before reading: a filter with an ephemeral part (previews are never
// stored), or without an enduring part. Pure: the registry alone decides.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defaultRegistry, defineEventType, OptionsError, type EventFilter } from "../../src/index.js";
import { checkReplayFilter } from "../../src/subscribe/replay.js";

const registry = defaultRegistry.with(defineEventType({ type: "DeployProgress", family: "deploy", class: "ephemeral", scope: "loop", body: { percent: z.number() } }));

function refusal(filter: EventFilter): OptionsError | undefined {
  try {
    checkReplayFilter(registry, filter);
  } catch (e) {
    if (e instanceof OptionsError) return e;
    throw e;
  }
  return undefined;
}

describe("checkReplayFilter", () => {
  it("refuses every ephemeral part, naming it and saying previews are never stored", () => {
    for (const [filter, option] of [
      [{ enduring: "all", ephemeral: "all" }, "ephemeral"],
      [{ ephemeral: { loops: [] } }, "ephemeral"],
      [{ enduring: "all", types: ["StepDone", "ToolCallCompleted"] }, "types"],
      [{ enduring: "all", families: ["deploy"] }, "families"],
    ] as [EventFilter, string][]) {
      const e = refusal(filter);
      expect(e?.option, JSON.stringify(filter)).toBe(option);
      expect(e?.message).toContain("previews are never stored in the journal");
    }
  });

  it("refuses a filter without an enduring part", () => {
    expect(refusal({ sessions: "all" })?.option).toBe("enduring");
  });

  it("passes enduring filters, a family mixing previews and journal events included, reading each list once", () => {
    expect(refusal({ enduring: "all", families: ["tool"] })).toBeUndefined();
    function* types() {
      yield "StepDone";
      yield "PermissionDecided";
    }
    const checked = checkReplayFilter(registry, { enduring: { loops: [] }, types: types() });
    expect(checked.types).toEqual(["StepDone", "PermissionDecided"]);
  });
});
