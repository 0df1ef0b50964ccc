// The catalog entry's rules as properties (src/catalog/entry.ts, fold.ts): every entry the
// catalog writes reads back as written; every value it would not write is refused with
// CatalogEntryError, whichever field is wrong and however; the title is Go's deriveTitle.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CatalogEntryError, newId } from "../../src/index.js";
import { type CatalogEntry, decodeEntry, encodeEntry, entryKey } from "../../src/catalog/entry.js";
import { deriveTitle, isDerivedTitle, TITLE_MAX_RUNES } from "../../src/catalog/fold.js";

const SEED = Number(process.env.JETLOOP_SEED ?? 3802);
const uuid = fc.uuid({ version: 7 });
const goTime = fc
  .tuple(fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2100, 0, 1) }), fc.constantFrom("", ".5", ".123456789", ".000001"), fc.constantFrom("Z", "+02:00", "-05:30"))
  .map(([ms, frac, zone]) => `${new Date(ms).toISOString().slice(0, 19)}${frac}${zone}`);
/** Titles as the fold derives them (any text through deriveTitle), never blank. */
const title = fc
  .string({ maxLength: 120, unit: "grapheme" })
  .map((text) => deriveTitle({ role: "user", blocks: [{ type: "text", text }] }))
  .filter((t) => t !== "");
/** A cut that ends on a space: Go trims before it cuts, so the title keeps it. */
const cutOnSpace = fc.nat(40).map((n) => deriveTitle({ role: "user", blocks: [{ type: "text", text: `${"é".repeat(TITLE_MAX_RUNES - 1)} ${"x".repeat(n + 1)}` }] }));

const entry = fc
  .record({
    sessionId: uuid,
    shard: fc.nat(15),
    foldedSeq: fc.integer({ min: 1, max: 2 ** 40 }),
    state: fc.constantFrom(undefined, "running", "waiting_on_gate", "idle", "failed", "interrupted", "stopped" as const),
    applied: fc.nat(),
    activeTurnId: fc.option(uuid, { nil: undefined }),
    waitingGateId: fc.option(uuid, { nil: undefined }),
    createdAt: fc.option(goTime, { nil: undefined }),
    lastActiveAt: fc.option(goTime, { nil: undefined }),
    title: fc.oneof(fc.constant(""), title, cutOnSpace),
    status: fc.constantFrom(undefined, "active", "stopped" as const),
    loopCount: fc.nat(9),
    gates: fc.array(fc.record({ gateId: uuid, loopId: fc.option(uuid, { nil: undefined }), resolved: fc.boolean() }), { maxLength: 4 }),
  })
  .map(
    ({ applied, ...r }): CatalogEntry => ({
      ...r,
      lastJournalSeq: applied % (r.foldedSeq + 1),
      gates: r.gates.map((g) => ({ ...g, sessionId: r.sessionId, kind: undefined, toolExecutionId: undefined, turnId: undefined, stepId: undefined })),
    }),
  );

/** Ways a written value can be made into one the catalog never writes. */
const spoil = fc.constantFrom(
  (v: Record<string, unknown>) => ({ ...v, extra: 1 }),
  (v: Record<string, unknown>) => ({ ...v, session_id: newId() }),
  (v: Record<string, unknown>) => ({ ...v, session_id: String(v.session_id).toUpperCase() }),
  (v: Record<string, unknown>) => ({ ...v, state: "sleeping" }),
  (v: Record<string, unknown>) => ({ ...v, status: "paused" }),
  (v: Record<string, unknown>) => ({ ...v, loop_count: 0 }),
  (v: Record<string, unknown>) => ({ ...v, loop_count: 1.5 }),
  (v: Record<string, unknown>) => ({ ...v, last_journal_seq: -1 }),
  (v: Record<string, unknown>) => ({ ...v, title: "" }),
  (v: Record<string, unknown>) => ({ ...v, title: "x".repeat(TITLE_MAX_RUNES + 1) }),
  (v: Record<string, unknown>) => ({ ...v, title: " x" }),
  (v: Record<string, unknown>) => ({ ...v, title: "x\u3000" }),
  (v: Record<string, unknown>) => ({ ...v, title: "a\nb" }),
  (v: Record<string, unknown>) => ({ ...v, created_at: "yesterday" }),
  (v: Record<string, unknown>) => ({ ...v, last_active_at: "2026-13-45T99:99:99Z" }),
  (v: Record<string, unknown>) => ({ ...v, active_turn_id: "not-a-uuid" }),
  (v: Record<string, unknown>) => {
    const { jetloop: _, ...rest } = v;
    return rest;
  },
  (v: Record<string, unknown>) => ({ ...v, jetloop: { ...(v.jetloop as object), folded_seq: "7" } }),
  (v: Record<string, unknown>) => ({ ...v, jetloop: { ...(v.jetloop as object), shard: -1 } }),
  (v: Record<string, unknown>) => ({ ...v, jetloop: { ...(v.jetloop as object), gates: [{ gate_id: "x" }] } }),
  (v: Record<string, unknown>) => ({ ...v, jetloop: { ...(v.jetloop as object), more: true } }),
  (v: Record<string, unknown>) => ({ ...v, last_journal_seq: (v.jetloop as { folded_seq: number }).folded_seq + 1 }),
);

