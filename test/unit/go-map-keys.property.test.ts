/**
 * A Go map's keys are data. Go reads and writes a key `__proto__`, `constructor`,
 * `toString`, `""`, `"1"` or `"01"` like any other; a JavaScript object given such a key
 * may turn it into its prototype (`__proto__`), lose it (zod's z.record drops
 * `__proto__`), find it already there (`constructor` is in every object), or put it first
 * (integer-like keys come first in an object's own order, whatever the insertion order).
 *
 * The rule: every Go map reads into a null-prototype object holding exactly its keys, and
 * is written back byte for byte, keys in Go's order (UTF-8 bytes); raw JSON keeps its text,
 * and its parsed value has each key as an own property. Checked over every map and raw
 * position the schemas declare (`wirePositions`: a map declared tomorrow is covered, and a
 * position without a carrier event fails the test), with generated key sets drawn from the
 * keys JavaScript treats specially and from arbitrary text.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeEvent, encodeEvent, safeDecodeEvent } from "../../src/codec/codec.js";
import { thawed } from "./fixtures.js";
import { defaultRegistry } from "../../src/events/catalogue.js";
import { defineEventType } from "../../src/events/registry.js";
import { goMapSchema } from "../../src/wire/go-map-schema.js";
import { z } from "zod";
import { EventValidationError } from "../../src/errors.js";
import { goLower } from "../../src/wire/go-fold.js";
import { RawJson } from "../../src/wire/raw-json.js";
import { scanJson } from "../../src/wire/strict-json.js";
import { goString, toSnake, type WirePosition, wirePositions } from "../../src/wire/wire.js";
import { type GoWritten, readJsonl } from "../conformance/go-oracle.js";
import { CARRIERS } from "./model-carriers.js";
import { reportFigure } from "../harness/figures-log.js";

const text = (b: Uint8Array) => new TextDecoder().decode(b);
const utf8Order = (a: string, b: string): number => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));

/** Keys an object treats otherwise than as data, and keys JavaScript orders otherwise than Go. */
const SPECIAL_KEYS = [
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "valueOf",
  "hasOwnProperty",
  "isPrototypeOf",
  "__defineGetter__",
  "__lookupSetter__",
  "",
  "0",
  "1",
  "01",
  "10",
  "2",
  "-1",
  "1.5",
  "4294967294",
  "4294967295",
  "9007199254740993",
  "length",
  "then",
];
const keyArb = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...SPECIAL_KEYS) },
  { weight: 2, arbitrary: fc.nat({ max: 2 ** 32 + 5 }).map(String) },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 3 }) },
);
/** Keys Go's duplicate check keeps apart (strings.ToLower of each differs): another rule refuses the rest. */
const keySetArb = fc.uniqueArray(keyArb, { minLength: 1, maxLength: 7 }).filter((ks) => new Set(ks.map(goLower)).size === ks.length);

// ---- finding a position's value in an event's text

/** [start, end) of each value at `path` (`*`: every element or member) below the value at `at`. */
function spansAt(json: string, at: number, path: readonly string[]): [number, number][] {
  const end = scanJson(json, at, { depthBase: 0, exactNumbers: false, compact: false }).end;
  if (path.length === 0) return [[at, end]];
  const [head, ...rest] = path;
  const c = json[at];
  if (c !== "{" && c !== "[") return [];
  const out: [number, number][] = [];
  let i = at + 1;
  if (json[i] === (c === "{" ? "}" : "]")) return [];
  for (;;) {
    let key: string | undefined;
    if (c === "{") {
      const keyEnd = scanJson(json, i, { depthBase: 0, exactNumbers: false, compact: false }).end;
      key = JSON.parse(json.slice(i, keyEnd)) as string;
      i = keyEnd + 1;
    }
    const valueEnd = scanJson(json, i, { depthBase: 0, exactNumbers: false, compact: false }).end;
    if ((c === "[" && head === "*") || (c === "{" && (head === key || (head === "*" && rest.length === 0)))) out.push(...spansAt(json, i, rest));
    i = valueEnd;
    if (json[i] !== ",") return out;
    i++;
  }
}

/** [start, end) of the object at `path`'s parent, where the position's key could be added. */
function parentSpans(json: string, path: readonly string[]): [number, number][] {
  return spansAt(json, 0, path.slice(0, -1)).filter(([s]) => json[s] === "{");
}

const splice = (json: string, [s, e]: [number, number], value: string): string => `${json.slice(0, s)}${value}${json.slice(e)}`;

const written = readJsonl<GoWritten>("go-written-events.jsonl");
const carrierTexts: [string, string][] = [...written.map((w): [string, string] => [w.id, w.json]), ...Object.entries(CARRIERS)];

interface Site {
  readonly type: string;
  readonly position: WirePosition;
  readonly carrier: string;
  /** The carrier in Go's form with a value at the position (added if the carrier had none). */
  readonly base: string;
}

/**
 * A carrier event for a position: a Go-written event of the type with a value there, or
 * one with the position's parent object, the key added and the event written in Go's form
 * (decoded and encoded: the codec writes every other part byte for byte, which the
 * conformance suite proves).
 */
