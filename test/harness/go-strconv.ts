// Go's strconv.ParseUint(s, 10, 64), strconv.ParseInt(s, 10, 64) and strconv.Atoi, as the
// Go source runs them: character by character, the cutoff checked before each multiply.
// The gateway's query parameters are tested against this model, written from Go's
// algorithm and not from the gateway's code (which reads a pattern, then a BigInt).
import fc from "fast-check";

const MAX_UINT64 = 2n ** 64n - 1n;
/** maxUint64/10 + 1: at or past it a multiply by 10 overflows (Go's cutoff). */
const CUTOFF = MAX_UINT64 / 10n + 1n;

/** strconv.ParseUint(s, 10, 64): the value, or "syntax" / "range" as Go's NumError says. */
export function parseUint64(s: string): bigint | "syntax" | "range" {
  if (s === "") return "syntax";
  let n = 0n;
  for (const c of s) {
    // Base 10 given (not 0): an underscore is no digit separator, any non-digit a syntax error.
    if (c < "0" || c > "9") return "syntax";
    if (n >= CUTOFF) return "range";
    n *= 10n;
    const n1 = n + BigInt(c.charCodeAt(0) - 48);
    if (n1 > MAX_UINT64) return "range";
    n = n1;
  }
  return n;
}

/** strconv.ParseInt(s, 10, 64), which Atoi is on a 64-bit platform. */
export function atoi(s: string): bigint | "syntax" | "range" {
  if (s === "") return "syntax";
  let neg = false;
  let rest = s;
  if (s[0] === "+" || s[0] === "-") {
    neg = s[0] === "-";
    rest = s.slice(1);
  }
  const un = parseUint64(rest);
  if (un === "syntax") return "syntax";
  const cutoff = 2n ** 63n;
  if (un === "range") return "range";
  if (!neg && un >= cutoff) return "range";
  if (neg && un > cutoff) return "range";
  return neg ? -un : un;
}

const EDGES = [0n, 1n, 2n ** 53n - 2n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 63n - 1n, 2n ** 63n, 2n ** 64n - 1n, 2n ** 64n, 10n ** 30n];

/** A number's text in the shapes a client may send it: near an edge, with a sign, zeros, spaces, separators. */
export const goNumberText: fc.Arbitrary<string> = fc
  .tuple(
    fc.oneof(
      fc.constantFrom(...EDGES).chain((e) => fc.integer({ min: -3, max: 3 }).map((d) => e + BigInt(d))),
      fc.bigInt({ min: 0n, max: 2n ** 70n }),
      fc.integer({ min: 0, max: 2000 }).map(BigInt),
    ),
    fc.constantFrom("", "", "+", "-", "--", "+-"),
    fc.constantFrom("", "", "0", "000", "0".repeat(40)),
    fc.constantFrom("", "", "", " ", "\t", "_", "e3", ".0", "x", "\u0661"),
    fc.nat({ max: 3 }),
  )
  .map(([n, sign, zeros, odd, where]) => {
    const digits = zeros + (n < 0n ? -n : n).toString();
    const signed = (n < 0n ? "-" : sign) + digits;
    // The odd character before, inside or after the number, or none.
    if (odd === "") return signed;
    if (where === 0) return odd + signed;
    if (where === 1) return signed.slice(0, 1) + odd + signed.slice(1);
    return signed + odd;
  });

