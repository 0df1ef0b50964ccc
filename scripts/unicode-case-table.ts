/**
 * Generates src/wire/unicode-case-table.ts: letter case as Go 1.26 sees it, from the
 * Unicode Character Database of version 15.0.0, the version of Go's `unicode` tables.
 *
 *   npx tsx scripts/unicode-case-table.ts          # writes the table
 *   npx tsx scripts/unicode-case-table.ts --check  # exits 1 if the file differs
 *
 * The data is the devDependency `@unicode/unicode-15.0.0` (maps derived from
 * UnicodeData.txt's simple case mappings and CaseFolding.txt's C and S lines, the two files
 * Go's table generator reads). test/unit/unicode-case-table.test.ts runs this generator
 * and checks the committed file is exactly its output, so the table never drifts from its
 * source, and never comes from the JavaScript engine's own (newer, changing) tables.
 *
 * What is computed is what Go computes, rule for rule:
 * - `unicode.ToLower` (what `strings.ToLower` maps each rune with): UnicodeData's simple
 *   lower-case mapping, the rune itself where there is none;
 * - `unicode.SimpleFold`: Go's table generator builds `caseOrbit` from CaseFolding's C and
 *   S lines (each fold target with every rune folding to it), adds a one-rune orbit for a
 *   rune with a case mapping but no folding (U+0130 `İ`, U+0131 `ı`), and drops a two-rune
 *   orbit that a rune's lower and upper case already give (either way round); SimpleFold walks the orbit,
 *   else returns ToLower(r) if it differs from r, else ToUpper(r);
 * - encoding/json's `foldName` (field matching): ASCII letters to upper case, any other
 *   rune to `foldRune` of it, SimpleFold repeated until it wraps: its orbit's smallest rune.
 */
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE = "@unicode/unicode-15.0.0";
export const TABLE_PATH = join(dirname(fileURLToPath(import.meta.url)), "..", "src", "wire", "unicode-case-table.ts");

type CodeMap = ReadonlyMap<number, number>;

async function load(path: string): Promise<CodeMap> {
  return ((await import(`${PACKAGE}/${path}/code-points.mjs`)) as { default: Map<number, number> }).default;
}

export interface CaseData {
  readonly lower: CodeMap;
  readonly upper: CodeMap;
  /** CaseFolding.txt's C and S lines: rune → its simple case folding. */
  readonly fold: CodeMap;
  /** The package's own version and the Unicode version it names. */
  readonly packageName: string;
  readonly packageVersion: string;
}

export async function loadCaseData(): Promise<CaseData> {
  const pkg = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.resolve(`${PACKAGE}/package.json`))), "package.json"), "utf8")) as { name: string; version: string };
  const [lower, upper, c, s] = await Promise.all([load("Simple_Case_Mapping/Lowercase"), load("Simple_Case_Mapping/Uppercase"), load("Case_Folding/C"), load("Case_Folding/S")]);
  const fold = new Map<number, number>(c);
  for (const [k, v] of s) {
    if (fold.has(k)) throw new Error(`CaseFolding has both a C and an S line for U+${k.toString(16)}`);
    fold.set(k, v);
  }
  return { lower, upper, fold, packageName: pkg.name, packageVersion: pkg.version };
}

/** Go's caseOrbit (rune → the next rune of its orbit), built as Go's table generator builds it. */
export function caseOrbit(data: CaseData): Map<number, number> {
  const lowerOf = (r: number): number => data.lower.get(r) ?? 0;
  const upperOf = (r: number): number => data.upper.get(r) ?? 0;
  const orbits = new Map<number, number[]>();
  // Each fold target with every rune folding to it, in code point order.
  for (const r of [...data.fold.keys()].sort((a, b) => a - b)) {
    const f = data.fold.get(r)!;
    let orb = orbits.get(f);
    if (orb === undefined) orbits.set(f, (orb = [f]));
    orb.push(r);
  }
  // A rune with a case mapping but in no orbit: an orbit of its own, where assuming
  // [lower, upper] would be wrong.
  const cased = new Set([...data.lower.keys(), ...data.upper.keys()]);
  for (const r of [...cased].sort((a, b) => a - b)) {
    const f = data.fold.get(r) ?? r;
    if (!orbits.has(f) && ((upperOf(r) !== 0 && upperOf(r) !== r) || (lowerOf(r) !== 0 && lowerOf(r) !== r))) orbits.set(r, [r]);
  }
  const next = new Map<number, number>();
  for (const orb of orbits.values()) {
    // Where [lower, upper] or [upper, lower] is right, SimpleFold needs no entry.
    if (orb.length === 2 && upperOf(orb[0]!) === orb[1] && lowerOf(orb[1]) === orb[0]) continue;
    if (orb.length === 2 && upperOf(orb[1]!) === orb[0] && lowerOf(orb[0]) === orb[1]) continue;
    const sorted = [...orb].sort((a, b) => a - b);
    for (let i = 0; i < sorted.length; i++) next.set(sorted[i]!, sorted[(i + 1) % sorted.length]!);
  }
  return next;
}

/** unicode.SimpleFold, over the tables. */
export function simpleFold(data: CaseData, orbit: ReadonlyMap<number, number>, r: number): number {
  const o = orbit.get(r);
  if (o !== undefined) return o;
  const l = data.lower.get(r) ?? r;
  if (l !== r) return l;
  return data.upper.get(r) ?? r;
}

