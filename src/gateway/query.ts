/**
 * The query string, read as the Go handler reads it: `r.URL.Query()`, which is
 * `url.ParseQuery` with its error dropped. A pair Go cannot decode is not an error there,
 * it is absent, so the parameter takes its default. WHATWG's URLSearchParams keeps such
 * pairs (it leaves a bad escape as text and splits on `&` alone, keeping `;` in the pair),
 * and the gateway then answered 400 to a URL the Go handler serves.
 *
 * Go works on bytes: a decoded key or value here is a "byte string", one char per byte
 * (code 0..255). The names the gateway reads and every value it accepts are ASCII, for
 * which the two agree; a non-ASCII byte never equals an ASCII one, as in Go.
 */

/** The parameters a request names, `Get` as Go's `url.Values.Get`: the first value of a key. */
export interface QueryParams {
  /** The first value of `name`, or null where no pair decoded to that key. */
  get(name: string): string | null;
}

const HEX = /^[0-9A-Fa-f]{2}$/;

/**
 * Go's `unescape(s, encodeQueryComponent)`: `+` is a space, `%` must be followed by two
 * hex digits (else the whole component is an error: undefined), every other char is kept.
 */
export function goQueryUnescape(s: string): string | undefined {
  if (!s.includes("%") && !s.includes("+")) return s;
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === "%") {
      const hex = s.slice(i + 1, i + 3);
      if (!HEX.test(hex)) return undefined;
      out += String.fromCharCode(Number.parseInt(hex, 16));
      i += 2;
    } else out += c === "+" ? " " : c;
  }
  return out;
}

/**
 * Go's `url.ParseQuery(raw)` without its error: pairs split on `&` only; a pair holding a
 * `;` is dropped (Go stopped splitting on it and refuses it), an empty pair is skipped, a
 * pair without `=` is a key with an empty value, and a pair whose key or value does not
 * unescape is dropped. Keys keep every value in order; the empty key is a key.
 */
export function goParseQuery(raw: string): Map<string, string[]> {
  const values = new Map<string, string[]>();
  for (const pair of raw.split("&")) {
    if (pair === "" || pair.includes(";")) continue;
    const eq = pair.indexOf("=");
    const key = goQueryUnescape(eq < 0 ? pair : pair.slice(0, eq));
    if (key === undefined) continue;
    const value = goQueryUnescape(eq < 0 ? "" : pair.slice(eq + 1));
    if (value === undefined) continue;
    const list = values.get(key);
    if (list === undefined) values.set(key, [value]);
    else list.push(value);
  }
  return values;
}

/**
 * The raw query of a request target as Go's `ParseRequestURI` cuts it: everything after
 * the first `?`. A request target has no fragment (browsers strip it), so a `#` is query
 * text, as in Go; WHATWG's URL would cut there.
 */
export function rawQueryOf(target: string): string {
  const q = target.indexOf("?");
  return q < 0 ? "" : target.slice(q + 1);
}

/** The request's parameters as the Go handler's `r.URL.Query().Get` reads them. */
export function goQuery(target: string): QueryParams {
  const values = goParseQuery(rawQueryOf(target));
  return { get: (name) => values.get(name)?.[0] ?? null };
}