describe("the catalog entry", () => {
  it("reads back every entry as written", () => {
    fc.assert(
      fc.property(entry, (e) => {
        const back = decodeEntry(entryKey(e.sessionId), encodeEntry(e));
        expect(back).toEqual({ ...e, gates: e.gates.map((g) => ({ ...g, loopId: g.loopId })) });
        expect(encodeEntry(back)).toBe(encodeEntry(e));
      }),
      { numRuns: 300, seed: SEED },
    );
  });

  it("refuses every value the catalog never writes, typed, whatever is wrong", () => {
    fc.assert(
      fc.property(entry, spoil, (e, f) => {
        const text = JSON.stringify(f(JSON.parse(encodeEntry(e)) as Record<string, unknown>));
        expect(() => decodeEntry(entryKey(e.sessionId), text)).toThrow(CatalogEntryError);
      }),
      { numRuns: 300, seed: SEED },
    );
  });

  it("refuses malformed, ambiguous and misplaced values", () => {
    fc.assert(
      fc.property(entry, fc.string(), (e, junk) => {
        const good = encodeEntry(e);
        const key = entryKey(e.sessionId);
        for (const text of [good.slice(0, -1), `${good}x${junk}`, good.replace('{"session_id"', `{"session_id":"${e.sessionId}","session_id"`), `[${good}]`]) {
          expect(() => decodeEntry(key, text), text).toThrow(CatalogEntryError);
        }
        expect(() => decodeEntry(`checkpoint.${e.shard}`, good)).toThrow(CatalogEntryError);
        expect(() => decodeEntry(entryKey(newId()), good)).toThrow(CatalogEntryError);
      }),
      { numRuns: 200, seed: SEED },
    );
  });
});

/** Go's strings.TrimSpace set (unicode.IsSpace over Latin-1, and White_Space beyond). */
const GO_SPACES = ["\t", "\n", "\v", "\f", "\r", " ", "\u0085", "\u00a0", "\u1680", "\u2000", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"];
const pieces = fc.array(fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom(...GO_SPACES), fc.constant("\n"), fc.constantFrom("🚀", "👩‍💻", "é", "\ufeff")), { maxLength: 12 });

describe("deriveTitle (Go's catalog title)", () => {
  it("is the first non-blank line of the text blocks, trimmed as Go trims, at most 80 runes", () => {
    fc.assert(
      fc.property(fc.array(pieces.map((p) => p.join("")), { maxLength: 3 }), fc.boolean(), (texts, withImage) => {
        const blocks = texts.map((text) => ({ type: "text" as const, text }));
        if (withImage) blocks.splice(1, 0, { type: "image", mediaType: "image/png" } as never);
        const got = deriveTitle({ role: "user", blocks });
        // The reference, stated directly: split, trim by code point, first non-empty, cut.
        const isSpace = (c: string) => GO_SPACES.includes(c) || (c >= "\u2000" && c <= "\u200a");
        const trim = (l: string) => {
          const cs = [...l];
          while (cs.length > 0 && isSpace(cs[0]!)) cs.shift();
          while (cs.length > 0 && isSpace(cs[cs.length - 1]!)) cs.pop();
          return cs;
        };
        const line = texts.join("").split("\n").map(trim).find((cs) => cs.length > 0) ?? [];
        expect(got).toBe(line.slice(0, TITLE_MAX_RUNES).join(""));
        expect([...got].length).toBeLessThanOrEqual(TITLE_MAX_RUNES);
        expect(got).not.toContain("\n");
        if (got !== "") expect(isDerivedTitle(got)).toBe(true);
      }),
      { numRuns: 500, seed: SEED },
    );
    expect(deriveTitle(undefined)).toBe("");
    expect(deriveTitle({ role: "user" })).toBe("");
  });
});
