/**
 * Viewers of the namespace feed by their feed subjects, found from an event's journal
 * subject in O(matching patterns): patterns are grouped by their session and loop tokens
 * (either may be `*`), so a message looks up four groups and tests only their patterns'
 * family and type tokens. Filter subjects come from `filterSubject` (subjects.ts):
 * `{ns}.feed.{session|*}.{loop|_|*}.>` or `….{family|*}.{type|*}`.
 */
import { SubjectError } from "../subjects/subjects.js";

/** One pattern's viewers; `family`/`type` undefined for `>`. */
interface Pattern<V> {
  readonly family: string | undefined;
  readonly type: string | undefined;
  readonly viewers: Set<V>;
}

export class FeedIndex<V> {
  readonly #prefix: string;
  readonly #journalPrefix: string;
  /** `{session}.{loop}` → pattern tail (`>` or `{family}.{type}`) → viewers. */
  readonly #scopes = new Map<string, Map<string, Pattern<V>>>();
  #size = 0;

  constructor(namespace: string) {
    this.#prefix = `${namespace}.feed.`;
    this.#journalPrefix = `${namespace}.journal.`;
  }

  /** Viewer-pattern pairs held. */
  get size(): number {
    return this.#size;
  }

  add(feedSubject: string, viewer: V): void {
    const [scope, tail] = this.#split(feedSubject);
    let patterns = this.#scopes.get(scope);
    if (!patterns) this.#scopes.set(scope, (patterns = new Map()));
    let p = patterns.get(tail);
    if (!p) {
      const [family, type] = tail === ">" ? [undefined, undefined] : tail.split(".");
      patterns.set(tail, (p = { family: family === "*" ? undefined : family, type: type === "*" ? undefined : type, viewers: new Set() }));
    }
    if (!p.viewers.has(viewer)) {
      p.viewers.add(viewer);
      this.#size++;
    }
  }

  remove(feedSubject: string, viewer: V): void {
    const [scope, tail] = this.#split(feedSubject);
    const patterns = this.#scopes.get(scope);
    const p = patterns?.get(tail);
    if (!p?.viewers.delete(viewer)) return;
    this.#size--;
    if (p.viewers.size > 0) return;
    patterns!.delete(tail);
    if (patterns!.size === 0) this.#scopes.delete(scope);
  }

  /** Calls `fn` for each viewer of a pattern that matches the journal subject. */
  forMatching(journalSubject: string, fn: (viewer: V) => void): void {
    if (!journalSubject.startsWith(this.#journalPrefix)) return;
    const t = journalSubject.slice(this.#journalPrefix.length).split(".");
    if (t.length !== 4) return;
    const [session, loop, family, type] = t as [string, string, string, string];
    for (const scope of [`${session}.${loop}`, `${session}.*`, `*.${loop}`, "*.*"]) {
      const patterns = this.#scopes.get(scope);
      if (!patterns) continue;
      for (const p of patterns.values()) {
        if ((p.family === undefined || p.family === family) && (p.type === undefined || p.type === type)) for (const v of p.viewers) fn(v);
      }
    }
  }

  /** Every viewer, once. */
  viewers(): Set<V> {
    const all = new Set<V>();
    for (const patterns of this.#scopes.values()) for (const p of patterns.values()) for (const v of p.viewers) all.add(v);
    return all;
  }

  #split(feedSubject: string): [scope: string, tail: string] {
    if (!feedSubject.startsWith(this.#prefix)) throw new SubjectError(`${JSON.stringify(feedSubject)} is not a feed subject`);
    const t = feedSubject.slice(this.#prefix.length).split(".");
    if (t.length === 3 && t[2] === ">") return [`${t[0]}.${t[1]}`, ">"];
    if (t.length === 4) return [`${t[0]}.${t[1]}`, `${t[2]}.${t[3]}`];
    throw new SubjectError(`${JSON.stringify(feedSubject)} is not a feed filter subject`);
  }
}
