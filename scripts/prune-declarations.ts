// Keeps only the declaration files a user's compiler can reach from the package's types
// (dist/index.d.ts, dist/require.d.cts): the others describe the inside of the library
// (the CLI, the gateway's handlers, the feed's machinery), which no import of `jetloop`
// can name. Run by `npm run build` after tsc; an argument names another dist folder (the
// packed-package test builds into a staging copy).
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, relative } from "node:path";

const dist = process.argv[2] ?? "dist";
const isDeclaration = (f: string) => f.endsWith(".d.ts") || f.endsWith(".d.cts");
const all = readdirSync(dist, { recursive: true }).map(String).filter(isDeclaration);
const reached = new Set<string>();
const queue = ["index.d.ts", "require.d.cts"].filter((f) => all.includes(f));
while (queue.length > 0) {
  const f = queue.pop()!;
  if (reached.has(f)) continue;
  reached.add(f);
  const text = readFileSync(join(dist, f), "utf8");
  // Relative specifiers only: tsc writes `from "./x.js"` and `import("./x.js")` in declarations.
  for (const m of text.matchAll(/(?:from\s+|import\()["'](\.{1,2}\/[^"']+)\.js["']/g)) {
    const target = relative(dist, join(dist, dirname(f), `${m[1]}.d.ts`));
    if (!all.includes(target)) throw new Error(`${f} imports ${m[1]}.js, which has no declaration file in ${dist}`);
    queue.push(target);
  }
}
const pruned = all.filter((f) => !reached.has(f));
for (const f of pruned) rmSync(join(dist, f));
console.log(`declarations: ${reached.size} kept (reached from index.d.ts), ${pruned.length} removed`);
