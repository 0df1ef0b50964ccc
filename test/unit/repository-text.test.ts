// The repository's text as a reader gets it: the license the package names, and no
// reference to this project's issue tracker by number in code or docs (a number says
// nothing to someone without that tracker; the text says what was done and why).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const repo = resolve(import.meta.dirname, "../..");
const ROOTS = ["src", "docs", "scripts", "test", "bench", "deploy", "streams"];
const SKIP = new Set(["node_modules", "dist", ".nats", "data", "golden"]);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (SKIP.has(name)) return [];
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : /\.(ts|md|json|sh|conf|yml|html)$/.test(name) ? [path] : [];
  });
}

describe("repository text", () => {
  it("has the license package.json names, in full", () => {
    const license = readFileSync(join(repo, "LICENSE"), "utf8");
    expect((JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { license: string }).license).toBe("Apache-2.0");
    expect(license).toMatch(/^\s+Apache License\n\s+Version 2\.0, January 2004\n/);
    expect(license).toContain("END OF TERMS AND CONDITIONS");
    expect(license).toContain("APPENDIX: How to apply the Apache License to your work.");
  });

  it("names no issue of this project by number in code or docs", () => {
    const top = readdirSync(repo).filter((f) => f.endsWith(".md")).map((f) => join(repo, f));
    const all = [...top, ...ROOTS.flatMap((r) => files(join(repo, r)))];
    // This file names the pattern it looks for; another project's issue (nats-server's) is a citation.
    const self = resolve(import.meta.filename);
    const found = all
      .filter((f) => f !== self)
      .flatMap((f) => readFileSync(f, "utf8").split("\n").map((line, i) => ({ where: `${relative(repo, f)}:${i + 1}`, line })))
      .filter(({ line }) => /\bissues? #?\d+/i.test(line.replace(/nats-server issue \d+/g, "")))
      .map(({ where }) => where);
    expect(found).toEqual([]);
  });
});
