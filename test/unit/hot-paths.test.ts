// The hot paths' shortcuts must not change an answer: validation parses with zod's
// compiled schemas (src/events/validate.ts), the strict JSON parser proves "no duplicate
// key" by counting before it scans (src/codec/strict-json.ts), and appends carry
// prebuilt headers (src/publish/journal-writer.ts).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { headers } from "@nats-io/transport-node";
import { parseStrictJson, StrictJsonError } from "../../src/codec/strict-json.js";
import { FixedHeaders } from "../../src/publish/journal-writer.js";
import { defaultRegistry, permissionRequestSchema, validateEvent } from "../../src/index.js";
import { anyEventArb } from "./arbitraries.js";
import { BUILT_IN_TYPES, sample } from "./fixtures.js";

describe("validation on compiled schemas", () => {
  it("compiles every built-in event schema and the permission request (no runtime fallback)", () => {
    for (const type of BUILT_IN_TYPES) expect(() => z.compile(defaultRegistry.get(type)!.schema, { strict: true }), type).not.toThrow();
    expect(() => z.compile(permissionRequestSchema, { strict: true })).not.toThrow();
  });

  it("returns what the schema itself returns", () => {
    const check = (e: Record<string, unknown>) => {
      const ref = defaultRegistry.get(e.type as string)!.schema.safeParse(e);
      expect(ref.success).toBe(true);
      expect(validateEvent(e)).toStrictEqual(ref.data);
    };
    for (const type of BUILT_IN_TYPES) check(sample(type));
    fc.assert(fc.property(anyEventArb, check), { numRuns: 200 });
  });
});

describe("FixedHeaders", () => {
  const encoded = (h: unknown) => new TextDecoder().decode((h as { encode(): Uint8Array }).encode());
  const entries: [string, string][] = [
    ["Nats-Msg-Id", "0190f2a1-5b3c-7d4e-8f60-000000000001"],
    ["Nats-Expected-Stream", "jetloop_journal"],
  ];

  it("encodes what MsgHdrsImpl encodes, and reads the same", () => {
    const reference = headers();
    for (const [k, v] of entries) reference.append(k, v);
    const fixed = new FixedHeaders(entries);
    expect(encoded(fixed)).toBe(encoded(reference));
    expect(encoded(fixed)).toBe(encoded(fixed)); // cached
    expect(fixed.get("Nats-Msg-Id")).toBe(entries[0]![1]);
    expect(fixed.keys()).toEqual(reference.keys());
  });

  it("re-encodes after a change through the MsgHdrs API", () => {
    const fixed = new FixedHeaders(entries);
    void encoded(fixed);
    fixed.set("Nats-Expected-Last-Subject-Sequence", "7");
    const reference = headers();
    for (const [k, v] of entries) reference.append(k, v);
    reference.set("Nats-Expected-Last-Subject-Sequence", "7");
    expect(encoded(fixed)).toBe(encoded(reference));
    fixed.delete("Nats-Msg-Id");
    expect(encoded(fixed)).not.toContain("Nats-Msg-Id");
  });
});

// parseStrictJson proves "no duplicate key" by counting (properties parsed vs keys in the
// text) and scans in full only when the counts differ; both must agree with the text.
describe("strict JSON: the counting shortcut", () => {
  const reason = (text: string) => {
    try {
      parseStrictJson(text);
      return "ok";
    } catch (e) {
      return e instanceof StrictJsonError ? e.reason : "other";
    }
  };
  const json = fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v));
  const key = fc.string({ maxLength: 6 });

  it("accepts what has no duplicate key, as JSON.parse reads it", () => {
    fc.assert(
      fc.property(json, key, key, (v, a, b) => {
        fc.pre(a !== b);
        // Keys and values with colons, escaped quotes and trailing backslashes around them.
        const tricky = String.raw`{"x:\\":"\\\":","\"":":"}`;
        const text = `[${v},{${JSON.stringify(a)}:${v},${JSON.stringify(b)}:${tricky}}]`;
        expect(parseStrictJson(text)).toEqual(JSON.parse(text));
      }),
      { numRuns: 500 },
    );
  });

  it("refuses a duplicate key anywhere, however it is spelled", () => {
    const escaped = (k: string) => JSON.stringify(k).replace(/[a-z]/, (c) => `\\u00${c.charCodeAt(0).toString(16)}`);
    fc.assert(
      fc.property(json, key, fc.boolean(), (v, k, escape) => {
        const second = escape ? escaped(k) : JSON.stringify(k);
        expect(reason(`{"a":[${v},{${JSON.stringify(k)}:${v},"b":":",${second}:1}]}`)).toBe("duplicate_key");
      }),
      { numRuns: 500 },
    );
  });

  it("refuses a duplicate key spaced from its colon, or hidden behind values that start with a colon", () => {
    const ws = fc.constantFrom(" ", "\t", "\n", "\r", " \r\n ");
    fc.assert(
      fc.property(json, key, ws, fc.nat(3), (v, k, space, colons) => {
        const name = JSON.stringify(k);
        const values = Array.from({ length: colons }, (_, i) => `"c${i}":":${i}"`).join(",");
        const text = `{${values}${values ? "," : ""}${name}:${v},${name}${space}:${v}}`;
        expect(reason(text)).toBe("duplicate_key");
        expect(reason(`{${values}${values ? "," : ""}${name}${space}:${v}}`)).toBe("ok");
      }),
      { numRuns: 500 },
    );
  });
});
