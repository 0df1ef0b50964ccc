/**
 * The request target read as the Go handler's server reads it, before any route: Go's
 * `url.ParseRequestURI` (net/url), then Go 1.22's ServeMux (net/http `findHandler`), which
 * matches the *escaped* path, cleaned, segment by segment, and redirects (301) a path
 * that cleaning changes. WHATWG's URL reads other URLs: it cuts a `#`, resolves `%2E`
 * segments and turns `\` into `/`, so `/v1/sessions#x` or `/v1/%2E/sessions` were served
 * where the Go server answers 404, and `/v1/./sessions` was served where Go redirects.
 *
 * Node hands the target as sent, one char per byte (latin1), which is how Go sees it.
 */
import { posix } from "node:path";

export type RequestTarget =
  /** The path's segments (after the leading `/`), each unescaped on its own. */
  | { readonly kind: "path"; readonly segments: readonly string[] }
  /** ServeMux's 301 to the cleaned path (`Location`). */
  | { readonly kind: "redirect"; readonly location: string }
  /** A target Go's server refuses before any handler (400, connection closed). */
  | { readonly kind: "unreadable" }
  /** `*`: ServeMux answers 400 itself. */
  | { readonly kind: "asterisk" };

const HEX = "0123456789ABCDEF";
const isHex = (c: string | undefined) => c !== undefined && /^[0-9A-Fa-f]$/.test(c);
const isAlnum = (c: string) => /^[A-Za-z0-9]$/.test(c);

/** net/url `shouldEscape(c, encodePath)`. */
function shouldEscapeInPath(c: string): boolean {
  if (isAlnum(c) || c === "-" || c === "_" || c === "." || c === "~") return false;
  if ("$&+,/:;=?@".includes(c)) return c === "?";
  return true;
}

/** net/url `validEncoded(s, encodePath)`: the sent form may stand as the escaped path. */
function validEncoded(s: string): boolean {
  for (const c of s) {
    if ("!$&'()*+,;=:@[]%".includes(c)) continue;
    if (shouldEscapeInPath(c)) return false;
  }
  return true;
}

/** net/url `escape(s, encodePath)`, on a byte string. */
function escapePath(s: string): string {
  let out = "";
  for (const c of s) {
    const b = c.charCodeAt(0);
    out += shouldEscapeInPath(c) ? `%${HEX[b >> 4]}${HEX[b & 15]}` : c;
  }
  return out;
}

/** net/url `unescape(s, encodePath)`: every `%` needs two hex digits; `+` stays. */
function unescapePath(s: string): string | undefined {
  if (!s.includes("%")) return s;
  let out = "";
  for (let i = 0; i < s.length; i++) {
    if (s[i] !== "%") {
      out += s[i];
      continue;
    }
    if (!isHex(s[i + 1]) || !isHex(s[i + 2])) return undefined;
    out += String.fromCharCode(Number.parseInt(s.slice(i + 1, i + 3), 16));
    i += 2;
  }
  return out;
}

/** net/http `cleanPath`: path.Clean, rooted, keeping a trailing slash. */
export function goCleanPath(p: string): string {
  if (p === "") return "/";
  if (!p.startsWith("/")) p = `/${p}`;
  // posix.normalize is path.Clean for a rooted path but for a trailing slash, which it
  // keeps and Go drops; cleanPath puts it back, so the two agree on the result.
  let np = posix.normalize(p);
  if (np !== "/" && np.endsWith("/")) np = np.slice(0, -1);
  if (p.endsWith("/") && np !== "/") np += "/";
  return np;
}

// An absolute-form target's scheme and authority (`http://host:port/path`). Go reads any
// host its parser takes; this reads a name, an IPv4 or a bracketed IPv6 address with an
// optional port, and refuses the rest (stricter: no client sends one to an origin).
const ABSOLUTE = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/(?:[A-Za-z0-9._~-]*|\[[0-9A-Fa-f:.]+\])(?::\d*)?(?=\/|$)/;

/** Reads a request target (`req.url`) as Go's server and ServeMux do. */
export function readRequestTarget(raw: string): RequestTarget {
  if (raw === "*") return { kind: "asterisk" };
  // A control byte anywhere is refused (net/url `stringContainsCTLByte`).
  for (let i = 0; i < raw.length; i++) {
    const b = raw.charCodeAt(i);
    if (b < 0x20 || b === 0x7f) return { kind: "unreadable" };
  }
  // The query is everything after the first `?`; a target has no fragment, so `#` is
  // path or query text (ParseRequestURI reads it "via request").
  const q = raw.indexOf("?");
  const query = q < 0 ? "" : raw.slice(q + 1);
  let rest = q < 0 ? raw : raw.slice(0, q);
  if (!rest.startsWith("/")) {
    const absolute = ABSOLUTE.exec(rest);
    if (absolute === null) return { kind: "unreadable" };
    rest = rest.slice(absolute[0].length);
  }
  const path = unescapePath(rest);
  if (path === undefined) return { kind: "unreadable" };
  // url.URL.EscapedPath: the form sent where it is a valid escaping, else Go's own.
  const escaped = validEncoded(rest) ? rest : escapePath(path);
  const cleaned = goCleanPath(escaped);
  if (cleaned !== escaped) {
    // `(&url.URL{Path: cleaned, RawQuery: query}).String()`: the path escaped once more.
    return { kind: "redirect", location: escapePath(cleaned) + (query === "" ? "" : `?${query}`) };
  }
  const segments: string[] = [];
  for (const s of cleaned.split("/").slice(1)) {
    const u = unescapePath(s);
    if (u === undefined) return { kind: "unreadable" };
    segments.push(u);
  }
  return { kind: "path", segments };
}
