// No module of src/ may reach itself through its imports (type-only imports included: a
// circle of types is a circle of design). The layers themselves are eslint's rule
// (eslint.config.js); this is the check eslint cannot make.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));

/** The circles known and accepted: none. An entry here is a decision, with its reason beside it. */
const KNOWN: readonly (readonly string[])[] = [];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : /\.c?ts$/.test(e.name) && !e.name.endsWith(".d.ts") ? [join(dir, e.name)] : [],
  );
}

/** Each module's relative imports (and re-exports), as paths under src/. */
export function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files.map((f) => relative(SRC, f)));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const from = relative(SRC, file);
    const targets = ts
      .preProcessFile(readFileSync(file, "utf8"), true, true)
      .importedFiles.map((f) => f.fileName)
      .filter((name) => name.startsWith("."))
      .map((name) => normalize(join(dirname(from), name)).replace(/\.js$/, ".ts").replace(/\.cjs$/, ".cts"));
    for (const t of targets) if (!known.has(t)) throw new Error(`${from} imports ${t}, which is not a source file`);
    graph.set(from, [...new Set(targets)]);
  }
  return graph;
}

/** The strongly connected components of more than one module (or a module importing itself): Tarjan's. */
export function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const members: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        members.push(w);
      } while (w !== v);
      if (members.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(members.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

describe("import circles in src/", () => {
  it("finds a circle where there is one, and none in a chain", () => {
    expect(circles(new Map([["a", ["b"]], ["b", ["c"]], ["c", []]]))).toEqual([]);
    expect(circles(new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]]))).toEqual([["a", "b", "c"]]);
    expect(circles(new Map([["a", ["a"]]]))).toEqual([["a"]]);
  });

  it("has none beyond the known ones", () => {
    const found = circles(importGraph(sources(SRC)));
    expect(found.map((c) => c.join(" → "))).toEqual(KNOWN.map((c) => [...c].sort().join(" → ")));
  });
});
