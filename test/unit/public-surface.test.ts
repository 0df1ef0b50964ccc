// The package's surface is a list of decisions: no `export *`, no internals.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as api from "../../src/index.js";

describe("the public surface (src/index.ts)", () => {
  it("lists each export by name", () => {
    const index = readFileSync(new URL("../../src/index.ts", import.meta.url), "utf8");
    expect(index).not.toMatch(/export \*/);
  });

  it("keeps internals inside: filter resolution, consumer templates, the many guards", () => {
    for (const name of ["resolveFilter", "MANY_FILTER_SUBJECTS", "declaredConsumerTemplates", "isEventValidationError", "isCommandError", "isPublishConflictError"]) {
      expect(Object.keys(api)).not.toContain(name);
    }
    expect(typeof api.isJetloopError).toBe("function");
  });
});
