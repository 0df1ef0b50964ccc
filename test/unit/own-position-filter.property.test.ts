// The filter a restricted user's position is read under (src/journal/own-position.ts,
// positionFilter): over generated sets of journal subjects (concrete and wildcard, one
// session or several, sharded or not), it covers every subject of the set, and it stays
// inside the narrowest scope they share: a set within one session gives a filter within
// that session, which a follower's grant on her session (`<root>.<session>.>`) admits.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { positionFilter } from "../../src/journal/own-position.js";

/** NATS subject matching: `*` one token, `>` one or more at the end (pattern over pattern: wildcards as tokens). */
function covers(filter: string, subject: string): boolean {
  const f = filter.split(".");
  const s = subject.split(".");
  for (let i = 0; i < f.length; i++) {
    if (f[i] === ">") return s.length > i;
    if (i >= s.length) return false;
    if (f[i] === "*") {
      if (s[i] === ">") return false;
      continue;
    }
    if (f[i] !== s[i]) return false;
  }
  return f.length === s.length;
}

const token = fc.stringMatching(/^[a-z0-9-]{1,8}$/);
const root = fc.oneof(fc.constant("acme.journal"), fc.constant("a.b.journal"), fc.integer({ min: 2, max: 5 }).chain((n) => fc.integer({ min: 0, max: n - 1 }).map((k) => `acme.journal-${k}-of-${n}`)));
/** One subject of a session: concrete, or with the wildcards a filter uses. */
const subjectOf = (r: string, session: string) =>
  fc.oneof(
    fc.tuple(token, token, token).map(([loop, family, type]) => `${r}.${session}.${loop}.${family}.${type}`),
    token.map((loop) => `${r}.${session}.${loop}.>`),
    fc.constant(`${r}.${session}.*.>`),
    fc.tuple(token, token).map(([family, type]) => `${r}.${session}.*.${family}.${type}`),
    fc.constant(`${r}.${session}._.>`),
  );

describe("a restricted user's position filter", () => {
  it("is the subject itself when there is one", () => {
    fc.assert(
      fc.property(
        root.chain((r) => token.chain((s) => subjectOf(r, s))),
        fc.integer({ min: 1, max: 4 }),
        (subject, copies) => {
          expect(positionFilter(Array.from({ length: copies }, () => subject))).toBe(subject);
        },
      ),
    );
  });

  it("covers every subject of a session's set and stays inside that session (property)", () => {
    fc.assert(
      fc.property(
        root.chain((r) => token.chain((session) => fc.tuple(fc.constant(r), fc.constant(session), fc.array(subjectOf(r, session), { minLength: 1, maxLength: 6 })))),
        ([r, session, subjects]) => {
          const f = positionFilter(subjects);
          for (const s of subjects) expect(covers(f, s), `${f} covers ${s}`).toBe(true);
          // Within her session: the grant "<root>.<session>.>" admits it.
          expect(covers(`${r}.${session}.>`, f), `${f} within ${r}.${session}`).toBe(true);
        },
      ),
    );
  });

  it("covers every subject of a set over several sessions, and no wider than their shared root (property)", () => {
    fc.assert(
      fc.property(
        root.chain((r) => fc.tuple(fc.constant(r), fc.uniqueArray(token, { minLength: 2, maxLength: 4 }).chain((sessions) => fc.tuple(...sessions.map((s) => subjectOf(r, s)))))),
        ([r, subjects]) => {
          const f = positionFilter(subjects);
          for (const s of subjects) expect(covers(f, s), `${f} covers ${s}`).toBe(true);
          expect(f).toBe(`${r}.>`);
        },
      ),
    );
  });

  it("is \">\" for nothing, or for subjects sharing no token", () => {
    expect(positionFilter([])).toBe(">");
    expect(positionFilter(["a.journal.s.l.f.T", "b.journal.s.l.f.T"])).toBe(">");
  });
});
