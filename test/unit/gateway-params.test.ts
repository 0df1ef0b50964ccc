// The list's `skip`, the pages' `limit` and `from_journal_seq` read as the Go handler reads
// them (pkg/serve parse.go: strconv.Atoi for skip and limit, ParseUint for the sequence):
// the whole family of texts — signs, leading zeros, whitespace, underscores, exponents,
// values around 2^53, 2^63 and 2^64 — each decided by a model of Go's strconv, never by
// the gateway's own pattern.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fromSeqParam, INVALID, limitParam, MAX_JOURNAL_SEQ, PAST_THE_JOURNAL, skipParam } from "../../src/gateway/params.js";
import { atoi, goNumberText as numberText, parseUint64 } from "../harness/go-strconv.js";

const anyText = fc.oneof(numberText, fc.string({ maxLength: 6 }), fc.constantFrom("", "+", "-", "0x10", "1e3", "١", "０"));

const query = (key: string, raw: string) => new URLSearchParams([[key, raw]]);

describe("query parameters as Go's strconv reads them", () => {
  it("skip: Atoi, at least 0, up to Go's int (2^63 - 1), kept exact", () => {
    fc.assert(
      fc.property(anyText, (raw) => {
        const go = atoi(raw);
        const want = raw === "" ? 0n : typeof go === "string" || go < 0n ? INVALID : go;
        expect(skipParam(query("skip", raw))).toBe(want);
      }),
      { numRuns: 3000 },
    );
  });

  it("limit: Atoi, 1 to 1000", () => {
    fc.assert(
      fc.property(anyText, (raw) => {
        const go = atoi(raw);
        const want = raw === "" ? 100 : typeof go === "string" || go < 1n || go > 1000n ? INVALID : Number(go);
        expect(limitParam(query("limit", raw))).toBe(want);
      }),
      { numRuns: 3000 },
    );
  });

  it("from_journal_seq: ParseUint; past what a stream holds is an empty page, not an error", () => {
    fc.assert(
      fc.property(anyText, (raw) => {
        const go = parseUint64(raw);
        const want = raw === "" ? 0 : typeof go === "string" ? INVALID : go > BigInt(MAX_JOURNAL_SEQ) ? PAST_THE_JOURNAL : Number(go);
        expect(fromSeqParam(query("from_journal_seq", raw))).toBe(want);
      }),
      { numRuns: 3000 },
    );
  });

  it("the model agrees with Go's own test table (strconv atoi_test.go)", () => {
    const table: [string, bigint | "syntax" | "range"][] = [
      ["", "syntax"],
      ["0", 0n],
      ["-0", 0n],
      ["+0", 0n],
      ["1", 1n],
      ["+1", 1n],
      ["-1", -1n],
      ["012345", 12345n],
      ["12345x", "syntax"],
      [" 1", "syntax"],
      ["1_000", "syntax"],
      ["+", "syntax"],
      ["-", "syntax"],
      ["9223372036854775807", 9223372036854775807n],
      ["9223372036854775808", "range"],
      ["-9223372036854775808", -9223372036854775808n],
      ["-9223372036854775809", "range"],
      ["18446744073709551616", "range"],
    ];
    for (const [s, want] of table) expect([s, atoi(s)]).toEqual([s, want]);
    expect(parseUint64("18446744073709551615")).toBe(2n ** 64n - 1n);
    expect(parseUint64("18446744073709551616")).toBe("range");
    expect(parseUint64("+1")).toBe("syntax");
  });
});
