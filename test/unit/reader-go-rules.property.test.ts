/**
 * The reader's fast paths (key tables, cached member guides, the duplicate check without a
 * map, the merged envelope guide) against rules Go's reader follows whatever the spelling,
 * over every input the Go runtime accepted (test/conformance/data/): each rule is a
 * rewrite of the text whose verdict Go's encoding/json fixes, checked on the whole family.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { decodeEvent, encodeEvent, safeDecodeEvent } from "../../src/codec/codec.js";
import { contentBlockSchema, stepMessageSchema } from "../../src/events/content.js";
import { defaultRegistry } from "../../src/events/catalogue.js";
import { timestampSchema } from "../../src/events/header.js";
import { defineEventType } from "../../src/events/registry.js";
import { rawJsonSchema } from "../../src/wire/raw-json-schema.js";
import { decodePermissionRequest } from "../../src/events/request.js";
import { RequestDecodeError } from "../../src/errors.js";
import { RawJson } from "../../src/wire/raw-json.js";
import { parsedJson } from "../../src/wire/strict-json.js";
import { guideFor } from "../../src/wire/wire.js";
import { readJsonl, type GoVerdict, type GoWritten } from "../conformance/go-oracle.js";

const written = readJsonl<GoWritten>("go-written-events.jsonl");
/**
 * Every event text Go's UnmarshalEvent accepted and jetloop reads (not refused under one of
 * CONFORMANCE.md's stricter rules): the rewrites work on text.
 */
const accepted: string[] = [
  ...written.map((w) => w.json),
  ...[...readJsonl<GoVerdict>("go-verdicts.jsonl"), ...readJsonl<GoVerdict>("go-verdicts-extra.jsonl")]
    .filter((c) => c.go_ok && c.kind !== "request" && c.json !== undefined)
    .map((c) => c.json!),
].filter((text) => safeDecodeEvent(text).success);

/** What a decode says, comparable: the event (a RawJson by its meaning) or the error's kind. */
function verdict(text: string): unknown {
  const r = safeDecodeEvent(text);
  return r.success ? { ok: meaning(r.data) } : { error: r.error.name, reason: "reason" in r.error ? r.error.reason : r.error.field };
}

function meaning(v: unknown): unknown {
  if (v instanceof RawJson) return { raw: parsedJson(v.text) };
  if (Array.isArray(v)) return v.map(meaning);
  if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, meaning(x)]));
  return v;
}

interface Member {
  /** The object it is a member of: where its `{` is, and the key that object is the value (or an element of the value) of. */
  objectStart: number;
  parentKey: string | undefined;
  /** The key's quoted text, quotes included: [keyStart, keyEnd). */
  keyStart: number;
  keyEnd: number;
  /** The member's value: [valueStart, valueEnd). */
  valueStart: number;
  valueEnd: number;
}

/** Every object member of valid JSON text, at every depth (raw values included). */
function members(text: string): Member[] {
  const out: Member[] = [];
  let i = 0;
  const space = () => {
    while (i < text.length && " \t\r\n".includes(text[i]!)) i++;
  };
  const string = () => {
    i++;
    while (text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    i++;
  };
  const value = (parentKey?: string): void => {
    space();
    const c = text[i];
    if (c === "{") {
      const objectStart = i;
      i++;
      space();
      if (text[i] === "}") {
        i++;
        return;
      }
      for (;;) {
        space();
        const keyStart = i;
        string();
        const keyEnd = i;
        space();
        i++; // ':'
        space();
        const valueStart = i;
        value(JSON.parse(text.slice(keyStart, keyEnd)) as string);
        out.push({ objectStart, parentKey, keyStart, keyEnd, valueStart, valueEnd: i });
        space();
        if (text[i++] === "}") return;
      }
    }
    if (c === "[") {
      i++;
      space();
      if (text[i] === "]") {
        i++;
        return;
      }
      for (;;) {
        value(parentKey);
        space();
        if (text[i++] === "]") return;
      }
    }
    if (c === '"') return string();
    while (i < text.length && !",]} \t\r\n".includes(text[i]!)) i++;
  };
  value();
  return out;
}

/**
 * `key` written with each code unit picked escaped as \uXXXX (hex in either case); a
 * surrogate pair is escaped whole or not at all (half written is in no UTF-8 text).
 */
function spelled(key: string, escapes: readonly boolean[], upperHex: boolean): string {
  let out = '"';
  for (let j = 0; j < key.length; j++) {
    const u = key.charCodeAt(j);
    const low = u >= 0xdc00 && u <= 0xdfff && j > 0 && key.charCodeAt(j - 1) >= 0xd800 && key.charCodeAt(j - 1) <= 0xdbff;
    if (escapes[(low ? j - 1 : j) % escapes.length]) {
      const hex = u.toString(16).padStart(4, "0");
      out += `\\u${upperHex ? hex.toUpperCase() : hex}`;
    } else out += JSON.stringify(key[j]!).slice(1, -1);
  }
  return `${out}"`;
}

const caseArb = fc.record({
  input: fc.nat({ max: accepted.length - 1 }).map((n) => accepted[n]!),
  pick: fc.nat(),
  escapes: fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }),
  upperHex: fc.boolean(),
});

