// Whole turns for readers (src/journal/turn-span.ts): a message of a jetloop atomic batch
// at stream sequence s, batch sequence k of n, tells its batch's span [s-k+1, s-k+n]; a read
// that ended inside a span goes on to its end (never past a user's bound), a subscription
// that starts inside one skips it. Checked over generated k, n (1..1,000) and positions, and
// over generated journals: whatever the filter, the read's end and the start, a reader that
// applies the rules message by message gets each turn's selected messages wholly or not at all.
import { headers } from "@nats-io/nats-core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { begunBefore, turnSpan, turnSpanOf, turnSpanOfMessage, wholeTurnEnd } from "../../src/journal/turn-span.js";

const MAX = 1000;
/** A batch size, the message's batch sequence in it, and its stream sequence (a span starting at 1 or later). */
const memberArb = fc
  .integer({ min: 1, max: MAX })
  .chain((n) => fc.record({ n: fc.constant(n), k: fc.integer({ min: 1, max: n }), first: fc.integer({ min: 1, max: 1e9 }) }))
  .map(({ n, k, first }) => ({ n, k, seq: first + k - 1 }));

function batchHeaders(k: string, n: string | undefined) {
  const h = headers();
  h.set("Nats-Batch-Id", "B");
  h.set("Nats-Batch-Sequence", k);
  if (n !== undefined) h.set("Jetloop-Batch-Size", n);
  return h;
}

describe("a turn's span", () => {
  it("is the n contiguous sequences holding seq at place k (property)", () => {
    fc.assert(
      fc.property(memberArb, ({ n, k, seq }) => {
        const span = turnSpan(seq, k, n);
        expect(span.last - span.first + 1).toBe(n);
        expect(seq - span.first + 1).toBe(k);
        expect(turnSpanOf(batchHeaders(String(k), String(n)), seq)).toEqual(span);
      }),
    );
  });

  it("is none without jetloop's size, or with values jetloop never writes (property)", () => {
    const notCount = fc.oneof(fc.constant("0"), fc.constant("01"), fc.constant("1001"), fc.constant("-3"), fc.constant("2.5"), fc.constant(""), fc.integer({ min: 1001, max: 1e6 }).map(String));
    fc.assert(
      fc.property(memberArb, notCount, fc.boolean(), ({ n, k, seq }, bad, badSize) => {
        expect(turnSpanOf(batchHeaders(String(k), undefined), seq)).toBeUndefined();
        expect(turnSpanOf(undefined, seq)).toBeUndefined();
        expect(turnSpanOf(badSize ? batchHeaders(String(k), bad) : batchHeaders(bad, String(n)), seq)).toBeUndefined();
        // k past n, or a span that would begin before the stream's first sequence.
        if (k < n) expect(turnSpanOf(batchHeaders(String(n), String(k)), seq)).toBeUndefined();
        expect(turnSpanOf(batchHeaders(String(k), String(n)), k - 1 > 0 ? k - 1 : 0)).toBeUndefined();
      }),
    );
    expect(turnSpanOfMessage({ get headers(): never { throw new Error("unreadable") } }, 5)).toBeUndefined();
  });

  it("extends a read that ended inside it to its end, never past the user's bound; one that did not, not (property)", () => {
    fc.assert(
      fc.property(memberArb, fc.integer({ min: -MAX, max: MAX }), fc.option(fc.integer({ min: 0, max: 2 * MAX }), { nil: undefined }), ({ n, k, seq }, offset, bound) => {
        const span = turnSpan(seq, k, n);
        const covered = Math.max(seq, span.last + offset); // a read covers at least the message it delivered
        const limit = bound === undefined ? undefined : covered + bound - MAX;
        const end = wholeTurnEnd(span, covered, limit);
        if (span.last <= covered) expect(end).toBe(covered);
        else if (limit === undefined || limit >= span.last) expect(end).toBe(span.last);
        else expect(end).toBe(Math.max(covered, limit));
        expect(wholeTurnEnd(undefined, covered, limit)).toBe(covered);
      }),
    );
  });

  it("is skipped by a start at or after its first sequence, and only by one (property)", () => {
    fc.assert(
      fc.property(memberArb, fc.integer({ min: -2 * MAX, max: 2 * MAX }), ({ n, k, seq }, offset) => {
        const span = turnSpan(seq, k, n);
        const start = span.first + offset;
        expect(begunBefore(span, start)).toBe(start >= span.first);
        expect(begunBefore(undefined, start)).toBe(false);
      }),
    );
  });
});

