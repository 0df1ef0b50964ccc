// Corner cases built from Go's rules rather than taken from Go's data: each family below
// transforms the Go-written events (test/conformance/data/go-written-events.jsonl) the
// way one rule of encoding/json or the runtime's UnmarshalEvent covers, and checks
// jetloop's verdict against what the rule says Go does (CONFORMANCE.md, "How jetloop reads").
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { marshalEvent, unmarshalEvent } from "../../src/codec/codec.js";
import { goFold } from "../../src/wire/go-fold.js";
import { isWellFormed } from "../../src/wire/strict-json.js";
import { EventDecodeError, EventValidationError } from "../../src/errors.js";
import { type GoWritten, readJsonl, stricterRuleOf } from "./go-oracle.js";

type Path = (string | number)[];
type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Keys whose values Go keeps as json.RawMessage or a map: their keys are data, not fields. */
const FREE = new Set(["Input", "ProviderState", "metadata", "values", "app_fields"]);
/** Of those, the json.RawMessage ones: kept as written, escapes and all. */
const RAW = new Set(["Input", "ProviderState", "metadata"]);
/** A form field's `default` (a json.RawMessage, like those of RAW). */
const isFieldDefault = (path: Path, k: string) => k === "default" && path.at(-2) === "fields";
/**
 * A gate response's `values` (not a form's `data.values`, which are strings) is a Go
 * map[string]json.RawMessage: its keys are decoded, each member kept as written.
 */
const isRawMember = (path: Path) => path.at(-1) === "values" && path.at(-2) !== "data";
/** A key whose value is free: one of FREE, or a form field's `default`. */
const isFree = (path: Path, k: string) => FREE.has(k) || isFieldDefault(path, k);
/** A key (of the object at `path`) whose value is a json.RawMessage. */
const isRaw = (path: Path, k: string) => RAW.has(k) || isFieldDefault(path, k) || isRawMember(path);
const GO_MAX_DEPTH = 10_000;

const written = readJsonl<GoWritten>("go-written-events.jsonl");
const text = new TextDecoder();

type Verdict = { ok: true; out: string } | { ok: false; error: unknown };
function read(input: string): Verdict {
  try {
    return { ok: true, out: text.decode(marshalEvent(unmarshalEvent(input))) };
  } catch (error) {
    if (error instanceof EventDecodeError || error instanceof EventValidationError) return { ok: false, error };
    throw error;
  }
}
const reasonOf = (v: Verdict) => (v.ok ? "ok" : v.error instanceof EventDecodeError ? v.error.reason : `invalid:${(v.error as EventValidationError).field}`);

interface Site {
  path: Path;
  /** Under a raw, map or interface value. */
  free: boolean;
  /** Under a raw value. */
  raw: boolean;
  key?: string;
  value: Json;
}

/** Every key and value of a parsed event, with its path. */
function sites(v: Json, path: Path = [], free = false, raw = false): Site[] {
  const out: Site[] = [{ path, free, raw, value: v }];
  if (Array.isArray(v)) v.forEach((x, i) => out.push(...sites(x, [...path, i], free, raw)));
  else if (v !== null && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) {
      out.push({ path: [...path, k], free, raw, key: k, value: x });
      out.push(...sites(x, [...path, k], free || isFree(path, k), raw || isRaw(path, k)).slice(1));
    }
  }
  return out;
}

const MARK = "\u0001mark\u0001";

/** The event's JSON with the key (or value) at `path` written as `spelled` (already quoted JSON text). */
function respell(root: Json, path: Path, spelled: string, asKey: boolean): string {
  const copy = structuredClone(root);
  const parent = path.slice(0, -1).reduce<Json>((o, p) => (o as Record<string, Json>)[p as string]!, copy) as Record<string, Json> | Json[];
  const last = path[path.length - 1]!;
  if (asKey) {
    const obj = parent as Record<string, Json>;
    const entries = Object.entries(obj).map(([k, x]) => [k === last ? MARK : k, x] as const);
    for (const k of Object.keys(obj)) delete obj[k];
    for (const [k, x] of entries) obj[k] = x;
  } else (parent as Record<string, Json>)[last as string] = MARK;
  return JSON.stringify(copy).replace(JSON.stringify(MARK), spelled);
}

