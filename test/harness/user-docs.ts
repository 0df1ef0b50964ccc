/**
 * The documentation a user reads: README.md, then docs/*.md by name. Tests that run what
 * the docs show (their TypeScript blocks, walkthroughs, the policy block, compose commands)
 * read it from here, so a section moved between pages is still run.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const repo = resolve(import.meta.dirname, "../..");

export interface UserDoc {
  /** Repository-relative path. */
  readonly file: string;
  readonly text: string;
}

export function userDocs(): UserDoc[] {
  const pages = readdirSync(join(repo, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`);
  return ["README.md", ...pages].map((file) => ({ file, text: readFileSync(join(repo, file), "utf8") }));
}

/** The one page holding `heading` (a markdown heading line, exactly); throws unless exactly one does. */
export function docWith(heading: string): UserDoc {
  const found = userDocs().filter((d) => d.text.split("\n").includes(heading));
  if (found.length !== 1) throw new Error(`${found.length} pages hold the heading ${JSON.stringify(heading)}: ${found.map((d) => d.file).join(", ")}`);
  return found[0]!;
}
