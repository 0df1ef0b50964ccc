// Go's reading of a request target before a handler runs, as the Go source runs it, over
// bytes: net/url `ParseRequestURI` (parse "via request": no fragment, the query after the
// first `?`, `setPath` with `unescape(…, encodePath)`), `URL.EscapedPath` (`validEncoded`,
// `escape`), and net/http ServeMux's `findHandler` for a non-CONNECT request: `cleanPath`
// (path.Clean with its lazy buffer, the trailing slash put back) of the escaped path, a 301
// to `(&url.URL{Path: cleaned, RawQuery: q}).String()` where cleaning changed it, else the
// cleaned path's segments, each unescaped. The gateway (src/gateway/request-target.ts) is
// tested against this model, written from Go's algorithms and not from the gateway's code.
// Only origin-form targets (`/…`) are modelled; the generator makes no other.
import fc from "fast-check";

export type GoTarget = { kind: "path"; segments: string[] } | { kind: "redirect"; location: string } | { kind: "unreadable" };

const ishex = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
const unhex = (c: number) => (c <= 0x39 ? c - 0x30 : c <= 0x46 ? c - 0x41 + 10 : c - 0x61 + 10);

/** net/url shouldEscape(c, encodePath). */
function shouldEscape(c: number): boolean {
  if ((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39)) return false;
  switch (String.fromCharCode(c)) {
    case "-":
    case "_":
    case ".":
    case "~":
      return false;
    case "$":
    case "&":
    case "+":
    case ",":
    case "/":
    case ":":
    case ";":
    case "=":
    case "?":
    case "@":
      return c === 0x3f;
  }
  return true;
}

/** unescape(s, encodePath): the decoded bytes, or undefined for Go's EscapeError. */
function unescape(s: string): string | undefined {
  for (let i = 0; i < s.length; ) {
    if (s.charCodeAt(i) === 0x25) {
      if (i + 2 >= s.length || !ishex(s.charCodeAt(i + 1)) || !ishex(s.charCodeAt(i + 2))) return undefined;
      i += 3;
    } else i++;
  }
  let t = "";
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) === 0x25) {
      t += String.fromCharCode((unhex(s.charCodeAt(i + 1)) << 4) | unhex(s.charCodeAt(i + 2)));
      i += 2;
    } else t += s[i];
  }
  return t;
}

function escape(s: string): string {
  let t = "";
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    t += shouldEscape(c) ? "%" + "0123456789ABCDEF"[c >> 4]! + "0123456789ABCDEF"[c & 15]! : s[i];
  }
  return t;
}

/** validEncoded(s, encodePath). */
function validEncoded(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    switch (s[i]) {
      case "!":
      case "$":
      case "&":
      case "'":
      case "(":
      case ")":
      case "*":
      case "+":
      case ",":
      case ";":
      case "=":
      case ":":
      case "@":
      case "[":
      case "]":
      case "%":
        continue;
      default:
        if (shouldEscape(s.charCodeAt(i))) return false;
    }
  }
  return true;
}

/** path.Clean. */
function clean(path: string): string {
  if (path === "") return ".";
  const rooted = path[0] === "/";
  const n = path.length;
  // lazybuf: the bytes written so far are buf[0, w); a byte past w may still be read.
  const buf: string[] = [];
  let w = 0;
  const append = (c: string) => {
    buf[w++] = c;
  };
  let r = 0;
  let dotdot = 0;
  if (rooted) {
    append("/");
    r = 1;
    dotdot = 1;
  }
  while (r < n) {
    if (path[r] === "/") r++;
    else if (path[r] === "." && (r + 1 === n || path[r + 1] === "/")) r++;
    else if (path[r] === "." && path[r + 1] === "." && (r + 2 === n || path[r + 2] === "/")) {
      r += 2;
      if (w > dotdot) {
        w--;
        while (w > dotdot && buf[w] !== "/") w--;
      } else if (!rooted) {
        if (w > 0) append("/");
        append(".");
        append(".");
        dotdot = w;
      }
    } else {
      if ((rooted && w !== 1) || (!rooted && w !== 0)) append("/");
      for (; r < n && path[r] !== "/"; r++) append(path[r]!);
    }
  }
  return w === 0 ? "." : buf.slice(0, w).join("");
}

/** net/http cleanPath. */
function cleanPath(p: string): string {
  if (p === "") return "/";
  if (p[0] !== "/") p = "/" + p;
  let np = clean(p);
  if (p[p.length - 1] === "/" && np !== "/") np = p.length === np.length + 1 && p.startsWith(np) ? p : np + "/";
  return np;
}

/** An origin-form target as Go's server and ServeMux read it. */
export function goReadTarget(raw: string): GoTarget {
  const q = raw.indexOf("?");
  const rest = q < 0 ? raw : raw.slice(0, q);
  const rawQuery = q < 0 ? "" : raw.slice(q + 1);
  const path = unescape(rest);
  if (path === undefined) return { kind: "unreadable" };
  // setPath keeps RawPath only where the sent form differs from Go's escaping of the path.
  const rawPath = escape(path) === rest ? "" : rest;
  const escapedPath = rawPath !== "" && validEncoded(rawPath) && unescape(rawPath) === path ? rawPath : escape(path);
  const cleaned = cleanPath(escapedPath);
  if (cleaned !== escapedPath) return { kind: "redirect", location: escape(cleaned) + (rawQuery === "" ? "" : "?" + rawQuery) };
  const segments: string[] = [];
  for (const s of cleaned.split("/").slice(1)) {
    const u = unescape(s);
    if (u === undefined) return { kind: "unreadable" };
    segments.push(u);
  }
  return { kind: "path", segments };
}

/**
 * Origin-form targets from the family the rules cover: the route's own segments, dot and
 * escaped-dot segments, empty segments (doubled and trailing slashes), escaped slashes,
 * `#`, bad and good escapes, characters Go escapes and ones it leaves, a latin1 byte,
 * and a query after the first `?` (itself holding `?`, `#`, `/..`).
 */
export const goTargetText: fc.Arbitrary<string> = fc
  .tuple(
    fc.array(
      fc.constantFrom(
        "v1", "sessions", "capabilities", "00000000-0000-0000-0000-000000000001", "status", "journal", "events",
        ".", "..", "", "%2E", "%2e", "%2E%2E", "%2F", "%2f", "a%2Fb", "#", "sessions#x", "%23", "%zz", "%4", "%",
        "%41", "%25", "a%20b", "{", "}", "\\", "|", "^", "`", "\u00e9", "+", "!", "'", "(", "*", ";", ":", "@", "[", "~", "=", "&", "$", ",",
      ),
      { maxLength: 6 },
    ),
    fc.boolean(),
    fc.option(fc.constantFrom("", "limit=1", "a=/../b", "x#y", "?", "%zz", "skip=0&limit=2"), { nil: undefined }),
  )
  .map(([segments, trailing, query]) => "/" + segments.join("/") + (trailing ? "/" : "") + (query === undefined ? "" : "?" + query));
