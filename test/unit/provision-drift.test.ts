// Drift is what the declaration says differently, not what the server adds: a field the
// server fills in inside an object or a list of objects (a source's defaults, its own
// `_nats.*` metadata) is no drift; a declared value changed anywhere is.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { diffStreamConfig } from "../../src/streams/provision.js";

const leaf = fc.oneof(fc.string({ minLength: 1 }), fc.integer({ min: 1 }), fc.constant(true));
const declared = fc.dictionary(fc.stringMatching(/^[a-z_]{1,8}$/), fc.oneof(leaf, fc.dictionary(fc.stringMatching(/^[a-z]{1,6}$/), leaf, { minKeys: 1 }), fc.array(fc.dictionary(fc.stringMatching(/^[a-z]{1,6}$/), leaf, { minKeys: 1 }), { minLength: 1, maxLength: 3 })), { minKeys: 1 });

/** `value` with a server-added key in every object inside it. */
function withServerFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withServerFields);
  if (value && typeof value === "object") return { ...Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withServerFields(v)])), "_nats.added": "x" };
  return value;
}

describe("diffStreamConfig", () => {
  it("sees no drift in what the server adds inside declared objects and lists", () => {
    fc.assert(
      fc.property(declared, (d) => {
        expect(diffStreamConfig(withServerFields(d) as Record<string, unknown>, d)).toEqual([]);
      }),
    );
  });
  it("sees a changed declared value, at the top or nested, and marks immutable fields", () => {
    fc.assert(
      fc.property(declared, fc.nat(), (d, pick) => {
        const keys = Object.keys(d);
        const field = keys[pick % keys.length]!;
        const live = { ...d, [field]: "changed-by-hand" };
        const drift = diffStreamConfig(live, d, new Set([field]));
        expect(drift).toEqual([{ field, live: "changed-by-hand", desired: d[field], updatable: false }]);
      }),
    );
  });
});
