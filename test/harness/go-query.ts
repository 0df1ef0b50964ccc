// Go's url.ParseQuery (net/url, url.go: parseQuery and unescape in encodeQueryComponent
// mode), as the Go source runs it: over bytes, a first pass that validates every `%`
// before a second that decodes. The gateway's query reading (src/gateway/query.ts) is
// tested against this model, written from Go's algorithm and not from the gateway's code.
// Decoded keys and values are byte strings: one char per byte (latin1), as Go's strings hold bytes.
import fc from "fast-check";

function ishex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}

function unhex(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return 0;
}

/** unescape(s, encodeQueryComponent): the decoded bytes, or "error" (Go's EscapeError). */
export function queryUnescape(s: Uint8Array): Uint8Array | "error" {
  let n = 0;
  let hasPlus = false;
  for (let i = 0; i < s.length; ) {
    if (s[i] === 0x25) {
      n++;
      if (i + 2 >= s.length || !ishex(s[i + 1]!) || !ishex(s[i + 2]!)) return "error";
      i += 3;
    } else {
      if (s[i] === 0x2b) hasPlus = true;
      i++;
    }
  }
  if (n === 0 && !hasPlus) return s;
  const t: number[] = [];
  for (let i = 0; i < s.length; i++) {
    if (s[i] === 0x25) {
      t.push((unhex(s[i + 1]!) << 4) | unhex(s[i + 2]!));
      i += 2;
    } else t.push(s[i] === 0x2b ? 0x20 : s[i]!);
  }
  return Uint8Array.from(t);
}

function cut(s: Uint8Array, sep: number): [Uint8Array, Uint8Array, boolean] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, new Uint8Array(0), false] : [s.subarray(0, i), s.subarray(i + 1), true];
}

const bytes = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));
const text = (b: Uint8Array) => String.fromCharCode(...b);

/**
 * parseQuery(m, query), the values Go keeps (its error is what `r.URL.Query()` drops).
 * `query` is the raw query as a byte string (ASCII, as a request target is).
 */
export function parseQuery(query: string): Map<string, string[]> {
  const m = new Map<string, string[]>();
  let rest: Uint8Array = bytes(query);
  while (rest.length > 0) {
    let key: Uint8Array;
    [key, rest] = cut(rest, 0x26);
    if (key.includes(0x3b)) continue;
    if (key.length === 0) continue;
    const [k, v] = cut(key, 0x3d);
    const dk = queryUnescape(k);
    if (dk === "error") continue;
    const dv = queryUnescape(v);
    if (dv === "error") continue;
    const name = text(dk);
    m.set(name, [...(m.get(name) ?? []), text(dv)]);
  }
  return m;
}

/** url.Values.Get: the first value, "" for an absent key. */
export function valuesGet(m: Map<string, string[]>, key: string): string {
  return m.get(key)?.[0] ?? "";
}

/** A query component in the shapes that decide Go's verdict: `;`, `%` with 0-2 hex or non-hex chars, `+`, `=`. */
const part: fc.Arbitrary<string> = fc
  .array(
    fc.oneof(
      fc.constantFrom("limit", "skip", "from_journal_seq", "loop", "last_event_id", "a", "5", "0", ""),
      fc.constantFrom(";", "+", "=", "==", "%", "%2", "%zz", "%G1", "%4", "%41", "%6c", "%6C", "%3B", "%26", "%3D", "%2B", "%25", "%FF", "%e9", "%0"),
      fc.tuple(fc.constant("%"), fc.string({ unit: fc.constantFrom("0", "9", "a", "F", "g", "z", "%", "+", ";", "&"), maxLength: 2 })).map(([p, s]) => p + s),
      fc.string({ unit: fc.constantFrom("a", "l", "i", "m", "t", "1", "-", ".", "~", "#", "?", "/"), maxLength: 3 }),
    ),
    { maxLength: 5 },
  )
  .map((xs) => xs.join(""));

/** A raw query: pairs joined by `&`, with empty pairs, repeated keys and the gateway's names. */
export const goQueryText: fc.Arbitrary<string> = fc
  .array(fc.oneof(part, fc.tuple(part, part).map(([k, v]) => `${k}=${v}`), fc.constant("")), { maxLength: 6 })
  .map((pairs) => pairs.join("&"));