function siteFor(type: string, position: WirePosition): Site | undefined {
  const ofType = carrierTexts.filter(([, json]) => (JSON.parse(json) as { type: string }).type === type);
  for (const [id, json] of ofType) if (spansAt(json, 0, position.path).length > 0) return { type, position, carrier: id, base: json };
  if (position.kind !== "map") return undefined;
  const key = position.path.at(-1)!;
  for (const [id, json] of ofType) {
    for (const [, e] of parentSpans(json, position.path)) {
      const added = `${json.slice(0, e - 1)}${json[e - 2] === "{" ? "" : ","}${goString(key)}:{"seed":"x"}${json.slice(e - 1)}`;
      const r = safeDecodeEvent(added);
      if (!r.success) continue;
      const base = text(encodeEvent(r.data));
      if (spansAt(base, 0, position.path).length > 0) return { type, position, carrier: `${id}+${key}`, base };
    }
  }
  return undefined;
}

const positions = [...defaultRegistry.types()].flatMap((def) => wirePositions(def.schema).map((position) => ({ type: def.type, position })));
const sites = positions.map(({ type, position }) => siteFor(type, position));
const mapSites = sites.filter((s): s is Site => s !== undefined && s.position.kind === "map");
const rawSites = sites.filter((s): s is Site => s !== undefined && s.position.kind === "raw");

/** The value at a wire path of a decoded event: each step the camelCase field written under that wire name. */
function valueAt(event: unknown, base: string, path: readonly string[]): unknown {
  let v: unknown = event;
  let wire: unknown = JSON.parse(base);
  for (const step of path) {
    if (Array.isArray(wire)) {
      // `*`: the first element that has the rest of the path's next key.
      const i = wire.findIndex((x) => typeof x === "object" && x !== null);
      wire = wire[i];
      v = (v as unknown[])[i];
      continue;
    }
    wire = (wire as Record<string, unknown>)[step];
    const camel = Object.keys(v as object).find((k) => toSnake(k) === step || k.toLowerCase() === step.toLowerCase());
    v = (v as Record<string, unknown>)[camel!];
  }
  return v;
}