describe("the reader reads a key as Go does, however it is spelled", () => {
  it("every Go-accepted input reads the same with any key's characters escaped (any depth, known keys or not)", () => {
    fc.assert(
      fc.property(caseArb, ({ input, pick, escapes, upperHex }) => {
        const all = members(input);
        const m = all[pick % all.length]!;
        const key = JSON.parse(input.slice(m.keyStart, m.keyEnd)) as string;
        const rewritten = input.slice(0, m.keyStart) + spelled(key, escapes, upperHex) + input.slice(m.keyEnd);
        expect(verdict(rewritten)).toEqual(verdict(input));
      }),
      { numRuns: 600 },
    );
  });

  // Go's UnmarshalEvent refuses two keys of one object that strings.ToLower makes equal, at
  // every depth: whatever the spelling (escapes), the order, the known-key table.
  it("a second key equal to any key under strings.ToLower is refused, exact repeats as duplicate_key", () => {
    const variants = ["exact", "escaped", "ascii-case", "kelvin", "dotted-capital-i"] as const;
    fc.assert(
      fc.property(caseArb, fc.constantFrom(...variants), fc.boolean(), ({ input, pick, escapes, upperHex }, variant, before) => {
        const all = members(input);
        const m = all[pick % all.length]!;
        const key = JSON.parse(input.slice(m.keyStart, m.keyEnd)) as string;
        let other = key;
        if (variant === "ascii-case") other = [...key].map((ch, j) => (escapes[j % escapes.length] ? (ch === ch.toLowerCase() ? ch.toUpperCase() : ch.toLowerCase()) : ch)).join("");
        if (variant === "kelvin") other = key.replace(/k/gi, "\u212a");
        if (variant === "dotted-capital-i") other = key.replace(/i/g, "\u0130");
        if ([...key].some((ch) => ch.charCodeAt(0) > 0x7f) && variant !== "exact" && variant !== "escaped") return; // ASCII keys only for the case rewrites
        const exact = other === key;
        const text = variant === "escaped" ? spelled(other, escapes, upperHex) : JSON.stringify(other);
        const pair = `${text}:${input.slice(m.valueStart, m.valueEnd)}`;
        const rewritten = before ? `${input.slice(0, m.keyStart)}${pair},${input.slice(m.keyStart)}` : `${input.slice(0, m.valueEnd)},${pair}${input.slice(m.valueEnd)}`;
        const r = safeDecodeEvent(rewritten);
        expect(r.success).toBe(false);
        if (!r.success) expect("reason" in r.error && r.error.reason).toBe(exact ? "duplicate_key" : "letter_case_key");
      }),
      { numRuns: 600 },
    );
  });

  it("the same inputs read the same in any order, twice (no cached state carries from one event to the next)", () => {
    const first = accepted.map(verdict);
    fc.assert(
      fc.property(fc.shuffledSubarray(accepted.map((_, i) => i), { minLength: 50, maxLength: 200 }), (order) => {
        for (const i of order) expect(verdict(accepted[i]!)).toEqual(first[i]);
      }),
      { numRuns: 5 },
    );
  });
});

