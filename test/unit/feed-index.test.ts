// The namespace feed's local dispatch: a journal subject reaches exactly the viewers whose
// filter subjects (as resolveFilter makes them) match it, and removal leaves nothing behind.
import { describe, expect, it } from "vitest";
import { defaultRegistry, newId } from "../../src/index.js";
import { FeedIndex } from "../../src/feed/feed-index.js";
import { type EventFilter, resolveFilter } from "../../src/sources/filter.js";

const ns = "t1";

class Viewer {
  constructor(readonly name: string) {}
}

function index(viewers: [Viewer, EventFilter][]): FeedIndex<Viewer> {
  const ix = new FeedIndex<Viewer>(ns);
  for (const [v, f] of viewers) for (const s of resolveFilter(ns, f, defaultRegistry).feedSubjects) ix.add(s, v);
  return ix;
}

function matching(ix: FeedIndex<Viewer>, subject: string): string[] {
  const out: string[] = [];
  ix.forMatching(subject, (v) => out.push(v.name));
  return out.sort();
}

describe("FeedIndex", () => {
  const [s1, s2, l1, l2] = [newId(), newId(), newId(), newId()];
  const loop1 = new Viewer("loop1");
  const loop1b = new Viewer("loop1b");
  const loop2 = new Viewer("loop2");
  const session1 = new Viewer("session1");
  const all = new Viewer("all");
  const gates = new Viewer("gates");
  const decided = new Viewer("decided");
  const filters: [Viewer, EventFilter][] = [
    [loop1, { sessions: [s1], enduring: { loops: [l1] } }],
    [loop1b, { sessions: [s1], enduring: { loops: [l1] } }],
    [loop2, { sessions: [s1], enduring: { loops: [l2] } }],
    [session1, { sessions: [s1], enduring: "all" }],
    [all, { enduring: "all" }],
    [gates, { enduring: { loops: [l1] }, families: ["gate"] }],
    [decided, { sessions: [s1], enduring: "all", types: ["PermissionDecided"] }],
  ];

  it("dispatches a journal subject to the viewers whose feed subjects match it, each once", () => {
    const ix = index(filters);
    expect(matching(ix, `${ns}.journal.${s1}.${l1}.tool.PermissionDecided`)).toEqual(["all", "decided", "loop1", "loop1b", "session1"]);
    expect(matching(ix, `${ns}.journal.${s1}.${l1}.gate.GateOpened`)).toEqual(["all", "gates", "loop1", "loop1b", "session1"]);
    // Session-scoped events reach the loop viewers of the session (their `_` subject).
    expect(matching(ix, `${ns}.journal.${s1}._.session.SessionStarted`)).toEqual(["all", "loop1", "loop1b", "loop2", "session1"]);
    expect(matching(ix, `${ns}.journal.${s2}.${l2}.tool.PermissionDecided`)).toEqual(["all"]);
    expect(matching(ix, `${ns}.journal.${s2}.${l1}.gate.GateOpened`)).toEqual(["all", "gates"]);
    expect(matching(ix, `other.journal.${s1}.${l1}.tool.PermissionDecided`)).toEqual([]);
  });

  it("counts viewer-pattern pairs and holds nothing once every viewer left", () => {
    const ix = index(filters);
    const pairs = filters.reduce((n, [, f]) => n + resolveFilter(ns, f, defaultRegistry).feedSubjects.length, 0);
    expect(ix.size).toBe(pairs);
    expect(ix.viewers().size).toBe(filters.length);
    // Adding a pair twice changes nothing.
    ix.add(resolveFilter(ns, filters[0]![1], defaultRegistry).feedSubjects[0]!, loop1);
    expect(ix.size).toBe(pairs);
    for (const [v, f] of filters) {
      for (const s of resolveFilter(ns, f, defaultRegistry).feedSubjects) ix.remove(s, v);
      expect(matching(ix, `${ns}.journal.${s1}.${l1}.tool.PermissionDecided`)).not.toContain(v.name);
    }
    expect(ix.size).toBe(0);
    expect(ix.viewers().size).toBe(0);
  });

  it("refuses a subject that is not a feed filter subject of its namespace", () => {
    const ix = new FeedIndex<Viewer>(ns);
    expect(() => ix.add(`${ns}.journal.${s1}.${l1}.>`, loop1)).toThrow(/not a feed subject/);
    expect(() => ix.add(`${ns}.feed.${s1}`, loop1)).toThrow(/not a feed filter subject/);
  });
  it("matches every shard's journal subjects alike (every shard republishes into the one feed)", () => {
    const ix = index([[loop1, { enduring: { loops: [l1] }, sessions: [s1] }], [loop2, { enduring: "all" }]]);
    for (const root of ["journal", "journal-0-of-3", "journal-2-of-3", "journal-11-of-16"]) {
      expect(matching(ix, `${ns}.${root}.${s1}.${l1}.tool.ToolCallCompleted`)).toEqual(["loop1", "loop2"]);
      expect(matching(ix, `${ns}.${root}.${s2}.${l1}.tool.ToolCallCompleted`)).toEqual(["loop2"]);
    }
    expect(matching(ix, `${ns}.feed.${s1}.${l1}.tool.ToolCallCompleted`)).toEqual([]);
  });
});