/** encoding/json's foldRune: SimpleFold repeated until it wraps, its orbit's smallest rune. */
export function foldRune(data: CaseData, orbit: ReadonlyMap<number, number>, r: number): number {
  for (;;) {
    const r2 = simpleFold(data, orbit, r);
    if (r2 <= r) return r2;
    r = r2;
  }
}

/**
 * A map as runs `[first, count, stride, delta]`: `count` runes from `first`, `stride` apart,
 * each mapped to itself plus `delta` (the form of Go's own CaseRanges, and a tenth the size).
 */
export function toRuns(map: ReadonlyMap<number, number>): number[] {
  const keys = [...map.keys()].sort((a, b) => a - b);
  const runs: number[] = [];
  for (let i = 0; i < keys.length; ) {
    const first = keys[i]!;
    const delta = map.get(first)! - first;
    let count = 1;
    let stride = 0;
    if (i + 1 < keys.length && map.get(keys[i + 1]!)! - keys[i + 1]! === delta) {
      stride = keys[i + 1]! - first;
      while (i + count < keys.length && keys[i + count]! - keys[i + count - 1]! === stride && map.get(keys[i + count]!)! - keys[i + count]! === delta) count++;
    }
    runs.push(first, count, count === 1 ? 1 : stride, delta);
    i += count;
  }
  return runs;
}

/** The runs back as a map (the table module decodes its runs the same way). */
export function fromRuns(runs: readonly number[]): Map<number, number> {
  const map = new Map<number, number>();
  for (let i = 0; i < runs.length; i += 4) {
    for (let k = 0, r = runs[i]!; k < runs[i + 1]!; k++, r += runs[i + 2]!) map.set(r, r + runs[i + 3]!);
  }
  return map;
}

/** The checksum the table carries: sha256 of its two run lists as JSON. */
export function checksumOf(lowerRuns: readonly number[], foldRuns: readonly number[]): string {
  return createHash("sha256").update(JSON.stringify({ lower: lowerRuns, fold: foldRuns })).digest("hex");
}

export interface CaseTable {
  /** Non-ASCII rune → unicode.ToLower of it, where that differs. */
  readonly lower: Map<number, number>;
  /** Non-ASCII rune → foldName's rune for it, where that differs. */
  readonly fold: Map<number, number>;
}

export function computeTable(data: CaseData): CaseTable {
  const orbit = caseOrbit(data);
  const lower = new Map<number, number>();
  for (const [r, l] of data.lower) if (r >= 0x80 && l !== r) lower.set(r, l);
  const fold = new Map<number, number>();
  const cased = new Set([...data.lower.keys(), ...data.upper.keys(), ...data.fold.keys(), ...data.fold.values(), ...orbit.keys()]);
  for (const r of cased) {
    if (r < 0x80) continue;
    const f = foldRune(data, orbit, r);
    if (f !== r) fold.set(r, f);
  }
  return { lower, fold };
}

function wrap(runs: readonly number[]): string {
  const lines: string[] = [];
  for (let i = 0; i < runs.length; i += 32) lines.push(`  ${runs.slice(i, i + 32).join(", ")},`);
  return lines.join("\n");
}

/** The whole text of src/wire/unicode-case-table.ts. */
export async function renderTable(): Promise<string> {
  const data = await loadCaseData();
  const { lower, fold } = computeTable(data);
  const lowerRuns = toRuns(lower);
  const foldRuns = toRuns(fold);
  return `/**
 * Generated by scripts/unicode-case-table.ts from ${data.packageName} ${data.packageVersion}
 * (UnicodeData.txt and CaseFolding.txt of Unicode 15.0.0, the version of Go 1.26's unicode
 * tables). Do not edit: run \`npx tsx scripts/unicode-case-table.ts\`;
 * test/unit/unicode-case-table.test.ts checks this file is exactly the generator's output.
 *
 * Each list is runs of four numbers \`first, count, stride, delta\`: \`count\` code points
 * from \`first\`, \`stride\` apart, each mapped to itself plus \`delta\`. Only code points from
 * U+0080 on, and only where the mapping is not the code point itself.
 */

/** The Unicode version the table is made from. */
export const UNICODE_VERSION = "15.0.0";

/** sha256 of \`JSON.stringify({ lower: LOWER_RUNS, fold: FOLD_RUNS })\`. */
export const CASE_TABLE_SHA256 = "${checksumOf(lowerRuns, foldRuns)}";

/** unicode.ToLower (${lower.size} code points): the simple lower-case mapping. */
export const LOWER_RUNS: readonly number[] = [
${wrap(lowerRuns)}
];

/** encoding/json's foldName rune (${fold.size} code points): the smallest rune of unicode.SimpleFold's orbit. */
export const FOLD_RUNS: readonly number[] = [
${wrap(foldRuns)}
];
`;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = await renderTable();
  if (process.argv.includes("--check")) {
    const same = readFileSync(TABLE_PATH, "utf8") === text;
    console.log(same ? "unicode-case-table.ts is the generator's output" : "unicode-case-table.ts differs from the generator's output");
    process.exit(same ? 0 : 1);
  }
  writeFileSync(TABLE_PATH, text);
  console.log(`wrote ${TABLE_PATH}`);
}
