/**
 * The generated decoders (src/codec/generated/decoders.ts) are exactly what
 * scripts/generate-codec.ts makes of the model today: never edited by hand, never stale.
 * And they do what they are for: every built-in type has one, and each Go-written event is
 * taken by its type's decoder and decoded as the reference path decodes it.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { decodeEvent, decodeEventByReference, encodeEvent, envelopeGuide, fastDecodeWire } from "../../src/codec/codec.js";
import { NOT_MINE } from "../../src/codec/fast-model.js";
import * as generated from "../../src/codec/generated/decoders.js";
import { builtInTypes, defaultRegistry } from "../../src/events/catalogue.js";
import { defineEventType } from "../../src/events/registry.js";
import { rawJsonSchema } from "../../src/wire/raw-json-schema.js";
import { timestampSchema } from "../../src/events/header.js";
import { parseOrdinaryJson } from "../../src/wire/fast-json.js";
import { DECODERS_PATH, renderDecoders } from "../../scripts/generate-codec.js";
import { readJsonl, type GoWritten } from "../conformance/go-oracle.js";

const written = readJsonl<GoWritten>("go-written-events.jsonl");
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe("the generated decoders", () => {
  it("are the generator's output for today's model (npx tsx scripts/generate-codec.ts rewrites them)", () => {
    expect(readFileSync(DECODERS_PATH, "utf8") === renderDecoders(), "src/codec/generated/decoders.ts is stale or edited: regenerate it").toBe(true);
  });

  it("cover every built-in type: none is left always NOT_MINE", () => {
    expect(Object.keys(generated).sort()).toEqual(builtInTypes.map((d) => d.type).sort());
    expect(readFileSync(DECODERS_PATH, "utf8")).toContain("always NOT_MINE):\n//   none\n");
  });

  it("take each Go-written event, and give what the reference path gives", () => {
    const guide = envelopeGuide(defaultRegistry);
    const seen = new Set<string>();
    for (const w of written) {
      const wire = parseOrdinaryJson(w.json, guide)!;
      const def = defaultRegistry.get(wire.type as string)!;
      const event = fastDecodeWire(def, wire);
      expect(event, w.id).not.toBe(NOT_MINE);
      seen.add(def.type);
      const reference = decodeEventByReference(w.json);
      expect(event, w.id).toStrictEqual(reference);
      expect(JSON.stringify(Object.keys(event as object)), w.id).toBe(JSON.stringify(Object.keys(reference as object)));
      expect(text(encodeEvent(decodeEvent(w.json))), w.id).toBe(text(encodeEvent(reference)));
    }
    expect(seen.size).toBeGreaterThan(10);
  });

  it("in a registry whose own type reads a built-in's key raw or as a time, give what the reference path gives", () => {
    // The envelope's guide merges every type's: here `messages`, `gate` and `request` are
    // read raw and `reason` quoted wherever they stand, so the built-in types' values
    // arrive as RawJson or unescaped text, which their generated decoders must not take
    // as their own.
    const odd = defineEventType({
      type: "OddReader",
      family: "odd",
      class: "enduring",
      scope: "loop",
      body: { messages: rawJsonSchema().optional(), gate: rawJsonSchema().optional(), request: rawJsonSchema().optional(), reason: timestampSchema.optional() },
    });
    const registry = defaultRegistry.with(odd);
    for (const w of written) {
      const fast = decodeEvent(w.json, { registry });
      const reference = decodeEventByReference(w.json, { registry });
      expect(fast, w.id).toStrictEqual(reference);
      expect(text(encodeEvent(fast, { registry })), w.id).toBe(text(encodeEvent(reference, { registry })));
    }
  });
});
