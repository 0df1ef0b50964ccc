/**
 * A second adversary pass on Go's rules in the codec, written without reading the
 * project's own tests. Every attack below HELD at the time of writing: no input was found
 * where the fast path (src/wire/fast-json.ts) and the guided reader
 * (decodeEventByReference) disagree, nor one where either disagrees with the pinned Go
 * code on the rules attacked. The tests pin those verdicts so a regression shows up as a
 * failure; none of them is a known break.
 *
 * Go sources cited: looprig/harness pkg/event/marshal.go (UnmarshalEvent,
 * rejectDuplicateJSONKeys: json.Decoder.Token per value, strings.ToLower per key, every
 * number as float64 through strconv.ParseFloat), looprig/core content/block_json.go and
 * content/message.go (maxBlocksPerSlice = 10_000), Go's strconv/atof.go (readFloat,
 * decimal.set), strings.ToLower / unicode.ToLower (Unicode 15.0.0 CaseRanges),
 * encoding/json decode.go (unquote: a lone surrogate escape reads as U+FFFD), time's
 * Time.UnmarshalJSON (the bytes between the quotes, never unescaped).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { decodeEvent, decodeEventByReference, encodeEvent } from "../../src/codec/codec.js";
import { thawed } from "./fixtures.js";
import { RawJson } from "../../src/wire/raw-json.js";

const events = readFileSync(new URL("../conformance/data/go-written-events.jsonl", import.meta.url), "utf8")
  .trim()
  .split("\n")
  .map((l) => JSON.parse(l) as { id: string; json: string });
const byId = (id: string): string => events.find((e) => e.id === id)!.json;

const SESSION = byId("SessionStarted/minimal");
const GATE = byId("GateResolved/session-form-audit");
const TURN = byId("TurnStarted/with-message");

/** A verdict both readers must give alike: the re-encoding, or the refusal's kind. */
function verdict(read: (t: string) => unknown, text: string): string {
  try {
    return `OK ${Buffer.from(encodeEvent(read(text) as never)).toString()}`;
  } catch (e) {
    const x = e as { name: string; reason?: string; rule?: string; field?: string };
    return `ERR ${x.name} ${x.reason ?? x.rule ?? ""} ${x.field ?? ""}`;
  }
}
const both = (text: string): string => {
  const fast = verdict(decodeEvent, text);
  expect(fast).toBe(verdict(decodeEventByReference, text));
  return fast;
};
const ins = (t: string, member: string): string => `{${member},${t.slice(1)}`;
const mapWith = (members: string): string => GATE.replace('"values":{', `"values":{${members},`);

describe("fast path = guided reader (held)", () => {
  // Family: a member inserted after every `{` of every Go-written event. Rules: duplicate
  // keys by strings.ToLower, keys that are Object.prototype names, escapes, numbers.
  const members = [
    '"zz":1', '"constructor":1', '"toString":{}', '"Zz":1,"zz":2', '"x":1e-7', '"x":"a\\u003cb"', '"K":1,"k":2',
    '"ſ":1,"s":2', '"İ":1,"i":2', '"\u1c89":1,"\u1c8a":2', '"Σ":1,"ς":2', '"x":-0', '"x":1e400', '"x":1e-400',
    '"x":[1,{"a":1,"A":2}]', '"x":"\\ud800"', '"\\ud800":1,"\\udbff":2', '"__proto__":{"a":1}', '"1":1',
    '"x":123456789012345678', '"ǅ":1,"ǆ":2', '"ẞ":1,"ß":2',
  ];
  it("agrees at every object of every Go-written event", () => {
    let disagreements = 0;
    for (const { json } of events) {
      const opens: number[] = [];
      let inString = false;
      for (let i = 0; i < json.length; i++) {
        const c = json[i];
        if (inString) {
          if (c === "\\") i++;
          else if (c === '"') inString = false;
        } else if (c === '"') inString = true;
        else if (c === "{" && json[i + 1] !== "}") opens.push(i + 1);
      }
      for (const at of opens) {
        for (const m of members) {
          const text = `${json.slice(0, at)}${m},${json.slice(at)}`;
          if (verdict(decodeEvent, text) !== verdict(decodeEventByReference, text)) disagreements++;
        }
      }
    }
    expect(disagreements).toBe(0);
  }, 120_000);
});

