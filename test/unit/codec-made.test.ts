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
      const copy = { ...(made as Record<string, unknown>) };
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
});
