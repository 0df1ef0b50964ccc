/**
 * Letter case comes from the Unicode 15.0.0 table the project carries (Go 1.26's unicode
 * tables are 15.0.0), never from the JavaScript engine, whose tables follow Node's Unicode
 * version (17.0 on the Node 20 of this repository's machines).
 *
 * - The committed table is exactly what scripts/unicode-case-table.ts makes of the
 *   devDependency @unicode/unicode-15.0.0, and carries its own checksum.
 * - That data is Unicode 15.0.0, and the SimpleFold orbits built from it are Go's: as many
 *   fold pairs as Go's generated unicode/tables.go has (88), the same known orbits.
 * - Every code point whose Unicode 15 case differs from the engine's (derived by comparing
 *   the two over all of Unicode, not listed by hand) is mapped as the table says, by
 *   goLower, goFold and the whole reader.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { marshalEvent, safeDecodeEvent, unmarshalEvent } from "../../src/codec/codec.js";
import { goFold, goLower } from "../../src/wire/go-fold.js";
import { CASE_TABLE_SHA256, FOLD_RUNS, LOWER_RUNS, UNICODE_VERSION } from "../../src/wire/unicode-case-table.js";
import { caseOrbit, checksumOf, fromRuns, loadCaseData, renderTable, TABLE_PATH } from "../../scripts/unicode-case-table.js";
import { type GoWritten, readJsonl } from "../conformance/go-oracle.js";
import { reportFigure } from "../harness/figures-log.js";

const lowerTable = fromRuns(LOWER_RUNS);
const foldTable = fromRuns(FOLD_RUNS);
/** Code points some other code point folds onto (an orbit's smallest): cased, though they fold to themselves. */
const foldsOnto = new Set(foldTable.values());
const str = (cp: number): string => String.fromCodePoint(cp);

/** Every Unicode scalar value from U+0080 on. */
function* nonAscii(): Generator<number> {
  for (let cp = 0x80; cp <= 0x10ffff; cp++) if (cp < 0xd800 || cp > 0xdfff) yield cp;
}

/** The engine's own simple mapping of one code point: its toLowerCase when that is one code point. */
function engineLower(cp: number): number {
  const s = str(cp).toLowerCase();
  const c = s.codePointAt(0)!;
  return s.length === (c > 0xffff ? 2 : 1) ? c : cp;
}

describe("the Unicode 15.0.0 case table", () => {
  it("is exactly the generator's output from @unicode/unicode-15.0.0, and its checksum is its own", async () => {
    expect(readFileSync(TABLE_PATH, "utf8")).toBe(await renderTable());
    expect(checksumOf(LOWER_RUNS, FOLD_RUNS)).toBe(CASE_TABLE_SHA256);
    // Pinned here too: a changed table is a change to review, not a regenerated file.
    expect(CASE_TABLE_SHA256).toBe("09c68d9d92d4cd054688cc06567bfb539a9cad26a1988aa52ff8b4646c98fb6d");
    expect(UNICODE_VERSION).toBe("15.0.0");
  }, 30_000);

  it("is made from Unicode 15.0.0 data: what 14.0 added is there, what 16.0 added is not, and the fold orbits are Go's", async () => {
    const data = await loadCaseData();
    expect(data.packageName).toBe("@unicode/unicode-15.0.0");
    // UnicodeData.txt 15.0.0: 1,433 simple lower-case and 1,450 upper-case mappings.
    expect([data.lower.size, data.upper.size]).toEqual([1433, 1450]);
    expect(data.lower.get(0xa7c0)).toBe(0xa7c1); // LATIN CAPITAL LETTER OLD POLISH O, Unicode 14.0
    expect(data.lower.get(0x1c89)).toBeUndefined(); // CYRILLIC CAPITAL LETTER TJE, Unicode 16.0
    expect(data.lower.get(0xa7cb)).toBeUndefined(); // LATIN CAPITAL LETTER RAMS HORN, Unicode 16.0
    expect(data.lower.get(0x10d50)).toBeUndefined(); // GARAY CAPITAL LETTER A, Unicode 16.0
    // CaseFolding.txt's C and S lines (the ones Go's generator reads); ẞ folds to ß (S).
    expect(data.fold.get(0x1e9e)).toBe(0xdf);
    expect(data.fold.get(0x130)).toBeUndefined(); // İ has only T and F lines
    // Go's unicode/tables.go (Unicode 15.0.0) ends: "Fold orbit bytes: 88 pairs".
    const orbit = caseOrbit(data);
    expect(orbit.size).toBe(88);
    const pairs = [[0x4b, 0x6b], [0x6b, 0x212a], [0x212a, 0x4b], [0x130, 0x130], [0x131, 0x131], [0xdf, 0x1e9e], [0x1e9e, 0xdf], [0x1c88, 0xa64a], [0xa64b, 0x1c88], [0x3c2, 0x3c3]];
    for (const [from, to] of pairs) expect(orbit.get(from!), from!.toString(16)).toBe(to);
    // Cherokee's two-rune orbits are its upper and lower case the other way round: no entry.
    expect(orbit.has(0x13a0)).toBe(false);
  }, 30_000);

  it("every code point whose lower case differs between Unicode 15 and the engine is lower-cased by the table, in keys too", () => {
    const differs = [...nonAscii()].filter((cp) => engineLower(cp) !== (lowerTable.get(cp) ?? cp));
    reportFigure(`unicode-case-table: ${differs.length} code points lower-case differently in the engine (Unicode ${process.versions.unicode}) and in Go's Unicode 15.0.0`);
    // İ alone differs on any engine: toLowerCase's full mapping adds a combining dot.
    expect(differs).toContain(0x130);
    expect(differs.filter((cp) => goLower(str(cp)) !== str(lowerTable.get(cp) ?? cp))).toEqual([]);
  }, 30_000);

  it("every code point folds by the table (foldName), whether or not the engine has a case for it", () => {
    // Code points the engine gives a case (a single-code-point lower or upper case other
    // than themselves) that Go folds with nothing, and the other way round.
    const engineCased = (cp: number): boolean => {
      const u = str(cp).toUpperCase();
      return engineLower(cp) !== cp || (u !== str(cp) && u.length === str(cp).length);
    };
    const wrong: number[] = [];
    let differs = 0;
    for (const cp of nonAscii()) {
      const own = foldTable.get(cp);
      const s = str(cp);
      if (goFold(s) !== (own === undefined ? s : str(own))) wrong.push(cp);
      if (engineCased(cp) !== (own !== undefined || foldsOnto.has(cp))) differs++;
    }
    reportFigure(`unicode-case-table: ${differs} code points have a case in the engine (Unicode ${process.versions.unicode}) and none in Go's Unicode 15.0.0 folding, or the other way round`);
    expect(wrong).toEqual([]);
    expect(differs).toBeGreaterThan(0);
  }, 30_000);
});

