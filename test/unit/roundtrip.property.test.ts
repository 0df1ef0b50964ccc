import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  decodePermissionRequest,
  defaultRegistry,
  encodeEvent,
  encodePermissionRequest,
  marshalEvent,
  unmarshalEvent,
  unmarshalPreview,
  validateEvent,
  validatePermissionRequest,
} from "../../src/index.js";
import { decodeEvent } from "../../src/codec/codec.js";
import { builtInTypes, eventArb, permissionRequestArb } from "./arbitraries.js";

const utf8 = new TextDecoder();

/** Runs per type; the whole file stays around a few seconds. */
export const ROUNDTRIP_RUNS_PER_TYPE = 300;
/** Generous: a loaded CI machine runs these far slower than a quiet one. */
const TIMEOUT_MS = 60_000;

/**
 * `v` without the zero values the wire drops or writes for an absent field ("", 0, false,
 * empty objects; Go writes them as absent, or writes a field without omitempty as its
 * zero): the meaning a round trip must keep. Array elements are kept as they are.
 */
function withoutZeros(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutZeros);
  if (v === null || typeof v !== "object") return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    const y = withoutZeros(x);
    if (y === undefined || y === "" || y === 0 || y === false) continue;
    if (typeof y === "object" && y !== null && !Array.isArray(y) && Object.keys(y).length === 0) continue;
    out[k] = y;
  }
  return out;
}

/** Characters Go's encoding/json escapes in strings and jetloop must too. */
const GO_ESCAPED = /[<>&\u2028\u2029]/;

/** Written as the Go runtime writes an event: top-level keys sorted, Go's escaping. */
function expectGoForm(text: string): void {
  expect(GO_ESCAPED.test(text), `unescaped <, >, &, U+2028 or U+2029 in ${text.slice(0, 200)}`).toBe(false);
  const keys = Object.keys(JSON.parse(text) as object);
  expect(keys).toEqual([...keys].sort());
  expect(keys).toContain("type");
  expect(keys).toContain("v");
}

describe.each(builtInTypes)("round trip of %s", (type) => {
  const enduring = defaultRegistry.get(type)!.class === "enduring";
  const encode = enduring ? marshalEvent : encodeEvent;

  const decode = enduring ? unmarshalEvent : unmarshalPreview;

  it(`${enduring ? "unmarshalEvent(marshalEvent" : "unmarshalPreview(encodeEvent"}(e)) deep-equals validateEvent(e); encode∘decode is a fixed point of bytes`, () => {
    fc.assert(
      fc.property(eventArb(type), (e) => {
        const valid = validateEvent(e);
        const bytes = encode(e);
        const decoded = decode(bytes);
        expect(withoutZeros(decoded)).toEqual(withoutZeros(valid));
        expect(decodeEvent(bytes)).toEqual(decoded);
        // The encoding is canonical: decoding and encoding again gives the same bytes.
        // (Compared as text: toEqual on a Uint8Array walks it element by element.)
        const text = utf8.decode(bytes);
        expect(utf8.decode(encode(decoded))).toBe(text);
        expectGoForm(text);
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
          expect(() => unmarshalEvent(encodeEvent(e))).toThrow(/ephemeral/);
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
        // Absent requirements read as none: the output always has the list.
        expect(validatePermissionRequest(r)).toEqual({ ...r, requirements: r.requirements ?? [] });
        const wire = encodePermissionRequest(r);
        const decoded = decodePermissionRequest(wire);
        expect(withoutZeros(decoded)).toEqual(withoutZeros({ ...r, requirements: r.requirements ?? [] }));
        expect(encodePermissionRequest(decoded)).toBe(wire);
      }),
      { numRuns: ROUNDTRIP_RUNS_PER_TYPE },
    );
  }, TIMEOUT_MS);
});
