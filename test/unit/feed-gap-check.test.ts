// The loop strategy's per-subject gap check (feed/loop-feed.ts), against a model:
// a journal of messages over a few subjects, a feed that loses some, a viewer that has read
// everything up to a baseline. A message reveals a miss exactly when its previous message on
// the same subject lies after the baseline and never arrived; the read then starts just
// after the baseline.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { FeedMessage } from "../../src/feed/feed.js";
import { SubjectGaps, TAKEN_MEMORY } from "../../src/feed/loop-feed.js";

const data = new Uint8Array();

/** A journal: each sequence 1..n on one of `subjects`, with its same-subject predecessor. */
function journal(subjectOf: number[]): FeedMessage[] {
  const last = new Map<number, number>();
  return subjectOf.map((s, i) => {
    const seq = i + 1;
    const m = { shard: 0, seq, lastSeq: last.get(s) ?? 0, subject: `t.journal.s.l.f.T${s}`, data };
    last.set(s, seq);
    return m;
  });
}

describe("the loop strategy's gap check", () => {
  it("flags exactly the messages whose same-subject predecessor after the baseline was lost, reading from just after the baseline", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 200 }),
        fc.array(fc.boolean(), { minLength: 200, maxLength: 200 }),
        fc.nat(),
        (subjectOf, lost, b) => {
          const messages = journal(subjectOf);
          const baseline = b % (messages.length + 1);
          const gaps = new SubjectGaps();
          gaps.settled(baseline);
          const arrived = new Set<number>();
          for (const m of messages) {
            if (m.seq <= baseline || lost[m.seq - 1]) continue;
            const expected = m.lastSeq > baseline && !arrived.has(m.lastSeq) ? baseline + 1 : undefined;
            expect(gaps.missedFrom(m), `seq ${m.seq}`).toBe(expected);
            // The viewer takes it (after closing the gap, when there was one: what the read takes is taken too).
            gaps.took(m.seq);
            arrived.add(m.seq);
          }
          for (const m of messages) expect(gaps.untaken(m.seq), `untaken ${m.seq}`).toBe(m.seq > baseline && !arrived.has(m.seq));
        },
      ),
    );
  });

  it("starts over when the viewer has read up to a sequence: nothing before it is missed", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 500 }), { maxLength: 50 }), fc.integer({ min: 1, max: 500 }), (taken, to) => {
        const gaps = new SubjectGaps();
        for (const s of taken) gaps.took(s);
        gaps.settled(to);
        for (let seq = 1; seq <= to; seq++) expect(gaps.untaken(seq)).toBe(false);
        expect(gaps.untaken(to + 1)).toBe(true);
      }),
    );
  });

  it("remembers a bounded number of sequences: the oldest forgotten becomes the floor", () => {
    const gaps = new SubjectGaps();
    for (let seq = 2; seq <= TAKEN_MEMORY + 2; seq++) gaps.took(seq);
    // Sequence 2 was forgotten and raised the floor: 1 (never taken) is no longer a miss either.
    expect(gaps.untaken(1)).toBe(false);
    expect(gaps.untaken(2)).toBe(false);
    expect(gaps.untaken(TAKEN_MEMORY + 3)).toBe(true);
  });
});
