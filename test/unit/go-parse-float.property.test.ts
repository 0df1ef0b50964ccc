/**
 * Go's strconv.ParseFloat on very long number text, where it is not correctly rounded:
 * an exponent stops accumulating once it reaches 10,000 (its loop: `if e < 10000 { e =
 * e*10 + digit }`), and the slow path's decimal holds 800 digits and sets its point from
 * the digits it holds (`b.dp = b.nd`). The range verdict (a number Go reads as past float64
 * refuses the event wherever it stands) must be Go's: checked against a line-by-line
 * transcription of atof.go's `decimal.set`, compared exactly (BigInt) with 2^1024 - 2^970,
 * over generated texts in both families and around them.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RawJson } from "../../src/wire/raw-json.js";
import { StrictJsonError } from "../../src/wire/strict-json.js";
import { reportFigure } from "../harness/figures-log.js";

const OVERFLOW_AT = 2n ** 1024n - 2n ** 970n;

/** atof.go's decimal.set, transcribed: the digits held (at most 800), the point, whether digits were dropped. */
function goDecimal(s: string): { d: string; dp: number } {
  let i = 0;
  let nd = 0;
  let dp = 0;
  let d = "";
  if (s[i] === "-") i++;
  let sawdot = false;
  for (; i < s.length; i++) {
    const c = s[i]!;
    if (c === ".") {
      sawdot = true;
      dp = nd;
      continue;
    }
    if (c >= "0" && c <= "9") {
      if (c === "0" && nd === 0) {
        dp--;
        continue;
      }
      if (nd < 800) {
        d += c;
        nd++;
      }
      continue;
    }
    break;
  }
  if (!sawdot) dp = nd;
  if (i < s.length && (s[i] === "e" || s[i] === "E")) {
    i++;
    let esign = 1;
    if (s[i] === "+") i++;
    else if (s[i] === "-") {
      i++;
      esign = -1;
    }
    let e = 0;
    for (; i < s.length; i++) if (e < 10000) e = e * 10 + Number(s[i]);
    dp += e * esign;
  }
  return { d, dp };
}

/** Whether the slow path overflows: 0.d × 10^dp ≥ 2^1024 - 2^970 (digits beyond 800 only raise it, never to a tie). */
function goOverflowsRef(s: string, dropped: boolean): boolean {
  const { d, dp } = goDecimal(s);
  if (d.replace(/0/g, "") === "") return false;
  if (dp > 400) return true;
  if (dp < 300) return false;
  const exp = dp - d.length;
  const value = BigInt(d);
  const atLeast = exp >= 0 ? value * 10n ** BigInt(exp) >= OVERFLOW_AT : value >= OVERFLOW_AT * 10n ** BigInt(-exp);
  const equal = exp >= 0 ? value * 10n ** BigInt(exp) === OVERFLOW_AT : value === OVERFLOW_AT * 10n ** BigInt(-exp);
  return atLeast || (equal && dropped);
}

const verdict = (s: string): "ok" | "range" => {
  try {
    RawJson.fromText(`[${s}]`);
    return "ok";
  } catch (e) {
    expect(e).toBeInstanceOf(StrictJsonError);
    expect((e as StrictJsonError).reason).toBe("number_out_of_range");
    return "range";
  }
};

/** Long integer parts (past 800 digits) with exponents that bring them back into range or not. */
const longIntegerArb = fc
  .tuple(fc.integer({ min: 780, max: 1400 }), fc.stringMatching(/^[1-9][0-9]{0,3}$/), fc.constantFrom("0", "9", "3"), fc.integer({ min: -1200, max: 20 }), fc.option(fc.stringMatching(/^[0-9]{1,4}$/), { nil: undefined }))
  .map(([n, head, fill, exp, frac]) => `${head}${fill.repeat(n - head.length)}${frac !== undefined ? `.${frac}` : ""}e${exp}`);
/** Exponents of 5 to 8 significant digits, with leading zeros in the fraction to bring them near the range. */
const longExponentArb = fc
  .tuple(fc.integer({ min: 0, max: 120_000 }), fc.stringMatching(/^[1-9][0-9]{0,2}$/), fc.integer({ min: 9_990, max: 130_000 }), fc.constantFrom("", "0", "000"))
  .map(([zeros, digits, exp, pad]) => `0.${"0".repeat(zeros)}${digits}e${pad}${exp}`);

describe("numbers past float64 as Go's ParseFloat reads them", () => {
  it("long integer parts and long exponents: refused exactly when Go overflows, accepted when Go reads them as finite", () => {
    const tally = { ok: 0, range: 0, jsWouldRefuse: 0 };
    fc.assert(
      fc.property(fc.oneof(longIntegerArb, longExponentArb), fc.boolean(), (s, neg) => {
        const text = neg ? `-${s}` : s;
        const dropped = goDecimal(text).d.length === 800 && /[1-9]/.test(text.replace(/[eE].*$/, "").replace(".", "").replace(/^-?0*/, "").slice(800));
        const expected = goOverflowsRef(text, dropped) ? "range" : "ok";
        const got = verdict(text);
        expect(got, text.length > 80 ? `${text.slice(0, 40)}…${text.slice(-30)}` : text).toBe(expected);
        tally[got]++;
        if (got === "ok" && !Number.isFinite(Number(text))) tally.jsWouldRefuse++;
      }),
      { numRuns: 300, seed: 3931 },
    );
    reportFigure(`go-parse-float: ${tally.ok} read as finite (${tally.jsWouldRefuse} of them past float64 to JavaScript), ${tally.range} refused`);
    expect(tally.jsWouldRefuse).toBeGreaterThan(10);
    expect(tally.range).toBeGreaterThan(10);
  }, 120_000);

  it("the two examples: 1 and 999 zeros at e-690 reads as finite (Go's point after 800 digits); 1e309 and the 1000-digit integer do not", () => {
    expect(verdict(`1${"0".repeat(999)}e-690`)).toBe("ok");
    expect(verdict(`0.${"0".repeat(99_700)}1e100500`)).toBe("ok");
    expect(verdict(`1${"0".repeat(999)}`)).toBe("range");
    expect(verdict("1e309")).toBe("range");
    expect(verdict("1e99999")).toBe("range");
  });
});
