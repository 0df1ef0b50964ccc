/**
 * Events the library made (decoded, or from createEvent) are frozen and written without a
 * second validation; anything else, a copy of one included, is validated as before.
 */
import { describe, expect, it } from "vitest";
import { decodeEvent, decodeEventByReference, encodeEvent } from "../../src/codec/codec.js";
import { z } from "zod";
import { createEvent, defaultRegistry, defineEventType, EventValidationError } from "../../src/index.js";
import { validateEvent } from "../../src/events/validate.js";
import { readJsonl, type GoWritten } from "../conformance/go-oracle.js";
import { RawJson } from "../../src/wire/raw-json.js";
import { withValueCodec } from "../../src/wire/wire.js";
import { LOOP_COORDS, thrownBy } from "./fixtures.js";

const written = readJsonl<GoWritten>("go-written-events.jsonl");
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe("encoding events the library made", () => {
  it("writes every decoded Go event byte for byte as a validated copy is written", () => {
    expect(written.length).toBeGreaterThan(0);
    for (const w of written) {
      const made = decodeEvent(w.json);
      expect(Object.isFrozen(made)).toBe(true);
      // A shallow copy is no made event: it goes through validation, the old path.
      const copy = { ...(made as unknown as Record<string, unknown>) };
      expect(text(encodeEvent(made)), w.id).toBe(text(encodeEvent(copy)));
      expect(text(encodeEvent(decodeEventByReference(w.json))), w.id).toBe(text(encodeEvent(copy)));
    }
  });

  it("freezes a made event deeply, so it cannot be changed after it was checked", () => {
    const withNesting = written.find((w) => /"blocks"|"request"|"content"/.test(w.json)) ?? written[0]!;
    const made = decodeEvent<Record<string, unknown>>(withNesting.json);
    const before = text(encodeEvent(made));
    expect(() => { made.sessionId = "not a uuid"; }).toThrow(TypeError);
    for (const value of Object.values(made)) {
      if (typeof value === "object" && value !== null) expect(Object.isFrozen(value)).toBe(true);
    }
    expect(text(encodeEvent(made))).toBe(before);
  });

  it("still refuses a broken copy of a made event with the validation's own error", () => {
    for (const w of written.slice(0, 20)) {
      const made = decodeEvent<Record<string, unknown>>(w.json);
      for (const broken of [
        { ...made, sessionId: "not a uuid" },
        { ...made, eventId: 7 },
        { ...made, notAField: true },
      ]) {
        const expected = thrownBy(() => validateEvent(broken));
        const actual = thrownBy(() => encodeEvent(broken));
        expect(actual, w.id).toBeInstanceOf(Error);
        expect(actual, w.id).toEqual(expected);
        expect((actual as Error).message, w.id).toBe((expected as Error).message);
        expect((actual as Error).name, w.id).toBe((expected as Error).name);
      }
    }
  });

  it("writes createEvent's events unchecked, byte for byte as before", () => {
    const made = createEvent("LoopStarted", LOOP_COORDS);
    expect(Object.isFrozen(made)).toBe(true);
    expect(text(encodeEvent(made))).toBe(text(encodeEvent({ ...made })));
  });

  it("checks an event made by another registry's type of the same name", () => {
    const loose = defineEventType({ type: "DeployChecked", family: "deploy", class: "enduring", scope: "loop", body: { percent: z.number() } });
    const tight = defineEventType({ type: "DeployChecked", family: "deploy", class: "enduring", scope: "loop", body: { percent: z.number().max(100) } });
    const made = createEvent(loose, { ...LOOP_COORDS, percent: 150 });
    expect(() => encodeEvent(made, { registry: defaultRegistry.with(loose) })).not.toThrow();
    expect(thrownBy(() => encodeEvent(made, { registry: defaultRegistry.with(tight) }))).toBeInstanceOf(EventValidationError);
  });

  describe("an event holding anything but plain objects, arrays and RawJson is not frozen or remembered", () => {
    class Point {
      constructor(public x: number) {}
    }
    // Each value a custom type may validate into, with a value codec that writes and reads it.
    const kinds: { name: string; schema: z.ZodType; value: () => unknown; same: (a: unknown) => boolean }[] = [
      { name: "a Date", schema: withValueCodec(z.date(), { toWire: (d) => (d as Date).toISOString(), fromWire: (s) => new Date(s as string) }), value: () => new Date(0), same: (a) => a instanceof Date && a.getTime() === 0 },
      { name: "a Uint8Array", schema: withValueCodec(z.instanceof(Uint8Array), { toWire: (b) => [...(b as Uint8Array)], fromWire: (a) => Uint8Array.from(a as number[]) }), value: () => new Uint8Array([1, 2]), same: (a) => a instanceof Uint8Array && a.length === 2 },
      { name: "a class instance", schema: withValueCodec(z.instanceof(Point), { toWire: (p) => (p as Point).x, fromWire: (x) => new Point(x as number) }), value: () => new Point(3), same: (a) => a instanceof Point && a.x === 3 },
      { name: "a Map", schema: withValueCodec(z.map(z.string(), z.number()), { toWire: (m) => Object.fromEntries(m as Map<string, number>), fromWire: (o) => new Map(Object.entries(o as object)) }), value: () => new Map([["a", 1]]), same: (a) => a instanceof Map && a.get("a") === 1 },
    ];
    for (const kind of kinds) {
      for (const where of ["a field", "an array element"] as const) {
        it(`${kind.name} in ${where}`, () => {
          const nested = where === "a field" ? { held: kind.schema } : { held: z.array(kind.schema) };
          const def = defineEventType({ type: "DeployHeld", family: "deploy", class: "enduring", scope: "loop", body: nested });
          const registry = defaultRegistry.with(def);
          const value = where === "a field" ? kind.value() : [kind.value()];
          const made = createEvent(def, { ...LOOP_COORDS, held: value } as never) as Record<string, unknown>;
          const held = where === "a field" ? made.held : (made.held as unknown[])[0];
          expect(kind.same(held)).toBe(true);
          // Nothing frozen, not even part of it: the event is frozen whole or not at all.
          expect(Object.isFrozen(made)).toBe(false);
          expect(Object.isFrozen(held)).toBe(false);
          const bytes = encodeEvent(made, { registry });
          const decoded = decodeEvent<Record<string, unknown>>(bytes, { registry });
          expect(Object.isFrozen(decoded)).toBe(false);
          expect(text(encodeEvent(decoded, { registry }))).toBe(text(bytes));
          // Not remembered: the encoder validates it, so a broken one is refused as a caller's.
          for (const event of [made, decoded]) {
            event.sessionId = "not a uuid";
            expect(thrownBy(() => encodeEvent(event, { registry }))).toBeInstanceOf(EventValidationError);
          }
        });
      }
    }

    it("freezes every object, null-prototype map and array of a decoded Go event, and keeps RawJson values", () => {
      const seen = { nullProto: 0, array: 0, raw: 0 };
      const walk = (v: unknown): void => {
        if (typeof v !== "object" || v === null) return;
        expect(Object.isFrozen(v)).toBe(true);
        if (RawJson.is(v)) return void seen.raw++;
        if (Array.isArray(v)) seen.array++;
        else if (Object.getPrototypeOf(v) === null) seen.nullProto++;
        for (const item of Object.values(v)) walk(item);
      };
      for (const w of written) walk(decodeEvent(w.json));
      expect(seen.nullProto).toBeGreaterThan(0);
      expect(seen.array).toBeGreaterThan(0);
      expect(seen.raw).toBeGreaterThan(0);
    });
  });
});
