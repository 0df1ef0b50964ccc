/**
 * Letter case as Go's encoding/json and the runtime's duplicate-key check see it.
 *
 * - `goFold` is encoding/json's foldName: how a key is matched to a struct field when it
 *   is not the field's exact name. ASCII letters fold to upper case; every other code
 *   point to the smallest code point of its simple case folding class (unicode.SimpleFold's
 *   orbit), so `ſ` (U+017F) folds with `s` and `K` (U+212A, Kelvin) with `k`.
 * - `goLower` is strings.ToLower (unicode.ToLower per code point, the simple mapping): the
 *   runtime's UnmarshalEvent refuses two keys of one object whose ToLower is equal, at
 *   every depth.
 *
 * JavaScript's own toLowerCase uses full mappings and context (`İ` → `i̇`, a final `Σ` →
 * `ς`), so both are computed one code point at a time, in isolation.
 */

/** Code point → the smallest member of its case folding class, for the non-ASCII ones that have one. */
let foldTable: Map<number, number> | undefined;

/** The largest code point with a case mapping (Adlam) and a little room. */
const LAST_CASED = 0x1e95f;

function singleCodePoint(s: string): number | undefined {
  const cp = s.codePointAt(0)!;
  return s.length === (cp > 0xffff ? 2 : 1) ? cp : undefined;
}

/**
 * Built once, on the first non-ASCII key: the classes linked by each code point's simple
 * lower and upper case (a union-find over the whole cased range), each mapped to its
 * smallest member. Simple mappings are the single-code-point results of toLowerCase and
 * toUpperCase; U+0130 `İ` and U+0131 `ı` (a case mapping to `i`/`I` but no case folding:
 * unicode.SimpleFold returns each unchanged) stay alone, as foldName leaves them matching
 * only themselves.
 */
function buildFoldTable(): Map<number, number> {
  const parent = new Map<number, number>();
  const find = (x: number): number => {
    let r = x;
    while (parent.has(r) && parent.get(r) !== r) r = parent.get(r)!;
    let c = x;
    while (c !== r) {
      const next = parent.get(c)!;
      parent.set(c, r);
      c = next;
    }
    return r;
  };
  const union = (a: number, b: number): void => {
    const ra = find(a);
    const rb = find(b);
    if (ra === rb) return;
    // The smaller code point is the root: a class's root is its smallest member.
    if (ra < rb) parent.set(rb, ra);
    else parent.set(ra, rb);
    if (!parent.has(ra)) parent.set(ra, ra);
    if (!parent.has(rb)) parent.set(rb, rb);
  };
  for (let cp = 0x41; cp <= LAST_CASED; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    if (cp === 0x130 || cp === 0x131) continue;
    const s = String.fromCodePoint(cp);
    const lower = singleCodePoint(s.toLowerCase());
    const upper = singleCodePoint(s.toUpperCase());
    if (lower !== undefined && lower !== cp) union(cp, lower);
    if (upper !== undefined && upper !== cp) union(cp, upper);
  }
  const table = new Map<number, number>();
  for (const cp of parent.keys()) if (cp >= 0x80) table.set(cp, find(cp));
  return table;
}

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
    foldTable ??= buildFoldTable();
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
    if (cp === 0x130) {
      out += "i"; // İ: its simple lower case; the full mapping adds a combining dot
      continue;
    }
    const lower = ch.toLowerCase();
    out += singleCodePoint(lower) !== undefined ? lower : ch;
  }
  return out;
}