/** Go-fold variants of a key: one letter's case swapped, or `s`→`ſ`, `k`→`K` (Kelvin). */
function variantOf(key: string, at: number): string | undefined {
  const chars = [...key];
  for (let n = 0; n < chars.length; n++) {
    const i = (at + n) % chars.length;
    const c = chars[i]!;
    let v: string | undefined;
    if (/[sS]/.test(c) && at % 3 === 0) v = "\u017f";
    else if (/[kK]/.test(c) && at % 3 === 1) v = "\u212a";
    else if (/[a-z]/.test(c)) v = c.toUpperCase();
    else if (/[A-Z]/.test(c)) v = c.toLowerCase();
    if (v !== undefined) {
      chars[i] = v;
      return chars.join("");
    }
  }
  return undefined;
}

function maxDepth(json: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") max = Math.max(max, ++depth);
    else if (c === "}" || c === "]") depth--;
  }
  return max;
}

const eventArb = fc.constantFrom(...written);
const parsed = (w: GoWritten) => JSON.parse(w.json) as Json;
const toolUse = written.filter((w) => w.json.includes('"type":"tool_use"'));

/** An event with its first tool input replaced by `input` (text). */
function withInput(w: GoWritten, input: string): string {
  return w.json.replace(/"Input":(\{[^{}]*\}|null)/, () => `"Input":${input}`);
}

// Every number form JSON's grammar has, as text.
const numberText = fc
  .tuple(
    fc.boolean(),
    fc.oneof(fc.constant("0"), fc.bigInt({ min: 1n, max: 10n ** 25n }).map(String)),
    fc.option(fc.stringMatching(/^[0-9]{1,6}$/), { nil: undefined }),
    fc.option(fc.tuple(fc.constantFrom("e", "E"), fc.constantFrom("", "+", "-"), fc.stringMatching(/^[0-9]{1,3}$/)), { nil: undefined }),
  )
  .map(([neg, int, frac, exp]) => `${neg ? "-" : ""}${int}${frac !== undefined ? `.${frac}` : ""}${exp ? exp.join("") : ""}`);

