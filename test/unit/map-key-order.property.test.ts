/**
 * Every Go map is written with its keys sorted by their UTF-8 bytes (encoding/json sorts a
 * map's keys with strings.Compare before writing it). UTF-16 code unit order, which
 * JavaScript's sort() gives, differs as soon as one key holds a character from
 * U+E000–U+FFFF and another a character past U+FFFF (a surrogate pair sorts below U+E000 in
 * UTF-16, above it in UTF-8).
 *
 * Checked on every map the Go-written events hold (a gate's response values, a form
 * audit's values, a manifest's app_fields), with keys drawn across the Unicode planes,
 * against the rule computed from the bytes themselves (Buffer.compare of the UTF-8).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeEvent, encodeEvent, safeDecodeEvent } from "../../src/codec/codec.js";
import { thawed } from "./fixtures.js";
import { EventEncodeError } from "../../src/errors.js";
import { goString } from "../../src/wire/wire.js";
import { type GoWritten, readJsonl } from "../conformance/go-oracle.js";
import { reportFigure } from "../harness/figures-log.js";

const written = readJsonl<GoWritten>("go-written-events.jsonl");

/** Each Go map in a Go-written event: its text's bounds. */
interface MapSite {
  readonly id: string;
  readonly json: string;
  readonly start: number;
  readonly end: number;
}

const MAP_KEYS = ['"app_fields":{', '"values":{'];
const sites: MapSite[] = written.flatMap((w) =>
  MAP_KEYS.flatMap((k) => {
    const at = w.json.indexOf(k);
    if (at < 0) return [];
    const start = at + k.length - 1;
    return [{ id: w.id, json: w.json, start, end: w.json.indexOf("}", start) + 1 }];
  }),
);

/** Characters from every region whose order differs between UTF-16 and UTF-8, and around. */
const charArb = fc.oneof(
  fc.constantFrom("a", "b", "Z", "_", "0", "é", "ß", "Ω", "ж", "日", "\u07ff", "\u0800", "\ud7ff"),
  // U+E000–U+FFFF: private use, fullwidth forms (Ａ has a case), U+FFFD, U+FFFF.
  fc.integer({ min: 0xe000, max: 0xffff }).map((cp) => String.fromCodePoint(cp)),
  fc.constantFrom("\uff21", "\uff41", "\ufffd", "\uffff", "\ue000"),
  // Past U+FFFF: emoji, mathematical letters, CJK extension B, Deseret (which has a case).
  fc.integer({ min: 0x10000, max: 0x10ffff }).map((cp) => String.fromCodePoint(cp)),
  fc.constantFrom("\u{1f600}", "\u{1d400}", "\u{20000}", "\u{10400}", "\u{10428}", "\u{10ffff}"),
);
const keyArb = fc.array(charArb, { minLength: 1, maxLength: 4 }).map((cs) => cs.join(""));

const utf8Order = (a: string, b: string): number => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));

/** The site's event with its map replaced by `keys` (each value a string naming its key) in the given order. */
function withMap(site: MapSite, keys: readonly string[]): string {
  const body = keys.map((k) => `${goString(k)}:${goString(`value of ${k}`)}`).join(",");
  return `${site.json.slice(0, site.start)}{${body}}${site.json.slice(site.end)}`;
}

describe("Go maps are written with keys in UTF-8 byte order", () => {
  it("every map of the Go-written events, keys across the planes: Go's text reads and writes back byte for byte, any other order is written in Go's", () => {
    expect(sites.map((s) => s.id).sort()).toEqual(["GateOpened/ask-user-schema", "GateResolved/session-form-audit", "SessionStarted/manifest-v3-internal"]);
    let differ = 0;
    let n = 0;
    fc.assert(
      fc.property(fc.constantFrom(...sites), fc.uniqueArray(keyArb, { minLength: 2, maxLength: 8 }), fc.boolean(), (site, keys, reverse) => {
        const goOrder = [...keys].sort(utf8Order);
        const jsOrder = [...keys].sort();
        if (goOrder.join("\0") !== jsOrder.join("\0")) differ++;
        const canonical = withMap(site, goOrder);
        const r = safeDecodeEvent(canonical);
        // Keys Go's strings.ToLower makes equal are refused (Ａ and ａ, 𐐀 and 𐐨): another rule.
        if (!r.success) {
          expect("reason" in r.error && r.error.reason).toBe("letter_case_key");
          return;
        }
        n++;
        expect(new TextDecoder().decode(encodeEvent(r.data)), JSON.stringify(goOrder)).toBe(canonical);
        const other = withMap(site, reverse ? [...goOrder].reverse() : jsOrder);
        expect(new TextDecoder().decode(encodeEvent(decodeEvent(other))), JSON.stringify([goOrder, reverse])).toBe(canonical);
      }),
      { numRuns: 800, seed: 39 },
    );
    reportFigure(`map-key-order: ${n} maps written in Go's order, ${differ} of the generated key sets ordered differently by UTF-16 code units`);
    expect(differ).toBeGreaterThan(100);
    expect(n).toBeGreaterThan(500);
  }, 60_000);

  it("U+E000–U+FFFF against a surrogate pair, in each map: Go's order, not JavaScript's", () => {
    for (const site of sites) {
      const canonical = withMap(site, ["\u{1f600}", "\ufffd"].sort(utf8Order));
      expect(canonical.indexOf("\ufffd")).toBeLessThan(canonical.indexOf("\u{1f600}"));
      expect(new TextDecoder().decode(encodeEvent(decodeEvent(canonical)))).toBe(canonical);
    }
  });

  it("keys that would be written as one key (lone surrogates, each written U+FFFD) are refused by the writer, as the reader refuses the duplicate", () => {
    const site = sites.find((s) => s.id === "SessionStarted/manifest-v3-internal")!;
    const event = thawed(decodeEvent<{ manifest: { appFields: Record<string, string> } }>(site.json));
    event.manifest.appFields = { "a\ud800": "x", "a\udc00": "y" };
    expect(() => encodeEvent(event)).toThrow(EventEncodeError);
    event.manifest.appFields = { "a\ud800": "x", b: "y" };
    expect(new TextDecoder().decode(encodeEvent(event))).toContain('"app_fields":{"a\ufffd":"x","b":"y"}');
  });
});
