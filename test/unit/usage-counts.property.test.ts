/**
 * Message usage is recorded verbatim, as the pinned core records it in both directions
 * (core content/message.go: AIMessage's UnmarshalJSON and MarshalJSON copy the five counts
 * with no check; content/usage.go's ReasoningWithinOutput is a predicate nothing gates on).
 * A provider can report more reasoning than output tokens, and the runtime writes what it
 * reported: jetloop reads and writes every such count, in every message that has a usage.
 *
 * The generator writes the counts as Go writes a message's usage (a pointer to a struct
 * with omitempty counts, in field order) into every usage the Go-written events hold, and
 * into a turn's usage (a plain struct: all five written).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeEvent, encodeEvent, safeDecodeEvent } from "../../src/codec/codec.js";
import { thawed } from "./fixtures.js";
import { type GoWritten, readJsonl } from "../conformance/go-oracle.js";
import { reportFigure } from "../harness/figures-log.js";

const FIELDS = ["InputTokens", "OutputTokens", "CacheReadTokens", "CacheCreationTokens", "ReasoningTokens"] as const;
const written = readJsonl<GoWritten>("go-written-events.jsonl");

/** How many containers enclose offset `at` of JSON text `text`. */
function depthAt(text: string, at: number): number {
  let depth = 0;
  for (let i = 0; i < at; i++) {
    const c = text[i]!;
    if (c === '"') for (i++; text[i] !== '"'; i++) i += text[i] === "\\" ? 1 : 0;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") depth--;
  }
  return depth;
}

/**
 * Every `"usage":{…}` of every Go-written event: its bounds, and whether Go writes all five
 * counts there (the event's own usage, a turn's: a plain struct) or only the non-zero ones
 * (a message's: omitempty).
 */
const sites = written.flatMap((w) =>
  [...w.json.matchAll(/"usage":\{[^{}]*\}/g)].map((m) => ({ id: w.id, json: w.json, start: m.index + '"usage":'.length, end: m.index + m[0].length, all: depthAt(w.json, m.index) === 1 })),
);

const countArb = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }));
const usageArb = fc.tuple(countArb, countArb, countArb, countArb, countArb);

function usageText(counts: readonly number[], all: boolean): string {
  return `{${FIELDS.flatMap((f, i) => (all || counts[i] !== 0 ? [`"${f}":${counts[i]}`] : [])).join(",")}}`;
}

describe("usage counts are recorded verbatim, as the pinned core records them", () => {
  it("every usage of the Go-written events, any five counts (reasoning above output included): read, and written back byte for byte", () => {
    expect(sites.filter((s) => s.all).length).toBeGreaterThanOrEqual(1);
    expect(sites.filter((s) => !s.all).length).toBeGreaterThanOrEqual(2);
    let above = 0;
    let n = 0;
    fc.assert(
      fc.property(fc.constantFrom(...sites), usageArb, (site, counts) => {
        // A turn's usage of five zeros is the zero struct, which Go omits (`omitzero`): another rule.
        if (site.all && counts.every((c) => c === 0)) return;
        const text = `${site.json.slice(0, site.start)}${usageText(counts, site.all)}${site.json.slice(site.end)}`;
        const r = safeDecodeEvent(text);
        expect(r.success, r.success ? "" : r.error.message).toBe(true);
        if (r.success) expect(new TextDecoder().decode(encodeEvent(r.data))).toBe(text);
        if (counts[4] > counts[1]) above++;
        n++;
      }),
      { numRuns: 800, seed: 39 },
    );
    reportFigure(`usage-counts: ${n} usages read and written back, ${above} with more reasoning than output tokens`);
    expect(above).toBeGreaterThan(100);
  }, 60_000);

  it("a message usage with more reasoning than output tokens is written from TypeScript as given", () => {
    const base = written.find((w) => w.id === "StepDone/assistant-tools-results")!.json;
    const event = thawed(decodeEvent<{ messages: { usage?: Record<string, number> }[] }>(base));
    event.messages[0]!.usage = { outputTokens: 1, reasoningTokens: 2 };
    expect(new TextDecoder().decode(encodeEvent(event))).toContain('"usage":{"OutputTokens":1,"ReasoningTokens":2}');
  });
});
