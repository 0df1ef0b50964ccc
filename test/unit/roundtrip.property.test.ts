import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  decodePermissionRequest,
  defaultRegistry,
  encodeEvent,
  encodePermissionRequest,
  marshalEvent,
  unmarshalEvent,
  validateEvent,
  validatePermissionRequest,
} from "../../src/index.js";
import { builtInTypes, eventArb, permissionRequestArb } from "./arbitraries.js";

const utf8 = new TextDecoder();

/** Runs per type; the whole file stays around a few seconds. */
export const ROUNDTRIP_RUNS_PER_TYPE = 300;
/** Generous: a loaded CI machine runs these far slower than a quiet one. */
const TIMEOUT_MS = 60_000;

describe.each(builtInTypes)("round trip of %s", (type) => {
  const enduring = defaultRegistry.get(type)!.class === "enduring";
  const encode = enduring ? marshalEvent : encodeEvent;

  it(`unmarshalEvent(${enduring ? "marshalEvent" : "encodeEvent"}(e)) deep-equals validateEvent(e)`, () => {
    fc.assert(
      fc.property(eventArb(type), (e) => {
        const valid = validateEvent(e);
        const bytes = encode(e);
        const decoded = unmarshalEvent(bytes);
        expect(decoded).toEqual(valid);
        // The encoding is canonical: decoding and encoding again gives the same bytes.
        // (Compared as text: toEqual on a Uint8Array walks it element by element.)
        expect(utf8.decode(encode(decoded))).toBe(utf8.decode(bytes));
        // And validation is idempotent.
        expect(validateEvent(valid)).toEqual(valid);
      }),
      { numRuns: ROUNDTRIP_RUNS_PER_TYPE },
    );
  }, TIMEOUT_MS);

  if (!enduring) {
    it("is refused by marshalEvent", () => {
      fc.assert(
        fc.property(eventArb(type), (e) => {
          expect(() => marshalEvent(e)).toThrow(/ephemeral/);
        }),
        { numRuns: 20 },
      );
    });
  }
});

describe("round trip of the permission request alone", () => {
  it("decodePermissionRequest(encodePermissionRequest(r)) deep-equals r", () => {
    fc.assert(
      fc.property(permissionRequestArb, (r) => {
        expect(validatePermissionRequest(r)).toEqual(r);
        expect(decodePermissionRequest(encodePermissionRequest(r))).toEqual(r);
      }),
      { numRuns: ROUNDTRIP_RUNS_PER_TYPE },
    );
  }, TIMEOUT_MS);
});