describe("keys Go keeps apart and the engine would merge", () => {
  const written = readJsonl<GoWritten>("go-written-events.jsonl");
  const base = written.find((w) => w.json.includes('"Input":{"command":"npm test"}'))!;
  /** The Go-written event with its tool input replaced by an object of `keys`. */
  const withKeys = (keys: readonly string[]): string =>
    base.json.replace('"Input":{"command":"npm test"}', () => `"Input":{${keys.map((k, i) => `${JSON.stringify(k)}:${i}`).join(",")}}`);

  it("a key pair that differs only by a code point and the engine's lower case of it: refused exactly when Go's strings.ToLower makes them equal", () => {
    const pairs = [...nonAscii()].filter((cp) => engineLower(cp) !== cp).map((cp) => [cp, engineLower(cp)] as const);
    let kept = 0;
    let refused = 0;
    for (const [a, b] of pairs) {
      const text = withKeys([`k${str(a)}`, `k${str(b)}`]);
      const goEqual = (lowerTable.get(a) ?? a) === (lowerTable.get(b) ?? b);
      const r = safeDecodeEvent(text);
      if (goEqual) {
        expect(r.success, a.toString(16)).toBe(false);
        if (!r.success) expect("reason" in r.error && r.error.reason).toBe("letter_case_key");
        refused++;
      } else {
        expect(r.success, a.toString(16)).toBe(true);
        // Both keys kept, in their order, and written back byte for byte.
        expect(new TextDecoder().decode(marshalEvent(unmarshalEvent(text)))).toBe(text);
        kept++;
      }
    }
    reportFigure(`unicode-case-table: ${pairs.length} engine case pairs as keys: ${refused} refused as Go refuses them, ${kept} kept apart as Go keeps them`);
    expect(refused).toBeGreaterThan(1000);
    // U+1C89/U+1C8A, U+A7CB..U+A7DC and Garay are case pairs only from Unicode 16 on.
    if (engineLower(0x1c89) === 0x1c8a) expect(kept).toBeGreaterThanOrEqual(50);
  }, 60_000);

  it("named pairs Node 20 folds and Go 1.26 does not: U+1C89/U+1C8A, U+A7CB/U+0264, Garay U+10D50/U+10D70", () => {
    for (const [a, b] of [[0x1c89, 0x1c8a], [0xa7cb, 0x264], [0xa7dc, 0x19b], [0x10d50, 0x10d70]] as const) {
      expect(goLower(str(a))).toBe(str(a));
      expect(goFold(str(a))).not.toBe(goFold(str(b)));
      const text = withKeys([str(a), str(b)]);
      expect(new TextDecoder().decode(marshalEvent(unmarshalEvent(text)))).toBe(text);
    }
  }, 30_000);
});