describe("Go's rules, generated", () => {
  it("folded keys at every depth, every key of every event: a field's key Go folds onto it is refused; a map's or raw value's key is data, kept", () => {
    let refused = 0;
    let kept = 0;
    for (const w of written) {
      const root = parsed(w);
      for (const site of sites(root).filter((x) => x.key !== undefined)) {
        for (const at of [0, 1, 2]) {
          const variant = variantOf(site.key!, at);
          if (variant === undefined) continue;
          expect(goFold(variant)).toBe(goFold(site.key!));
          const v = read(respell(root, site.path, JSON.stringify(variant), true));
          const where = `${w.id} ${site.path.join(".")} → ${variant}`;
          if (site.free) {
            expect(reasonOf(v), where).toBe("ok");
            kept++;
          } else {
            expect(v.ok, where).toBe(false);
            expect(stricterRuleOf((v as { error: unknown }).error), `${where}: ${String((v as { error: unknown }).error)}`).toBe("letter-case-keys");
            refused++;
          }
        }
      }
    }
    expect(refused).toBeGreaterThan(1000);
    expect(kept).toBeGreaterThan(10);
  }, 30_000);

  it("only ſ and the Kelvin sign fold onto ASCII letters: every other non-ASCII code point folds onto none (unicode.SimpleFold leaves İ and ı alone)", () => {
    const onto: string[] = [];
    for (let cp = 0x80; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      if (/[A-Z]/.test(goFold(String.fromCodePoint(cp)))) onto.push(cp.toString(16));
    }
    expect(onto).toEqual(["17f", "212a"]);
  });

  it("a look-alike Go does not fold (İ, ı for i) makes another key: read as if the field were absent, as Go ignores an unknown key (a request or an audit refuses it, as Go's do)", () => {
    let n = 0;
    for (const w of written) {
      const root = parsed(w);
      for (const site of sites(root).filter((x) => x.key !== undefined && !x.free && /[iI]/.test(x.key))) {
        const without = structuredClone(root);
        const parent = site.path.slice(0, -1).reduce<Json>((o, p) => (o as Record<string, Json>)[p as string]!, without) as Record<string, Json>;
        delete parent[site.key!];
        const absent = read(JSON.stringify(without));
        for (const alike of ["\\u0131", "\u0130"]) {
          const variant = JSON.stringify(site.key!).replace(/[iI]/, alike);
          const v = read(respell(root, site.path, variant, true));
          const where = `${w.id} ${site.path.join(".")} → ${variant}`;
          // A permission request and a gate's audit refuse unknown keys, as Go's decoders do.
          if (site.path.length > 1 && (site.path[0] === "request" || site.path[0] === "audit")) expect(v.ok, where).toBe(false);
          else {
            expect(reasonOf(v), where).toBe(reasonOf(absent));
            if (v.ok && absent.ok) expect(v.out, where).toBe(absent.out);
          }
          n++;
        }
      }
    }
    expect(n).toBeGreaterThan(100);
  }, 30_000);

  it("escapes in every string, keys and times included: a time refuses them, raw JSON keeps them, elsewhere they mean their character", () => {
    let times = 0;
    let raw = 0;
    let plain = 0;
    fc.assert(
      fc.property(eventArb, fc.nat(), fc.nat(), fc.boolean(), (w, pick, at, lower) => {
        const root = parsed(w);
        const strings = sites(root).filter((s) => s.key !== undefined || typeof s.value === "string");
        const site = strings[pick % strings.length]!;
        const asKey = site.key !== undefined && (typeof site.value !== "string" || at % 2 === 0);
        // A value's own site is its key's: the value is raw when the key's value is.
        const inRaw = asKey ? site.raw : site.raw || isRaw(site.path.slice(0, -1), String(site.path.at(-1)));
        const s = asKey ? site.key! : (site.value as string);
        fc.pre(s.length > 0);
        const units = JSON.stringify(s).slice(1, -1);
        // Escape one character that JSON.stringify wrote plainly.
        const plainAt: number[] = [];
        for (let j = 0; j < units.length; j++) {
          if (units[j] === "\\") j += units[j + 1] === "u" ? 5 : 1;
          else plainAt.push(j);
        }
        fc.pre(plainAt.length > 0);
        let i = plainAt[at % plainAt.length]!;
        // A surrogate pair is escaped whole: half of it escaped and half written is text no
        // UTF-8 bytes hold (the string input is refused as not UTF-8).
        if (units.charCodeAt(i) >= 0xdc00 && units.charCodeAt(i) <= 0xdfff && i > 0) i--;
        const pair = units.charCodeAt(i) >= 0xd800 && units.charCodeAt(i) <= 0xdbff ? 2 : 1;
        const escape = (u: number) => {
          const hex = u.toString(16).padStart(4, "0");
          return `\\u${lower ? hex : hex.toUpperCase()}`;
        };
        const spelled = `"${units.slice(0, i)}${escape(units.charCodeAt(i))}${pair === 2 ? escape(units.charCodeAt(i + 1)) : ""}${units.slice(i + pair)}"`;
        const v = read(respell(root, site.path, spelled, asKey));
        const isTime = !asKey && site.path.at(-1) === "created_at";
        if (isTime) {
          expect(reasonOf(v)).toBe("escaped_time");
          times++;
        } else if (inRaw) {
          expect(reasonOf(v)).toBe("ok");
          expect((v as { out: string }).out).toContain(spelled.slice(1, -1));
          raw++;
        } else {
          const same = read(respell(root, site.path, JSON.stringify(s), asKey));
          expect(reasonOf(v)).toBe(reasonOf(same));
          if (v.ok && same.ok) expect(v.out).toBe(same.out);
          plain++;
        }
      }),
      { numRuns: 400 },
    );
    expect(times).toBeGreaterThan(0);
    expect(plain).toBeGreaterThan(100);
    void raw; // raw strings are few: the sweep below covers each of them
  });

  it("times as the runtime's Go reads them (time.Parse, strict RFC 3339 switched off): one-digit hours, offsets up to 24:60, written back in Go's form; the zero instant in any offset omitted", () => {
    const loopIdle = written.find((w) => w.id === "LoopIdle/minimal")!;
    const pad = (x: number, n = 2) => String(x).padStart(n, "0");
    const instant = (y: number, mo: number, d: number, h: number, mi: number, s: number) => {
      const date = new Date(0);
      date.setUTCFullYear(y, mo - 1, d);
      date.setUTCHours(h, mi, s, 0);
      return date.getTime();
    };
    const zero = instant(1, 1, 1, 0, 0, 0);
    const dateArb = fc.oneof(
      fc.tuple(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 31 })),
      fc.tuple(fc.constantFrom(0, 1), fc.constantFrom(1, 12), fc.constantFrom(1, 31)),
    );
    let accepted = 0;
    let refused = 0;
    let omitted = 0;
    fc.assert(
      fc.property(
        dateArb,
        fc.integer({ min: 0, max: 24 }),
        fc.boolean(),
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 0, max: 60 }),
        fc.option(fc.tuple(fc.constantFrom(".", ","), fc.stringMatching(/^[0-9]{1,12}$/)), { nil: undefined }),
        fc.option(fc.tuple(fc.constantFrom("+", "-"), fc.integer({ min: 0, max: 25 }), fc.integer({ min: 0, max: 61 })), { nil: undefined }),
        ([y, mo, d], h, oneDigit, mi, s, frac, zone) => {
          const hourText = oneDigit && h < 10 ? String(h) : pad(h);
          const text = `${pad(y, 4)}-${pad(mo)}-${pad(d)}T${hourText}:${pad(mi)}:${pad(s)}${frac ? frac.join("") : ""}${zone ? `${zone[0]}${pad(zone[1])}:${pad(zone[2])}` : "Z"}`;
          const v = read(loopIdle.json.replace(/"created_at":"[^"]*"/, `"created_at":"${text}"`));
          const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
          const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1]!;
          const offset = zone ? (zone[0] === "-" ? -1 : 1) * (zone[1] * 60 + zone[2]) : 0;
          // Go's reader: a real date, a clock within the day, an offset's hour ≤ 24 and minute ≤ 60;
          // its writer: an offset under 24 hours.
          const readable = d <= days && h <= 23 && mi <= 59 && s <= 59 && (!zone || (zone[1] <= 24 && zone[2] <= 60));
          if (!readable || Math.abs(offset) >= 24 * 60) {
            expect(v.ok, text).toBe(false);
            refused++;
            return;
          }
          const digits = frac ? frac[1].slice(0, 9).replace(/0+$/, "") : "";
          const goZone = offset === 0 ? "Z" : `${offset < 0 ? "-" : "+"}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
          const goText = `${pad(y, 4)}-${pad(mo)}-${pad(d)}T${pad(h)}:${pad(mi)}:${pad(s)}${digits ? `.${digits}` : ""}${goZone}`;
          expect(reasonOf(v), text).toBe("ok");
          const isZero = digits === "" && instant(y, mo, d, h, mi - offset, s) === zero;
          const expected = isZero
            ? loopIdle.json.replace(/"created_at":"[^"]*",/, "")
            : loopIdle.json.replace(/"created_at":"[^"]*"/, `"created_at":"${goText}"`);
          expect((v as { out: string }).out, text).toBe(expected);
          if (isZero) omitted++;
          else accepted++;
        },
      ),
      { numRuns: 2000 },
    );
    for (const [text, goText] of [
      ["2026-11-29T1:15:30Z", "2026-11-29T01:15:30Z"],
      ["2026-11-29T10:15:30+00:60", "2026-11-29T10:15:30+01:00"],
      ["2026-11-29T10:15:30-05:60", "2026-11-29T10:15:30-06:00"],
      ["2026-11-29T9:15:30,5+24:00", undefined],
      ["2026-11-29T10:15:30+23:60", undefined],
      ["0001-01-01T05:30:00+05:30", ""],
      ["0000-12-31T23:00:00-01:00", ""],
    ] as const) {
      const v = read(loopIdle.json.replace(/"created_at":"[^"]*"/, `"created_at":"${text}"`));
      if (goText === "") omitted++;
      if (goText === undefined) expect(v.ok, text).toBe(false);
      else expect((v as { out: string }).out, text).toBe(goText === "" ? loopIdle.json.replace(/"created_at":"[^"]*",/, "") : loopIdle.json.replace(/"created_at":"[^"]*"/, `"created_at":"${goText}"`));
    }
    expect(accepted).toBeGreaterThan(500);
    expect(refused).toBeGreaterThan(100);
    expect(omitted).toBeGreaterThan(0);
  });

  it("an escape in every string of every raw value is kept as written", () => {
    let n = 0;
    for (const w of written) {
      const root = parsed(w);
      for (const site of sites(root).filter((x) => x.raw && typeof x.value === "string" && x.value !== "")) {
        const units = JSON.stringify(site.value).slice(1, -1);
        if (units.startsWith("\\")) continue;
        const spelled = `"\\u${units.charCodeAt(0).toString(16).padStart(4, "0")}${units.slice(1)}"`;
        const v = read(respell(root, site.path, spelled, false));
        expect(reasonOf(v), `${w.id} ${site.path.join(".")}`).toBe("ok");
        expect((v as { out: string }).out).toContain(spelled);
        n++;
      }
    }
    expect(n).toBeGreaterThan(0);
  });

  it("every number form: kept verbatim inside raw JSON, unless past float64's range (refused anywhere, as Go's whole-event scan refuses it); in a typed field, read only when JavaScript writes it back the same", () => {
    fc.assert(
      fc.property(fc.constantFrom(...toolUse), numberText, (w, n) => {
        const v = read(withInput(w, `{"n":${n},"m":[${n}]}`));
        const typed = read(w.json.replace(/"v":1/, `"v":${n}`));
        // Past float64's range: test/unit/number-range.property.test.ts holds the rule against exact arithmetic.
        if (!Number.isFinite(Number(n))) {
          expect(reasonOf(v)).toBe("number_out_of_range");
          expect(reasonOf(typed)).toBe("number_out_of_range");
          return;
        }
        expect(reasonOf(v)).toBe("ok");
        expect((v as { out: string }).out).toContain(`"Input":{"n":${n},"m":[${n}]}`);
        const exact = String(Number(n)) === n && (!Number.isInteger(Number(n)) || Number.isSafeInteger(Number(n)));
        if (!exact) expect(reasonOf(typed)).toBe("inexact_number");
        else expect(typed.ok).toBe(n === "1" || n === "0");
      }),
      { numRuns: 300 },
    );
  });

  it("a form field's default is a json.RawMessage: every number form in float64's range, key order and escape kept as written", () => {
    const schema = written.find((w) => w.id === "GateOpened/ask-user-schema")!;
    expect(schema.json).toContain('"default":"a"');
    fc.assert(
      fc.property(numberText, (n) => {
        for (const d of [n, `{"z":${n},"10":"\\/x","2":[${n}]}`, `"\\u0061"`]) {
          const json = schema.json.replace('"default":"a"', `"default":${d}`);
          const v = read(json);
          if (!Number.isFinite(Number(n)) && d !== `"\\u0061"`) {
            expect(reasonOf(v), d).toBe("number_out_of_range");
            continue;
          }
          expect(reasonOf(v), d).toBe("ok");
          expect((v as { out: string }).out, d).toBe(json);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("deep raw nesting: read and written back byte for byte up to Go's 10,000, refused beyond", () => {
    const depths = [1, 100, 9_990, 9_993, 9_994, 9_995, 10_000];
    for (const d of depths) {
      const input = `{"x":${"[".repeat(d)}${"]".repeat(d)}}`;
      const json = withInput(toolUse[0]!, input);
      const v = read(json);
      if (maxDepth(json) <= GO_MAX_DEPTH) {
        expect(reasonOf(v), `depth ${d}`).toBe("ok");
        expect((v as { out: string }).out).toBe(json);
      } else expect(reasonOf(v), `depth ${d}`).toBe("too_deep");
    }
  });

  it("whitespace between tokens changes nothing; a BOM or a space JSON does not know is malformed", () => {
    const ws = fc.stringMatching(/^[ \t\n\r]{1,3}$/);
    const alien = fc.constantFrom("\ufeff", "\u00a0", "\u2028", "\f", "\v", "\u3000");
    fc.assert(
      fc.property(eventArb, fc.array(fc.tuple(fc.nat(), ws), { minLength: 1, maxLength: 6 }), alien, fc.nat(), (w, inserts, bad, at) => {
        // Token boundaries: after a structural character outside strings.
        const bounds: number[] = [0];
        let inString = false;
        for (let i = 0; i < w.json.length; i++) {
          const c = w.json[i];
          if (inString) {
            if (c === "\\") i++;
            else if (c === '"') inString = false;
          } else if (c === '"') inString = true;
          else if ("{}[],:".includes(c!)) bounds.push(i + 1);
        }
        let spaced = w.json;
        for (const [p, s] of [...inserts].sort((a, b) => (b[0] % bounds.length) - (a[0] % bounds.length))) {
          const b = bounds[p % bounds.length]!;
          spaced = spaced.slice(0, b) + s + spaced.slice(b);
        }
        expect((read(spaced) as { out: string }).out).toBe(w.json);
        const b = bounds[at % bounds.length]!;
        expect(reasonOf(read(w.json.slice(0, b) + bad + w.json.slice(b)))).toBe("malformed_json");
      }),
      { numRuns: 200 },
    );
  });

  it("truncations: every proper prefix is malformed", () => {
    fc.assert(
      fc.property(eventArb, fc.nat(), (w, at) => {
        const prefix = w.json.slice(0, at % w.json.length);
        // Cut inside a surrogate pair, the text is no UTF-8 text: as bytes cut inside a character are.
        expect(reasonOf(read(prefix))).toBe(isWellFormed(prefix) ? "malformed_json" : "not_utf8");
      }),
      { numRuns: 300 },
    );
  });

  it("wrong JSON types at every depth: refused wherever the field is typed", () => {
    const others = (v: Json): Json[] => {
      const all: Json[] = ["x", 7, true, { a: 1 }, [1]];
      const kind = (x: Json) => (Array.isArray(x) ? "array" : typeof x);
      return all.filter((x) => kind(x) !== kind(v));
    };
    let refused = 0;
    fc.assert(
      fc.property(eventArb, fc.nat(), fc.nat(), (w, pick, which) => {
        const root = parsed(w);
        const typed = sites(root).filter((s) => s.key !== undefined && !s.free && !isFree(s.path.slice(0, -1), s.key) && s.value !== null);
        const site = typed[pick % typed.length]!;
        const choices = others(site.value);
        const replacement = choices[which % choices.length]!;
        const v = read(respell(root, site.path, JSON.stringify(replacement), false));
        // An empty object where an object was is no change of type; everything else is refused.
        expect(v.ok, `${w.id} ${site.path.join(".")} = ${JSON.stringify(replacement)}`).toBe(false);
        refused++;
      }),
      { numRuns: 300 },
    );
    expect(refused).toBe(300);
  });
});