// Content blocks nest through tool results; Go reads them to its depth limit of 10,000.
// jetloop walks them recursively, so its stack runs out first (src/wire/README.md, Limits:
// a stricter rule, from about 600 nested tool results on a small stack; measured 1,300 in a
// vitest worker). Each side of that boundary is pinned: every nesting up to FLOOR is read
// (or written) whole, the deepest Go reads and one past it are refused as too_deep (the
// stricter rule, then Go's own), and in between a refusal is only ever the typed too_deep,
// never a RangeError out of the safe decoder (a subscriber's loop) or out of publish.
describe("tool results nested past the stack", () => {
  /** Nestings every stack jetloop runs on reads: well under the smallest boundary seen. */
  const FLOOR = 400;
  const GO_MAX_DEPTH = 10_000;
  const base = written.find((w) => w.json.includes('"type":"tool_result"')) ?? written.find((w) => w.type === "StepDone")!;
  const nested = (n: number): string => {
    let block = '{"Text":"x","type":"text"}';
    for (let i = 0; i < n; i++) block = `{"content":[${block}],"tool_use_id":"c","type":"tool_result"}`;
    return block;
  };
  const text = base.json;
  const at = text.indexOf('"blocks":[') + '"blocks":['.length;
  const withNesting = (n: number): string => `${text.slice(0, at)}${nested(n)},${text.slice(at)}`;
  /** How deep a JSON text nests, as Go counts it (brackets inside strings skipped). */
  const depthOf = (json: string): number => {
    let depth = 0;
    let deepest = 0;
    let inString = false;
    for (let i = 0; i < json.length; i++) {
      const ch = json[i];
      if (inString) {
        if (ch === "\\") i++;
        else if (ch === '"') inString = false;
      } else if (ch === '"') inString = true;
      else if (ch === "{" || ch === "[") deepest = Math.max(deepest, ++depth);
      else if (ch === "}" || ch === "]") depth--;
    }
    return deepest;
  };
  /** The nesting of tool results in the first block: how many levels a read kept. */
  const toolDepth = (block: unknown): number => {
    let n = 0;
    let b = block as { type?: string; content?: unknown[] };
    while (b.type === "tool_result") {
      n++;
      b = b.content![0] as typeof b;
    }
    return n;
  };
  /** The deepest nesting whose text Go reads: the last n within its limit. */
  let goDeepest = 0;
  while (depthOf(withNesting(goDeepest + 1)) <= GO_MAX_DEPTH) goDeepest++;
  const decoded = (n: number) => safeDecodeEvent<{ messages?: { blocks: unknown[] }[] }>(withNesting(n));
  const refusal = (r: { success: false; error: Error }) => ({ name: r.error.name, reason: "reason" in r.error && r.error.reason });

  it("the texts: the nesting is where it is meant to be, and Go's limit falls where counted", () => {
    expect(at).toBeGreaterThan(9);
    expect(depthOf(text.slice(0, at))).toBe(4);
    expect(depthOf(withNesting(goDeepest))).toBeLessThanOrEqual(GO_MAX_DEPTH);
    expect(depthOf(withNesting(goDeepest + 1))).toBeGreaterThan(GO_MAX_DEPTH);
    expect(goDeepest).toBeGreaterThan(4_000);
  });

  it("decode: every nesting up to the floor is read whole", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: FLOOR }), (n) => {
        const r = decoded(n);
        expect(r.success).toBe(true);
        if (r.success) expect(toolDepth(r.data.messages!.find((m) => m.blocks.length > 0)!.blocks[0])).toBe(n);
      }),
      { numRuns: 40, examples: [[FLOOR]] },
    );
  });

  it("decode: the deepest nesting Go reads is refused too_deep (the stricter rule), and one past it (Go's rule)", () => {
    for (const n of [goDeepest, goDeepest + 1]) {
      const r = decoded(n);
      expect(r.success, `nesting ${n}`).toBe(false);
      if (!r.success) expect(refusal(r)).toEqual({ name: "EventDecodeError", reason: "too_deep" });
    }
  });

  it("decode: between the floor and Go's limit, read whole or refused as too_deep, nothing else", () => {
    fc.assert(
      fc.property(fc.integer({ min: FLOOR + 1, max: goDeepest }), (n) => {
        const r = decoded(n);
        if (r.success) expect(toolDepth(r.data.messages!.find((m) => m.blocks.length > 0)!.blocks[0])).toBe(n);
        else expect(refusal(r)).toEqual({ name: "EventDecodeError", reason: "too_deep" });
      }),
      { numRuns: 40, examples: [[700], [1000], [1500]] },
    );
  });

  const event = decodeEvent<{ messages?: { blocks: unknown[] }[] }>(base.json);
  const withBlock = (n: number) => {
    let block: unknown = { type: "text", text: "x" };
    for (let i = 0; i < n; i++) block = { type: "tool_result", toolUseId: "c", content: [block] };
    const copy = structuredClone(event);
    copy.messages!.find((m) => m.blocks.length > 0)!.blocks.push(block);
    return copy;
  };
  const encodeRefusal = (n: number) => {
    try {
      encodeEvent(withBlock(n));
    } catch (e) {
      return { name: (e as Error).name, reason: (e as { reason?: string }).reason };
    }
    return "written";
  };

  it("encode: every nesting up to the floor is written, and reads back whole", () => {
    expect(event.messages?.some((m) => m.blocks.length > 0)).toBe(true);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: FLOOR }), (n) => {
        const back = decodeEvent<{ messages?: { blocks: unknown[] }[] }>(encodeEvent(withBlock(n)));
        expect(toolDepth(back.messages!.find((m) => m.blocks.length > 0)!.blocks.at(-1))).toBe(n);
      }),
      { numRuns: 20, examples: [[FLOOR]] },
    );
  });

  it("encode: the deepest nesting Go reads, and one past it, are refused as EventEncodeError too_deep", () => {
    for (const n of [goDeepest, goDeepest + 1]) expect(encodeRefusal(n), `nesting ${n}`).toEqual({ name: "EventEncodeError", reason: "too_deep" });
  });

  it("encode: between the floor and Go's limit, written or refused as EventEncodeError too_deep, nothing else", () => {
    fc.assert(
      fc.property(fc.integer({ min: FLOOR + 1, max: goDeepest }), (n) => {
        const r = encodeRefusal(n);
        if (r !== "written") expect(r).toEqual({ name: "EventEncodeError", reason: "too_deep" });
        else expect(toolDepth(decodeEvent<{ messages?: { blocks: unknown[] }[] }>(encodeEvent(withBlock(n))).messages!.find((m) => m.blocks.length > 0)!.blocks.at(-1))).toBe(n);
      }),
      { numRuns: 20, examples: [[600], [1000]] },
    );
  });
});

