/**
 * Letter case as Go's encoding/json and the runtime's duplicate-key check see it, from
 * Go's own tables: Unicode 15.0.0 (`unicode-case-table.ts`, generated from that version's
 * data by scripts/unicode-case-table.ts), never the JavaScript engine's, whose Unicode
 * version follows Node's (Node 20 here has 17.0: U+1C89 lower-cases to U+1C8A there, and
 * to itself in Go 1.26).
 *
 * - `goFold` is encoding/json's foldName: how a key is matched to a struct field when it
 *   is not the field's exact name. ASCII letters fold to upper case; every other code
 *   point to foldRune of it, the smallest code point of its unicode.SimpleFold orbit, so
 *   `ſ` (U+017F) folds with `s` and `K` (U+212A, Kelvin) with `k`, while `İ` (U+0130) and
 *   `ı` (U+0131) fold with nothing.
 * - `goLower` is strings.ToLower: unicode.ToLower per code point, the simple mapping of
 *   UnicodeData.txt (`İ` → `i`, no context: a final `Σ` is `σ`). The runtime's
 *   UnmarshalEvent refuses two keys of one object whose ToLower is equal, at every depth.
 */
import { FOLD_RUNS, LOWER_RUNS } from "./unicode-case-table.js";

/** A table's runs (`first, count, stride, delta`) as a map, built on the first non-ASCII key. */
function decodeRuns(runs: readonly number[]): Map<number, number> {
  const map = new Map<number, number>();
  for (let i = 0; i < runs.length; i += 4) {
    for (let k = 0, r = runs[i]!; k < runs[i + 1]!; k++, r += runs[i + 2]!) map.set(r, r + runs[i + 3]!);
  }
  return map;
}

let foldTable: Map<number, number> | undefined;
let lowerTable: Map<number, number> | undefined;

function isPlainAscii(s: string, upperOk: boolean): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80 || (!upperOk && c >= 0x41 && c <= 0x5a) || (upperOk && c >= 0x61 && c <= 0x7a)) return false;
  }
  return true;
}

/** encoding/json's foldName: equal for two keys exactly when Go matches one to the other. */
export function goFold(key: string): string {
  if (isPlainAscii(key, true)) return key;
  let out = "";
  for (const ch of key) {
    const cp = ch.codePointAt(0)!;
    if (cp < 0x80) {
      out += cp >= 0x61 && cp <= 0x7a ? String.fromCharCode(cp - 0x20) : ch;
      continue;
    }
    foldTable ??= decodeRuns(FOLD_RUNS);
    const folded = foldTable.get(cp);
    out += folded === undefined ? ch : String.fromCodePoint(folded);
  }
  return out;
}

/** strings.ToLower as Go computes it: per code point, the simple lower-case mapping. */
export function goLower(key: string): string {
  if (isPlainAscii(key, false)) return key;
  let out = "";
  for (const ch of key) {
    const cp = ch.codePointAt(0)!;
    if (cp < 0x80) {
      out += cp >= 0x41 && cp <= 0x5a ? String.fromCharCode(cp + 0x20) : ch;
      continue;
    }
    lowerTable ??= decodeRuns(LOWER_RUNS);
    const lower = lowerTable.get(cp);
    out += lower === undefined ? ch : String.fromCodePoint(lower);
  }
  return out;
}
