/**
 * Golden vectors pin the wire format byte for byte: every event the Go runtime's own
 * `MarshalEvent` wrote in test/conformance/data/go-written-events.jsonl (see its
 * README.md) must decode, and encode back to exactly the bytes Go wrote. None of the old
 * hand-written vectors survived the move to Go's format (see test/golden/README.md).
 */
import { describe, expect, it } from "vitest";
import { defaultRegistry, marshalEvent, unmarshalEvent, unmarshalPreview, validateEvent } from "../../src/index.js";
import { decodeEvent } from "../../src/codec/codec.js";
import { readJsonl, type GoWritten } from "../conformance/go-oracle.js";

const written = readJsonl<GoWritten>("go-written-events.jsonl");
const cases = written.map((w) => [w.id, w] as const);
const utf8 = new TextDecoder();

/** The types the README of the conformance data lists, with their counts. */
const EXPECTED_COUNTS: Record<string, number> = {
  PermissionRequested: 7,
  PermissionDecided: 5,
  UserInputRequested: 4,
  GateOpened: 5,
  GateResolved: 6,
  StepDone: 4,
  TurnStarted: 4,
  TurnDone: 3,
  TurnFailed: 4,
  TurnInterrupted: 3,
  LoopStarted: 4,
  LoopIdle: 3,
  SessionStarted: 3,
  SessionStopped: 4,
};

describe("golden vectors: Go-written events", () => {
    it("are the 59 events of the conformance data, every enduring type Go writes", () => {
      expect(written).toHaveLength(59);
      const counts: Record<string, number> = {};
      for (const w of written) counts[w.type] = (counts[w.type] ?? 0) + 1;
      expect(counts).toEqual(EXPECTED_COUNTS);
      for (const type of Object.keys(counts)) expect(defaultRegistry.get(type)?.class).toBe("enduring");
      expect(new Set(written.map((w) => w.id)).size).toBe(written.length);
    });

    it.each(cases)("%s: one compact JSON object, sorted top-level keys, Go's escaping", (_, w) => {
      expect(w.json.startsWith("{")).toBe(true);
      expect(w.json.endsWith("}")).toBe(true);
      expect(w.json).not.toMatch(/^\s|\s$/);
      expect(w.json).not.toMatch(/[<>&\u2028\u2029]/);
      const keys = Object.keys(JSON.parse(w.json) as object);
      expect(keys).toEqual([...keys].sort());
      expect(keys).toContain("type");
      expect(keys).toContain("v");
    });

    it.each(cases)("%s decodes, and re-encodes to exactly Go's bytes", (_, w) => {
      const bytes = Buffer.from(w.json, "utf8");
      const event = unmarshalEvent<{ type: string }>(bytes);
      expect(event.type).toBe(w.type);
      // Bytes and text decode alike, and decodeEvent (either class) agrees with the journal decoder.
      expect(unmarshalEvent(w.json)).toEqual(event);
      expect(decodeEvent(bytes)).toEqual(event);
      const again = marshalEvent(event);
      expect(utf8.decode(again)).toBe(w.json);
      expect(Buffer.from(again).equals(bytes)).toBe(true);
      // The decoded event is valid as it stands, and validating it changes nothing on the wire.
      const valid = validateEvent(event);
      expect(valid).toEqual(event);
      expect(utf8.decode(marshalEvent(valid))).toBe(w.json);
    });

    it.each(cases)("%s is not a preview", (_, w) => {
      expect(() => unmarshalPreview(w.json)).toThrow(/never a preview/);
    });
  },
);