/** The wire names of a schema's object (its key table). */
function wireNames(schema: Parameters<typeof guideFor>[0]): Set<string> {
  return new Set((guideFor(schema).keys ?? []).flatMap((bucket) => (bucket ?? []).map((k) => k.name)));
}

/**
 * Objects read before their kind is known (the envelope before its `type`, a block before
 * its `type`, a step message before its `role`): the reader guides them by every kind's
 * fields at once. A key that another kind names is, for this one, a key like any other.
 */
const unionsByKey: { where: (m: Member) => boolean; discriminator: string; names: (kind: string) => Set<string> | undefined }[] = [
  {
    where: (m) => m.objectStart === 0,
    discriminator: "type",
    names: (kind) => {
      const def = defaultRegistry.get(kind);
      return def && wireNames(def.schema);
    },
  },
  {
    where: (m) => m.parentKey === "blocks" || m.parentKey === "content",
    discriminator: "type",
    names: (kind) => {
      const option = (contentBlockSchema as unknown as { options: Parameters<typeof guideFor>[0][] }).options.find((o) => wireNames(o).size > 0 && (o as unknown as { shape: { type: { value: string } } }).shape.type.value === kind);
      return option && wireNames(option);
    },
  },
  {
    where: (m) => m.parentKey === "messages",
    discriminator: "role",
    names: (kind) => {
      const option = stepMessageSchema.options.find((o) => o.shape.role.value === kind);
      return option && wireNames(option);
    },
  },
];

