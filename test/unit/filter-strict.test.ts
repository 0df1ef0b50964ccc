// A filter is checked as strictly as options, nested scopes included: a key it does not
// know (a misspelt one, one put in the wrong place such as `sessions` inside a loop scope,
// an inherited one) is refused naming it, never ignored, since an ignored narrowing key
// silently widens what the subscription receives. Generated over the places × key names.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OptionsError } from "../../src/errors.js";
import { defaultRegistry } from "../../src/events/catalogue.js";
import { newId } from "../../src/events/ids.js";
import { resolveFilter } from "../../src/sources/filter.js";

const FILTER_KEYS = ["ephemeral", "enduring", "sessions", "types", "families", "includeInternal"];
const strayKey = (known: readonly string[]) =>
  fc.oneof(fc.constantFrom("sessions", "session", "loop", "loopId", "sessionId", "types", "Loops", "loops ", "toString", "__proto__"), fc.string({ minLength: 1, maxLength: 8 })).filter((k) => !known.includes(k));

describe("a filter refuses a key it does not know, at every level", () => {
  it("inside a loop scope (enduring, ephemeral)", () => {
    fc.assert(
      fc.property(fc.constantFrom("enduring", "ephemeral"), strayKey(["loops"]), fc.jsonValue(), fc.boolean(), (place, key, value, inherited) => {
        const scope = inherited ? Object.assign(Object.create({ [key]: value }) as object, { loops: [newId()] }) : { loops: [newId()], [key]: value };
        const filter = { [place]: scope };
        expect(() => resolveFilter("ns", filter, defaultRegistry)).toThrow(OptionsError);
        try {
          resolveFilter("ns", filter, defaultRegistry);
        } catch (e) {
          expect((e as OptionsError).message).toContain(JSON.stringify(key));
        }
      }),
      { numRuns: 300 },
    );
  });

  it("at the top, own or inherited", () => {
    fc.assert(
      fc.property(strayKey(FILTER_KEYS), fc.jsonValue(), fc.boolean(), (key, value, inherited) => {
        const filter = inherited ? Object.assign(Object.create({ [key]: value }) as object, { enduring: "all" as const }) : { enduring: "all" as const };
        if (!inherited) Object.defineProperty(filter, key, { value, enumerable: true, configurable: true, writable: true });
        expect(() => resolveFilter("ns", filter, defaultRegistry)).toThrow(OptionsError);
      }),
      { numRuns: 300 },
    );
  });
});
