// The hot paths' shortcuts must not change an answer: validation parses with zod's
// compiled schemas (src/events/validate.ts), the one-pass JSON reader takes its fast paths
// (src/wire/strict-json.ts), and appends carry prebuilt headers
// (src/publish/journal-writer.ts).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { headers } from "@nats-io/transport-node";
import { goLower } from "../../src/wire/go-fold.js";
import { GENERIC_GUIDE, type JsonGuide, parseStrictJson, scanJson, StrictJsonError, wellFormedText, wellFormedValue } from "../../src/wire/strict-json.js";
import { FixedHeaders } from "../../src/publish/journal-writer.js";
import { RawJson } from "../../src/wire/raw-json.js";
import { isNilUuid, NIL_UUID } from "../../src/events/ids.js";
import { guideFor, mergeGuides } from "../../src/wire/wire.js";
import { type GoWritten, readJsonl } from "../conformance/go-oracle.js";
import { defaultRegistry, validateEvent } from "../../src/index.js";
import { permissionRequestSchema } from "../../src/events/request.js";
import { anyEventArb } from "./arbitraries.js";
import { BUILT_IN_TYPES, sample } from "./fixtures.js";

describe("validation on compiled schemas", () => {
  /**
   * Content blocks are recursive (a tool_result block holds blocks), which zod's compiler
   * cannot model: the events that carry them validate on the runtime parser. Every other
   * built-in type must compile, so a new fallback shows up here.
   */
  const RECURSIVE = ["StepDone", "TurnStarted", "TurnDone"];

  it("compiles every built-in event schema without recursive content, and the permission request (no runtime fallback)", () => {
    const fallback: string[] = [];
    for (const type of BUILT_IN_TYPES) {
      try {
        z.compile(defaultRegistry.get(type)!.schema, { strict: true });
      } catch (e) {
        expect((e as Error).message, type).toMatch(/reference cycle/);
        fallback.push(type);
      }
    }
    expect(fallback.sort()).toEqual([...RECURSIVE].sort());
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

// parseStrictJson reads the text once; what it accepts it must read as JSON.parse does.
describe("strict JSON: the one-pass reader", () => {
  const reason = (text: string) => {
    try {
      parseStrictJson(text);
      return "ok";
    } catch (e) {
      return e instanceof StrictJsonError ? e.reason : "other";
    }
  };
  /**
   * No integer beyond 2^53 (inexact_number) and no two keys of an object differing only in
   * letter case (letter_case_key), both tested below: JSON.stringify writes every other
   * number exactly.
   */
  const readable = (v: unknown): boolean => {
    if (typeof v === "number") return !Number.isInteger(v) || Number.isSafeInteger(v);
    if (Array.isArray(v)) return v.every(readable);
    if (v === null || typeof v !== "object") return true;
    const lower = Object.keys(v).map(goLower);
    return new Set(lower).size === lower.length && Object.values(v).every(readable);
  };
  const json = fc
    .jsonValue({ maxDepth: 4 })
    .filter(readable)
    .map((v) => JSON.stringify(v));
  const key = fc.string({ maxLength: 6 });

  // The rule: keys of one object must differ under strings.ToLower (the runtime's check),
  // so "O" beside "o" is refused; the property draws only pairs the rule lets through.
  it("accepts what has no duplicate key (also ignoring letter case), as JSON.parse reads it", () => {
    fc.assert(
      fc.property(json, key, key, (v, a, b) => {
        fc.pre(goLower(a) !== goLower(b));
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
        // "B" beside "b" is a letter-case pair, refused as such (below).
        fc.pre(goLower(k) !== "b");
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
        // A key named like one of the values before it ("c0", or "C0": a letter-case pair) would be a duplicate of its own.
        fc.pre(!/^c[0-2]$/.test(k.toLowerCase()));
        const name = JSON.stringify(k);
        const values = Array.from({ length: colons }, (_, i) => `"c${i}":":${i}"`).join(",");
        const text = `{${values}${values ? "," : ""}${name}:${v},${name}${space}:${v}}`;
        expect(reason(text)).toBe("duplicate_key");
        expect(reason(`{${values}${values ? "," : ""}${name}${space}:${v}}`)).toBe("ok");
      }),
      { numRuns: 500 },
    );
  });

  it("refuses integers beyond 2^53 and numbers JavaScript writes differently, wherever they are", () => {
    const inexact = fc.oneof(
      fc.bigInt({ min: 2n ** 53n + 1n, max: 2n ** 80n }).map(String),
      fc.bigInt({ min: -(2n ** 80n), max: -(2n ** 53n) - 1n }).map(String),
      fc.integer({ min: -1000, max: 1000 }).map((n) => `${n}.0`),
      fc.integer({ min: 1, max: 9 }).map((n) => `${n}e2`),
      fc.constant("-0"),
    );
    fc.assert(
      fc.property(json, inexact, fc.boolean(), (v, n, nested) => {
        const text = nested ? `{"a":[${v},{"b":${n}}]}` : `[${v},${n}]`;
        expect(reason(text)).toBe("inexact_number");
        // The same number inside a string is text.
        expect(reason(nested ? `{"a":[${v},{"b":"${n}"}]}` : `[${v},"${n}"]`)).toBe("ok");
      }),
      { numRuns: 500 },
    );
  });

  it("refuses two keys of one object that differ only in letter case, as Go would read them as one field", () => {
    const lettered = fc.string({ unit: fc.constantFrom("a", "b", "k", "_", "1", "é"), minLength: 1, maxLength: 6 }).filter((k) => k.toUpperCase() !== k);
    fc.assert(
      fc.property(json, lettered, fc.boolean(), (v, k, nested) => {
        const pair = `{${JSON.stringify(k)}:${v},${JSON.stringify(k.toUpperCase())}:1}`;
        expect(reason(nested ? `{"x":[${v},${pair}]}` : pair)).toBe("letter_case_key");
        // In sibling objects they are fine.
        expect(reason(`[{${JSON.stringify(k)}:1},{${JSON.stringify(k.toUpperCase())}:1}]`)).toBe("ok");
      }),
      { numRuns: 300 },
    );
  });
});

describe("strict JSON: the reader's fast paths agree with its general paths", () => {
  const verdict = (read: () => unknown): unknown => {
    try {
      return { ok: read() };
    } catch (e) {
      if (e instanceof StrictJsonError) return e.reason;
      throw e;
    }
  };
  // Keys from letters whose case Go folds or lowers specially, spelled plainly or escaped.
  const keyUnit = fc.constantFrom("a", "b", "A", "B", "s", "S", "k", "K", "_", "1", "ſ", "\u212a", "İ", "ı", "é", "É");
  const keyText = fc
    .tuple(fc.string({ unit: keyUnit, maxLength: 3 }), fc.boolean())
    .map(([k, escape]) => (escape ? JSON.stringify(k).replace(/[a-zA-Z]/, (c) => `\\u00${c.charCodeAt(0).toString(16)}`) : JSON.stringify(k)));
  const object = fc.array(fc.tuple(keyText, fc.constantFrom("1", '"x"', "[]", "{}", "null")), { maxLength: 6 }).map((members) => `{${members.map(([k, v]) => `${k}:${v}`).join(",")}}`);
  // Every member read as a field of the schema: the guided object reader, without a key map while keys are their own lower case.
  const shape: JsonGuide = { kind: "shape", member: () => GENERIC_GUIDE };

  it("the guided object reader refuses and accepts the keys that the checker's key map does", () => {
    fc.assert(
      fc.property(object, (text) => {
        const general = verdict(() => scanJson(text, 0, { depthBase: 0, exactNumbers: true, compact: false }));
        const fast = verdict(() => parseStrictJson(text, shape));
        expect(typeof fast === "string" ? fast : "ok").toBe(typeof general === "string" ? general : "ok");
        if (typeof fast !== "string") expect((fast as { ok: unknown }).ok).toEqual(wellFormedValue(JSON.parse(text)));
      }),
      { numRuns: 2000 },
    );
  });

  // Strings from the characters the string scanner decides on: quotes, backslashes, control
  // characters, escapes, escaped surrogates (text decoded from UTF-8 has no raw lone one).
  const stringUnit = fc.constantFrom("a", "é", "\u{1f600}", '"', "\\", "\\\\", '\\"', "\\n", "\\u00e9", "\\ud800", "\\udc00", "\\x", "\\u12", "\n", "\u001f", " ", "/", "\\/");
  it("reads a string exactly when JSON.parse does, to the same text (lone surrogates as U+FFFD)", () => {
    fc.assert(
      fc.property(fc.array(stringUnit, { maxLength: 8 }), fc.boolean(), (units, closed) => {
        const text = `"${units.join("")}${closed ? '"' : ""}`;
        let expected: unknown;
        try {
          expected = wellFormedText(JSON.parse(text) as string);
        } catch {
          expected = "malformed_json";
        }
        const got = verdict(() => parseStrictJson(text));
        expect(typeof got === "string" ? got : (got as { ok: unknown }).ok).toEqual(expected);
        const asKey = verdict(() => parseStrictJson(`{${text}:1}`, shape));
        expect(typeof asKey === "string" ? asKey : "ok").toBe(expected === "malformed_json" ? "malformed_json" : "ok");
      }),
      { numRuns: 3000 },
    );
  });
});

describe("strict JSON: keys read from a shape's key table", () => {
  // The envelope's guide, as the codec builds it, and the same guide with every key table
  // removed at every depth: the second reads each key as a slice of the text.
  const envelope = mergeGuides([...defaultRegistry.types()].map((def) => guideFor(def.schema)));
  const stripped = new WeakMap<JsonGuide, JsonGuide>();
  const withoutTables = (g: JsonGuide): JsonGuide => {
    let s = stripped.get(g);
    if (s === undefined) {
      s = {
        kind: g.kind,
        keep: g.keep,
        deferRefusal: g.deferRefusal,
        member: g.member && ((k) => { const m = g.member!(k); return m && withoutTables(m); }),
        element: g.element && (() => withoutTables(g.element!())),
      };
      stripped.set(g, s);
    }
    return s;
  };
  const plain = withoutTables(envelope);
  const names = (g: JsonGuide): string[] => (g.keys ?? []).flatMap((bucket) => (bucket ?? []).map((k) => k.name));
  const known = names(envelope);
  const contentKeys = names(envelope.member!("messages")!.element!()).concat(names(envelope.member!("content") ?? envelope));
  // Near misses of the known keys: one letter's case changed, Go's folded spellings, an
  // escape, a letter dropped or added, a prefix of another key.
  const variant = (k: string, how: number, at: number): string => {
    const i = k.length === 0 ? 0 : at % k.length;
    const c = k[i] ?? "";
    switch (how) {
      case 0: return k;
      case 1: return k.slice(0, i) + (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) + k.slice(i + 1);
      case 2: return k.replace("s", "ſ").replace("k", "\u212a");
      case 3: return k.slice(0, i) + k.slice(i + 1);
      case 4: return `${k}_`;
      default: return k.slice(0, i);
    }
  };
  const keyArb = fc.tuple(fc.constantFrom(...known, ...contentKeys, "", "İd", "ıd"), fc.integer({ min: 0, max: 7 }), fc.nat(), fc.boolean()).map(([k, how, at, escape]) => {
    const text = JSON.stringify(variant(k, how, at));
    return escape ? text.replace(/[a-z]/, (c) => `\\u00${c.charCodeAt(0).toString(16)}`) : text;
  });
  const leaf = fc.constantFrom("1", "1.0", '"x"', '"2026-11-29T10:15:30Z"', '"2026-11-29T10:\\u00315:30Z"', "[]", "{}", "null", "true", '"0190f2a1-5b3c-7aaa-8f60-000000000001"');
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: "small", withCrossShrink: true }, leaf, tie("object"), tie("array")),
    object: fc.array(fc.tuple(keyArb, tie("value")), { maxLength: 8 }).map((ms) => `{${(ms as [string, string][]).map(([k, v]) => `${k}:${v}`).join(",")}}`),
    array: fc.array(tie("value"), { maxLength: 3 }).map((vs) => `[${(vs as string[]).join(",")}]`),
  }));
  const top = fc.array(fc.tuple(keyArb, value as fc.Arbitrary<string>), { maxLength: 12 }).map((ms) => `{${ms.map(([k, v]) => `${k}:${v}`).join(",")}}`);
  const read = (text: string, guide: JsonGuide): unknown => {
    try {
      return { ok: parseStrictJson(text, guide) };
    } catch (e) {
      if (e instanceof StrictJsonError) return e.reason;
      throw e;
    }
  };
  const order = (v: unknown): unknown => (Array.isArray(v) ? v.map(order) : v !== null && typeof v === "object" && !(v instanceof RawJson) ? Object.entries(v).map(([k, x]) => [k, order(x)]) : v);

  it("gives the verdict and the value, keys in order, that reading each key from the text gives", () => {
    expect(known.length).toBeGreaterThan(30);
    fc.assert(
      fc.property(top, (text) => {
        const fast = read(text, envelope);
        const slow = read(text, plain);
        expect(order(fast)).toEqual(order(slow));
      }),
      { numRuns: 500 },
    );
  });

  it("reads every Go-written event as reading each key from the text does", () => {
    for (const w of readJsonl<GoWritten>("go-written-events.jsonl")) expect(order(read(w.json, envelope))).toEqual(order(read(w.json, plain)));
  });
});

describe("isNilUuid", () => {
  // Strings one or two characters away from the nil UUID, as slices of a longer text (how
  // the decoder hands them over), and other values.
  const nearNil = fc
    .tuple(fc.array(fc.tuple(fc.nat({ max: 40 }), fc.constantFrom("0", "1", "f", "-", "")), { maxLength: 2 }), fc.string({ maxLength: 3 }))
    .map(([edits, pad]) => {
      let s: string = NIL_UUID;
      for (const [at, c] of edits) s = s.slice(0, at) + c + s.slice(at + 1);
      const text = `${pad}"${s}"${pad}`;
      return text.slice(pad.length + 1, pad.length + 1 + s.length);
    });
  it("is `=== NIL_UUID`, for near-nil strings, ids and other values", () => {
    fc.assert(
      fc.property(fc.oneof(nearNil, fc.uuid(), fc.constant(NIL_UUID), fc.anything()), (v) => {
        expect(isNilUuid(v)).toBe(v === NIL_UUID);
      }),
      { numRuns: 2000 },
    );
  });
});