describe("Go's duplicate-key rule: strings.ToLower with Unicode 15 tables (held)", () => {
  // rejectDuplicateJSONKeys: canonical := strings.ToLower(key); a repeat is an error.
  it.each([
    ["Kelvin sign and k", '"\u212a":"x","k":"y"'],
    ["capital sharp s and ß", '"\u1e9e":"x","\u00df":"y"'],
    ["Ohm sign and ω", '"\u2126":"x","\u03c9":"y"'],
    ["dotted İ and i (unicode.ToLower(U+0130) = i)", '"\u0130":"x","i":"y"'],
    ["Deseret pair (astral)", '"\ud801\udc00":"x","\ud801\udc28":"y"'],
    ["Adlam pair (astral)", '"\ud83a\udd00":"x","\ud83a\udd22":"y"'],
    ["Georgian Mtavruli and Mkhedruli", '"\u1c90":"x","\u10d0":"y"'],
    ["Cherokee upper and lower", '"\u13a0":"x","\uab70":"y"'],
    ["two lone surrogate escapes (both U+FFFD after unquote)", '"\\ud800":"x","\\udfff":"y"'],
    ["a lone surrogate escape and U+FFFD", '"\\ud800":"x","\ufffd":"y"'],
    ["an escaped exact repeat", '"name":"x","n\\u0061me":"y"'],
  ])("refuses %s in a Go map", (_name, members) => {
    expect(both(mapWith(members))).toMatch(/^ERR EventDecodeError (duplicate_key|letter_case_key)/);
  });

  it.each([
    ["U+1C89/U+1C8A (a case pair only from Unicode 16)", '"\u1c89":"x","\u1c8a":"y"'],
    ["final sigma ς and Σ (ToLower(Σ) = σ)", '"\u03a3":"x","\u03c2":"y"'],
    ["U+A7CB/U+0264 (a pair only from Unicode 16)", '"\ua7cb":"x","\u0264":"y"'],
  ])("accepts %s, as Go 1.26 does", (_name, members) => {
    expect(both(mapWith(members))).toMatch(/^OK /);
  });

  it("the writer refuses what that reader refuses, and writes what it accepts", () => {
    const write = (keys: string[]): string => {
      const e = thawed(decodeEvent<{ audit: { data: { values: Record<string, string> } } }>(GATE));
      const m = Object.create(null) as Record<string, string>;
      for (const k of keys) m[k] = "v";
      e.audit.data.values = m;
      try {
        return Buffer.from(encodeEvent(e as never)).toString();
      } catch (x) {
        return `ERR ${(x as { reason?: string }).reason}`;
      }
    };
    expect(write(["\u212a", "k"])).toBe("ERR unwritable");
    expect(write(["\ud800", "\ufffd"])).toBe("ERR unwritable");
    expect(write(["\ud800", "\udc00"])).toBe("ERR unwritable");
    expect(write(["\u1c89", "\u1c8a"])).toMatch(/"values":\{"Ᲊ":"v","ᲊ":"v"\}/);
    // Go's map order is by UTF-8 bytes of the written key (a lone surrogate written U+FFFD).
    expect(write(["\ud800", "\ue000", "\uffff", "\u{10000}"])).toContain('"values":{"\ue000":"v","\ufffd":"v","\uffff":"v","\u{10000}":"v"}');
    expect(() => RawJson.fromText('{"\\ud800":1,"\ufffd":2}')).toThrow(/duplicate key/);
    expect(() => RawJson.fromText('{"\u212a":1,"k":2}')).toThrow(/letter case/);
  });
});