/** A journal: turns (jetloop batches) and lone messages, each message with a tag a filter selects by. */
interface Stored {
  seq: number;
  tag: number;
  /** The batch it is in (its first sequence), its place and size; undefined for a lone message or a raw batch. */
  turn?: { id: number; k: number; n: number };
}
const journalArb = fc.array(fc.record({ size: fc.integer({ min: 1, max: 40 }), jetloop: fc.boolean(), tags: fc.array(fc.nat({ max: 3 }), { minLength: 40, maxLength: 40 }) }), { minLength: 1, maxLength: 30 }).map((units) => {
  const stored: Stored[] = [];
  for (const [id, u] of units.entries()) {
    for (let k = 1; k <= u.size; k++) stored.push({ seq: stored.length + 1, tag: u.tags[k - 1]!, ...(u.jetloop ? { turn: { id, k, n: u.size } } : {}) });
  }
  return stored;
});
const spanOf = (m: Stored) => (m.turn ? turnSpan(m.seq, m.turn.k, m.turn.n) : undefined);

/** For each jetloop turn, how many of its selected messages the reader got and how many there are. */
function wholeness(got: readonly Stored[], journal: readonly Stored[], selects: (m: Stored) => boolean): [number, number][] {
  const turns = new Map<number, [number, number]>();
  for (const m of journal) if (m.turn && selects(m)) (turns.get(m.turn.id) ?? turns.set(m.turn.id, [0, 0]).get(m.turn.id)!)[1]++;
  for (const m of got) if (m.turn) turns.get(m.turn.id)![0]++;
  return [...turns.values()];
}

describe("readers that apply the rules", () => {
  it("a bounded read ending anywhere gets every turn wholly or not at all (property)", () => {
    fc.assert(
      fc.property(journalArb, fc.nat(), fc.nat({ max: 3 }), fc.boolean(), (journal, at, tag, endKnown) => {
        const selects = (m: Stored) => tag === 0 || m.tag !== tag;
        const end = 1 + (at % journal.length); // the journal's last_seq when the read began
        const read = journal.filter((m) => m.seq <= end && selects(m));
        const last = read.at(-1);
        // The read knows the journal's end (a shard end) or only where its count ran out (its last message).
        const covered = endKnown || !last ? end : last.seq;
        const to = last ? wholeTurnEnd(spanOf(last), covered) : covered;
        const got = [...read, ...journal.filter((m) => m.seq > covered && m.seq <= to && selects(m))];
        for (const [count, size] of wholeness(got, journal, selects)) expect([0, size]).toContain(count);
        expect(new Set(got.map((m) => m.seq)).size).toBe(got.length);
      }),
    );
  });

  it('a subscription starting at "new" anywhere gets every later turn wholly and none begun by then (property)', () => {
    fc.assert(
      fc.property(journalArb, fc.nat(), fc.nat({ max: 3 }), (journal, at, tag) => {
        const selects = (m: Stored) => tag === 0 || m.tag !== tag;
        const start = at % (journal.length + 1); // last_seq when it started: 0 for an empty journal
        const got = journal.filter((m) => m.seq > start && selects(m) && !begunBefore(spanOf(m), start));
        for (const [count, size] of wholeness(got, journal, selects)) expect([0, size]).toContain(count);
        // Nothing after the start but a turn begun by then is skipped.
        for (const m of journal) if (m.seq > start && selects(m) && !got.includes(m)) expect(spanOf(m)!.first).toBeLessThanOrEqual(start);
      }),
    );
  });
});