describe("Go map keys are data, in every map the model has", () => {
  it("every map and raw position the schemas declare is found, and every map has a carrier event", () => {
    const maps = positions.filter((p) => p.position.kind === "map");
    expect(maps.length).toBeGreaterThanOrEqual(4);
    for (const [i, p] of positions.entries()) if (p.position.kind === "map") expect(sites[i], `${p.type} ${p.position.path.join(".")}`).toBeDefined();
    // Raw values are kept as text by one guide whatever their field: each field name is covered somewhere.
    const rawNames = new Set(positions.filter((p) => p.position.kind === "raw").map((p) => p.position.path.filter((s) => s !== "*").at(-1)));
    const coveredNames = new Set(rawSites.map((s) => s.position.path.filter((x) => x !== "*").at(-1)));
    expect([...rawNames].filter((n) => !coveredNames.has(n))).toEqual([]);
  }, 60_000);

  it("each map, with keys JavaScript treats specially: read into a null-prototype object with every key, written back byte for byte in Go's order", () => {
    let n = 0;
    fc.assert(
      fc.property(fc.constantFrom(...mapSites), keySetArb, fc.boolean(), (site, keys, reversed) => {
        const stringValues = site.type !== "GateOpened";
        const valueOf = (k: string, i: number) => (stringValues ? goString(`v${i}:${k}`) : i % 2 === 0 ? goString(k) : `{"k":${goString(k)},"n":${i}}`);
        const goOrder = [...keys].sort(utf8Order);
        const mapText = (order: string[]) => `{${order.map((k) => `${goString(k)}:${valueOf(k, keys.indexOf(k))}`).join(",")}}`;
        const [span] = spansAt(site.base, 0, site.position.path);
        const canonical = splice(site.base, span!, mapText(goOrder));
        const event = decodeEvent(canonical);
        const map = valueAt(event, canonical, site.position.path) as Record<string, unknown>;
        expect(Object.getPrototypeOf(map)).toBeNull();
        expect(Object.keys(map).sort(utf8Order)).toEqual(goOrder);
        for (const k of keys) expect(Object.getOwnPropertyDescriptor(map, k)).toBeDefined();
        expect(text(encodeEvent(event))).toBe(canonical);
        // Any other order on the wire is written back in Go's.
        const other = splice(site.base, span!, mapText(reversed ? [...goOrder].reverse() : [...keys]));
        expect(text(encodeEvent(decodeEvent(other)))).toBe(canonical);
        n++;
      }),
      { numRuns: 400, seed: 3901 },
    );
    expect(({} as Record<string, unknown>).k).toBeUndefined();
    reportFigure(`go-map-keys: ${n} maps over ${mapSites.length} map positions (${mapSites.map((s) => `${s.type} ${s.position.path.join(".")} via ${s.carrier}`).join("; ")})`);
  }, 60_000);

  it("each map, given by the publisher as a plain object (JSON.parse's own __proto__ key, a computed key) or a null-prototype one: written with every key, in Go's order", () => {
    fc.assert(
      fc.property(fc.constantFrom(...mapSites.filter((s) => s.type !== "GateOpened")), keySetArb, fc.constantFrom("json", "null", "computed"), (site, keys, how) => {
        const goOrder = [...keys].sort(utf8Order);
        const entries = keys.map((k, i): [string, string] => [k, `v${i}`]);
        const given: Record<string, string> =
          how === "json"
            ? (JSON.parse(`{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(",")}}`) as Record<string, string>)
            : how === "null"
              ? Object.assign(Object.create(null) as Record<string, string>, Object.fromEntries(entries))
              : entries.reduce((o, [k, v]) => ({ ...o, [k]: v }), {} as Record<string, string>);
        expect(Object.keys(given).length).toBe(keys.length);
        const [span] = spansAt(site.base, 0, site.position.path);
        const event = thawed(decodeEvent(site.base));
        const holder = valueAt(event, site.base, site.position.path.slice(0, -1)) as Record<string, unknown>;
        const field = Object.keys(holder).find((k) => valueAt(event, site.base, site.position.path) === holder[k])!;
        holder[field] = given;
        const expected = splice(site.base, span!, `{${goOrder.map((k) => `${goString(k)}:${goString(`v${keys.indexOf(k)}`)}`).join(",")}}`);
        expect(text(encodeEvent(event))).toBe(expected);
      }),
      { numRuns: 200, seed: 3902 },
    );
  }, 60_000);

  it("each raw position, objects keyed with the same keys: the text kept byte for byte, its parsed value with each key as an own property", () => {
    expect(rawSites.length).toBeGreaterThanOrEqual(4);
    fc.assert(
      fc.property(fc.constantFrom(...rawSites), keySetArb, (site, keys) => {
        const raw = `{${keys.map((k, i) => `${goString(k)}:${i % 2 === 0 ? `{${goString(k)}:${i}}` : goString(k)}`).join(",")}}`;
        const [span] = spansAt(site.base, 0, site.position.path);
        const canonical = splice(site.base, span!, raw);
        const event = decodeEvent(canonical);
        expect(text(encodeEvent(event))).toBe(canonical);
        const value = RawJson.fromText(raw).value() as Record<string, unknown>;
        expect(Object.keys(value)).toHaveLength(keys.length);
        for (const k of keys) expect(Object.getOwnPropertyDescriptor(value, k)).toBeDefined();
        expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
        // A raw value made from a JavaScript value keeps every own key too.
        expect(Object.keys(RawJson.of(value).value() as object).sort()).toEqual([...keys].sort());
      }),
      { numRuns: 200, seed: 3903 },
    );
  }, 60_000);

  it("an event handed to publish with a top-level key that every object has (`constructor`, `toString`, an own `__proto__`) is refused as not a field, never dropped", () => {
    const event = decodeEvent<Record<string, unknown>>(written[0]!.json);
    for (const key of ["constructor", "toString", "hasOwnProperty", "__proto__", "valueOf"]) {
      const withKey = { ...event, ...(JSON.parse(`{${JSON.stringify(key)}:"x"}`) as object) };
      expect(Object.hasOwn(withKey, key)).toBe(true);
      const e = (() => {
        try {
          encodeEvent(withKey);
        } catch (err) {
          return err;
        }
        return undefined;
      })();
      expect(e, key).toBeInstanceOf(EventValidationError);
      expect((e as EventValidationError).field).toBe(key);
    }
  }, 60_000);

  it("a custom type's map: goMapSchema keeps `__proto__`; a z.record, whose validation would drop it, has it refused on reading, never lost", () => {
    const kept = defineEventType({ type: "AdvGoMap", family: "adv", class: "enduring", scope: "session", body: { meta: goMapSchema(z.string()).optional() } });
    const dropping = defineEventType({ type: "AdvZodRecord", family: "adv", class: "enduring", scope: "session", body: { meta: z.record(z.string(), z.string()).optional() } });
    const registry = defaultRegistry.with(kept).with(dropping);
    const header = `"created_at":"2026-11-29T10:15:30Z","event_id":"6f1c2a3b-4d5e-4f60-8a7b-000000000e01","meta":{"01":"b","1":"a","__proto__":"p","constructor":"c"},"session_id":"6f1c2a3b-4d5e-4f60-8a7b-000000000101"`;
    const goText = `{${header},"type":"AdvGoMap","v":1}`;
    expect(text(encodeEvent(decodeEvent(goText, { registry }), { registry }))).toBe(goText);
    const r = safeDecodeEvent(`{${header},"type":"AdvZodRecord","v":1}`, { registry });
    expect(r.success).toBe(false);
    expect(!r.success && r.error).toBeInstanceOf(EventValidationError);
    expect(!r.success && (r.error as EventValidationError).field).toBe("meta.__proto__");
    // Without that key the z.record map reads and writes as before.
    const plain = `{${header.replace('"__proto__":"p",', "")},"type":"AdvZodRecord","v":1}`;
    expect(text(encodeEvent(decodeEvent(plain, { registry }), { registry }))).toBe(plain);
  }, 60_000);
});