describe("numbers past float64, anywhere (held)", () => {
  // Token() reads every number into interface{}: ParseFloat's ErrRange refuses the event.
  it.each([["1e309", "1e309"], ["-1E400", "-1E400"], ["a 401-digit integer", "1" + "0".repeat(400)]])("refuses %s under an unknown key", (_label, n) => {
    expect(both(ins(SESSION, `"zz":${n}`))).toMatch(/number_out_of_range/);
  });
  it.each([["1e-400", "1e-400"], ["-0", "-0"], ["a 30-digit integer", "123456789012345678901234567890"], ["1 then 1000 zeros e-1000", "1" + "0".repeat(1000) + "e-1000"]])(
    "accepts %s under an unknown key (finite to ParseFloat)",
    (_label, n) => {
      expect(both(ins(SESSION, `"zz":${n}`))).toMatch(/^OK /);
    },
  );
});

describe("times: the bytes between the quotes (held)", () => {
  const at = (t: string): string => SESSION.replace('"2026-11-29T10:15:30.123456789Z"', t);
  it.each([['"2026-11-29\\u005410:15:30Z"'], ['"2026-11-29T\\/10:15:30Z"']])("refuses the escaped time %s", (t) => {
    expect(both(at(t))).toMatch(/escaped_time/);
  });
  it.each([
    ['"2026-11-29T1:15:30Z"', '"created_at":"2026-11-29T01:15:30Z"'],
    ['"2026-11-29T10:15:30,5Z"', '"created_at":"2026-11-29T10:15:30.5Z"'],
    ['"2026-11-29T10:15:30+00:60"', '"created_at":"2026-11-29T10:15:30+01:00"'],
    ['"2026-11-29T10:15:30-00:00"', '"created_at":"2026-11-29T10:15:30Z"'],
    ['"9999-12-31T23:59:59-01:00"', '"created_at":"9999-12-31T23:59:59-01:00"'],
  ])("reads %s as time.Parse does and writes it back in Go's form", (t, written) => {
    expect(both(at(t))).toContain(written);
  });
});

describe("content caps of looprig/core (held)", () => {
  const blk = '{"Text":"a","type":"text"}';
  const blocks = (n: number): string => TURN.replace(/"blocks":\[.*?\]\}/, `"blocks":[${Array(n).fill(blk).join(",")}]}`);
  it("maxBlocksPerSlice: 10,000 blocks read, 10,001 refused", () => {
    expect(both(blocks(10_000))).toMatch(/^OK /);
    expect(both(blocks(10_001))).toMatch(/^ERR EventValidationError/);
  });
});

describe("RawJson.of refuses a lone surrogate, which would read back as another value", () => {
  // RawJson.of's contract (src/wire/raw-json.ts): refused "wherever JSON.stringify would
  // write something that reads back as another value". JSON.stringify writes a lone
  // surrogate as the escape `\ud800`; Go's encoding/json (decode.go, unquote: an invalid
  // surrogate escape becomes unicode.ReplacementChar) and jetloop's own RawJson.value()
  // read that escape as U+FFFD. Go cannot make this value at all: a Go string holding
  // invalid UTF-8 is written `\ufffd` by Go's writer (encode.go, appendString).
  it.each([
    ["a string", "\ud800"],
    ["a member value", { k: "\udc00" }],
    ["a key", { "\ud800": 1 }],
    ["an array element", ["a\ud83d"]],
    ["a deep key", { a: [{ b: { "x\udfff": true } }] }],
  ])("refuses %s holding a lone surrogate", (_name, v) => {
    const refused = (() => {
      try {
        RawJson.of(v);
        return undefined;
      } catch (e) {
        return e as { name?: string; reason?: string; message?: string };
      }
    })();
    expect({ name: refused?.name, reason: refused?.reason, lone: /lone surrogate/.test(refused?.message ?? "") }).toEqual({ name: "StrictJsonError", reason: "malformed_json", lone: true });
  });

  it("still writes a well-formed pair and U+FFFD itself", () => {
    expect(RawJson.of({ "\ud83d\ude00": "\ufffd" }).value()).toEqual({ "\ud83d\ude00": "\ufffd" });
  });
});
