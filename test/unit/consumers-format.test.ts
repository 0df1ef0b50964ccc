// `jetloop consumers` writes backoff steps as Go-style durations: for every millisecond
// count, the shortest form, and one that reads back (streams/ parses the same form) to it.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { duration } from "../../src/cli/consumers.js";
import { parseDuration } from "../../src/streams/declared.js";

describe("consumers: durations", () => {
  it("reads back to the same milliseconds", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 48 * 3_600_000 }), (ms) => {
        expect(parseDuration(duration(ms))).toBe(ms * 1e6);
      }),
    );
  });
  it("is the shortest form of the defaults", () => {
    expect([30_000, 60_000, 300_000, 900_000, 500, 5_400_000, 3_601_000].map(duration)).toEqual(["30s", "1m", "5m", "15m", "500ms", "1h30m", "1h1s"]);
  });
});
