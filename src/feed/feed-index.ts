/**
 * Viewers of the namespace feed by their feed subjects, found from an event's journal
 * subject in O(matching patterns): patterns are grouped by their session and loop tokens
 * (either may be `*`), so a message looks up four groups and tests only their patterns'
 * family and type tokens. Filter subjects come from `filterSubject` (subjects.ts):
 * `{ns}.feed.{session|*}.{loop|_|*}.>` or `….{family|*}.{type|*}`.
 */
import { SubjectError } from "../errors.js";
import { channelPrefix } from "../subjects/subjects.js";

/** One pattern's viewers (one held alone, more in a set); `family`/`type` undefined for `>`. */
interface Pattern<V> {
  readonly tail: string;
  readonly family: string | undefined;
  readonly type: string | undefined;
  viewers: V | Set<V>;
}

type Patterns<V> = Pattern<V> | Pattern<V>[];

export class FeedIndex<V extends object> {
  readonly #prefix: string;
  /** `{ns}.journal`: a journal subject's root, its shard's token (`journal` or `journal-{k}-of-{S}`) begins so. */
  readonly #journalRoot: string;
  /**
   * Session token → loop token → the patterns with that scope (either token may be `*`).
   * Most viewers of a process each have a loop of their own: one pattern object and one
   * map entry apiece, no set or array until a second one shares it.
   */
  readonly #sessions = new Map<string, Map<string, Patterns<V>>>();
  #size = 0;

  constructor(namespace: string) {
    this.#prefix = channelPrefix(namespace, "feed");
    this.#journalRoot = channelPrefix(namespace, "journal").slice(0, -1);
  }

  /** Viewer-pattern pairs held. */
  get size(): number {
    return this.#size;
  }

  add(feedSubject: string, viewer: V): void {
    const [session, loop, tail] = this.#split(feedSubject);
    let loops = this.#sessions.get(session);
    if (!loops) this.#sessions.set(session, (loops = new Map<string, Patterns<V>>()));
    const held = loops.get(loop);
    const p = find(held, tail);
    if (p === undefined) {
      const [family, type] = tail === ">" ? [] : tail.split(".");
      const made: Pattern<V> = { tail, family: family === "*" ? undefined : family, type: type === "*" ? undefined : type, viewers: viewer };
      loops.set(loop, held === undefined ? made : Array.isArray(held) ? [...held, made] : [held, made]);
    } else if (p.viewers instanceof Set) {
      if (p.viewers.has(viewer)) return;
      p.viewers.add(viewer);
    } else {
      if (p.viewers === viewer) return;
      p.viewers = new Set([p.viewers, viewer]);
    }
    this.#size++;
  }

  remove(feedSubject: string, viewer: V): void {
    const [session, loop, tail] = this.#split(feedSubject);
    const loops = this.#sessions.get(session);
    const held = loops?.get(loop);
    const p = find(held, tail);
    if (p === undefined) return;
    if (p.viewers instanceof Set) {
      if (!p.viewers.delete(viewer)) return;
      if (p.viewers.size === 1) p.viewers = p.viewers.values().next().value!;
      this.#size--;
      return;
    }
    if (p.viewers !== viewer) return;
    this.#size--;
    const rest = Array.isArray(held) ? held.filter((x) => x !== p) : [];
    if (rest.length > 0) loops!.set(loop, rest.length === 1 ? rest[0]! : rest);
    else loops!.delete(loop);
    if (loops!.size === 0) this.#sessions.delete(session);
  }

  /** Calls `fn` for each viewer of a pattern that matches the journal subject. */
  forMatching(journalSubject: string, fn: (viewer: V) => void): void {
    // Tokens found by position: this runs once per feed message, for all viewers.
    // Any shard's journal subject: the token after the namespace is its shard's (every shard republishes into the one feed).
    if (!journalSubject.startsWith(this.#journalRoot)) return;
    const p0 = journalSubject.indexOf(".", this.#journalRoot.length) + 1;
    if (p0 === 0) return;
    const p1 = journalSubject.indexOf(".", p0);
    const p2 = journalSubject.indexOf(".", p1 + 1);
    const p3 = journalSubject.indexOf(".", p2 + 1);
    if (p1 < 0 || p2 < 0 || p3 < 0) return;
    const session = journalSubject.slice(p0, p1);
    const loop = journalSubject.slice(p1 + 1, p2);
    const family = journalSubject.slice(p2 + 1, p3);
    const type = journalSubject.slice(p3 + 1);
    const exact = this.#sessions.get(session);
    const any = this.#sessions.get("*");
    if (exact) {
      dispatch(exact.get(loop), family, type, fn);
      dispatch(exact.get("*"), family, type, fn);
    }
    if (any) {
      dispatch(any.get(loop), family, type, fn);
      dispatch(any.get("*"), family, type, fn);
    }
  }

  /** Every viewer, once. */
  viewers(): Set<V> {
    const all = new Set<V>();
    for (const loops of this.#sessions.values()) {
      for (const held of loops.values()) {
        for (const p of Array.isArray(held) ? held : [held]) {
          if (p.viewers instanceof Set) for (const v of p.viewers) all.add(v);
          else all.add(p.viewers);
        }
      }
    }
    return all;
  }

  /** A feed filter subject's session and loop tokens and the rest (`>` or `{family}.{type}`). */
  #split(feedSubject: string): [session: string, loop: string, tail: string] {
    if (!feedSubject.startsWith(this.#prefix)) throw new SubjectError(`${JSON.stringify(feedSubject)} is not a feed subject`);
    const t = feedSubject.slice(this.#prefix.length).split(".");
    if (t.length === 3 && t[2] === ">") return [t[0]!, t[1]!, ">"];
    if (t.length === 4) return [t[0]!, t[1]!, `${t[2]}.${t[3]}`];
    throw new SubjectError(`${JSON.stringify(feedSubject)} is not a feed filter subject`);
  }
}

function dispatch<V>(held: Patterns<V> | undefined, family: string, type: string, fn: (viewer: V) => void): void {
  if (held === undefined) return;
  if (!Array.isArray(held)) return dispatchPattern(held, family, type, fn);
  for (const p of held) dispatchPattern(p, family, type, fn);
}

function dispatchPattern<V>(p: Pattern<V>, family: string, type: string, fn: (viewer: V) => void): void {
  if ((p.family !== undefined && p.family !== family) || (p.type !== undefined && p.type !== type)) return;
  if (p.viewers instanceof Set) for (const v of p.viewers) fn(v);
  else fn(p.viewers);
}

function find<V>(held: Patterns<V> | undefined, tail: string): Pattern<V> | undefined {
  if (held === undefined) return undefined;
  if (!Array.isArray(held)) return held.tail === tail ? held : undefined;
  return held.find((p) => p.tail === tail);
}