describe("a key another kind of object names is, in this one, an unknown key (Go ignores it)", () => {
  const everyName = new Set([
    ...[...defaultRegistry.types()].flatMap((d) => [...wireNames(d.schema)]),
    ...(contentBlockSchema as unknown as { options: Parameters<typeof guideFor>[0][] }).options.flatMap((o) => [...wireNames(o)]),
    ...stepMessageSchema.options.flatMap((o) => [...wireNames(o)]),
  ]);
  const values = ["1.0", "-0", "1e2", "9007199254740993", "0.5", "-1", '"\\u0031"', '"2026-11-29T10:15:30Z"', '"10:\\u00315"', "true", "null", '{"id":1.0}', '{"created_at":"\\u0032026-11-29T10:15:30Z"}', "[1.0]", '[{"type":"text","Text":1e2}]', "{}", "[]"];

  it("inserted into any such object of a Go-accepted input, it reads as a key no kind names", () => {
    const cases = accepted.flatMap((input) => {
      const byObject = new Map<number, Member[]>();
      for (const m of members(input)) byObject.set(m.objectStart, [...(byObject.get(m.objectStart) ?? []), m]);
      return [...byObject.values()].flatMap((ms) => {
        const union = unionsByKey.find((u) => u.where(ms[0]!));
        const disc = ms.find((m) => JSON.parse(input.slice(m.keyStart, m.keyEnd)) === union?.discriminator);
        if (union === undefined || disc === undefined) return [];
        const own = union.names(JSON.parse(input.slice(disc.valueStart, disc.valueEnd)) as string);
        if (own === undefined) return [];
        const present = new Set(ms.map((m) => JSON.parse(input.slice(m.keyStart, m.keyEnd)) as string));
        const foreign = [...everyName].filter((n) => !own.has(n) && !present.has(n) && ![...own].some((o) => o.toLowerCase() === n.toLowerCase()));
        return foreign.length === 0 ? [] : [{ input, at: ms[0]!.objectStart + 1, foreign }];
      });
    });
    expect(cases.length).toBeGreaterThan(1000);
    fc.assert(
      fc.property(fc.nat({ max: cases.length - 1 }), fc.nat(), fc.constantFrom(...values), (n, pick, value) => {
        const { input, at, foreign } = cases[n]!;
        const key = foreign[pick % foreign.length]!;
        const insert = (k: string) => `${input.slice(0, at)}${JSON.stringify(k)}:${value},${input.slice(at)}`;
        expect(verdict(insert(key)), key).toEqual(verdict(insert("zz_no_kind_names_this")));
      }),
      { numRuns: 800 },
    );
  });
});

// A string is read as the UTF-8 text it stands for. One holding a lone surrogate stands for
// none (TextEncoder would write U+FFFD, changing it), so it is refused as bytes that are not
// UTF-8 are, never read with the surrogate kept (which re-encodes to other bytes) or two
// such keys kept apart that every byte form makes one.
describe("a string input with a lone surrogate", () => {
  it("is refused as not_utf8, wherever the surrogate stands", () => {
    fc.assert(
      fc.property(caseArb, fc.integer({ min: 0xd800, max: 0xdfff }), fc.boolean(), ({ input, pick }, unit, inKey) => {
        const all = members(input);
        const m = all[pick % all.length]!;
        const at = inKey ? m.keyStart + 1 : input[m.valueStart] === '"' ? m.valueStart + 1 : m.keyStart + 1;
        const r = safeDecodeEvent(input.slice(0, at) + String.fromCharCode(unit) + input.slice(at));
        expect(r.success).toBe(false);
        if (!r.success) expect("reason" in r.error && r.error.reason).toBe("not_utf8");
      }),
      { numRuns: 300 },
    );
  });

  it("in a bare permission request is refused as not UTF-8", () => {
    const request = JSON.stringify((JSON.parse(written.find((w) => w.type === "PermissionRequested")!.json) as { request: unknown }).request);
    fc.assert(
      fc.property(fc.nat({ max: request.length }), fc.integer({ min: 0xd800, max: 0xdfff }), (at, unit) => {
        const text = request.slice(0, at) + String.fromCharCode(unit) + request.slice(at);
        expect(() => decodePermissionRequest(text)).toThrow(RequestDecodeError);
      }),
      { numRuns: 100 },
    );
  });
});

// The envelope's guide merges every registered type's: with a custom registry one key can
// be a time (quoted) in one type, text or raw JSON in another. Each event is read by its
// own type's rules: Go decodes into that type's struct.
describe("one key, a different rule in each type of a registry", () => {
  const timeInA = defineEventType({ type: "AdvTimeA", family: "adv", class: "enduring", scope: "session", body: { when: timestampSchema.optional(), data: rawJsonSchema().optional() } });
  const textInB = defineEventType({
    type: "AdvTextB",
    family: "adv",
    class: "enduring",
    scope: "session",
    body: { when: z.string().optional(), data: z.object({ at: timestampSchema.optional() }).optional() },
  });
  const registry = defaultRegistry.with(timeInA).with(textInB);
  const header = `"created_at":"2026-11-29T10:15:30Z","event_id":"6f1c2a3b-4d5e-4f60-8a7b-000000000e01","session_id":"6f1c2a3b-4d5e-4f60-8a7b-000000000101"`;
  const read = (type: string, body: string) => {
    const r = safeDecodeEvent(`{${header},${body},"type":"${type}","v":1}`, { registry });
    return r.success ? { ok: meaning(r.data) } : { error: "reason" in r.error ? r.error.reason : r.error.field };
  };
  // Escapes of any characters of a time's text.
  const escapedTime = fc.array(fc.boolean(), { minLength: 20, maxLength: 20 }).filter((e) => e.some(Boolean)).map((e) => spelled("2026-11-29T10:15:30Z", e, false));

  it("an escaped time is text where the type's field is text, and refused where it is a time", () => {
    fc.assert(
      fc.property(escapedTime, (t) => {
        expect(read("AdvTextB", `"when":${t}`)).toMatchObject({ ok: { when: "2026-11-29T10:15:30Z" } });
        expect(read("AdvTimeA", `"when":${t}`)).toEqual({ error: "escaped_time" });
      }),
      { numRuns: 50 },
    );
  });

  it("a time inside a field raw in another type is read as a time: escaped, it is refused", () => {
    fc.assert(
      fc.property(escapedTime, (t) => {
        expect(read("AdvTextB", `"data":{"at":${t}}`)).toEqual({ error: "escaped_time" });
        expect(read("AdvTimeA", `"data":{"at":${t}}`)).toMatchObject({ ok: {} });
      }),
      { numRuns: 50 },
    );
  });
});

describe("a key another type names, nested past the stack where this type has no such field", () => {
  it("is ignored as Go ignores it, as the same value under a key no type names is", () => {
    const turn = written.find((w) => w.type === "TurnStarted")!.json;
    let block = '{"Text":"x","type":"text"}';
    for (let i = 0; i < 1500; i++) block = `{"content":[${block}],"tool_use_id":"c","type":"tool_result"}`;
    const value = `[{"role":"assistant","blocks":[${block}]}]`;
    const insert = (k: string) => turn.replace('"type":"TurnStarted"', `${JSON.stringify(k)}:${value},"type":"TurnStarted"`);
    expect(verdict(insert("zz_no_type_names_this"))).toEqual(verdict(turn));
    expect(verdict(insert("messages"))).toEqual(verdict(turn));
  });
});

describe("a map in one type, an object in another", () => {
  const mapInA = defineEventType({ type: "AdvMapA", family: "adv", class: "enduring", scope: "session", body: { meta: z.record(z.string(), z.string()).optional() } });
  const objectInB = defineEventType({ type: "AdvObjectB", family: "adv", class: "enduring", scope: "session", body: { meta: z.object({ at: timestampSchema.optional() }).optional() } });
  const registry = defaultRegistry.with(mapInA).with(objectInB);
  const header = `"created_at":"2026-11-29T10:15:30Z","event_id":"6f1c2a3b-4d5e-4f60-8a7b-000000000e01","session_id":"6f1c2a3b-4d5e-4f60-8a7b-000000000101"`;
  const read = (type: string, body: string) => {
    const r = safeDecodeEvent(`{${header},${body},"type":"${type}","v":1}`, { registry });
    return r.success ? { ok: meaning(r.data) } : { error: "reason" in r.error ? r.error.reason : r.error.field };
  };

  it("a map's value is read by the map's rules: an escaped time there is text", () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 20, maxLength: 20 }).filter((e) => e.some(Boolean)), (e) => {
        const t = spelled("2026-11-29T10:15:30Z", e, false);
        expect(read("AdvMapA", `"meta":{"at":${t}}`)).toMatchObject({ ok: { meta: { at: "2026-11-29T10:15:30Z" } } });
        expect(read("AdvObjectB", `"meta":{"at":${t}}`)).toEqual({ error: "escaped_time" });
      }),
      { numRuns: 30 },
    );
  });
});
