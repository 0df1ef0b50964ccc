// The docs' policy service block is what users copy: its `decide` must approve exactly
// what it says (reads under /tmp) and deny the rest, for every request, not just the usual
// one. The function is taken from the page as written and run over generated requests.
import { posix } from "node:path";
import { runInNewContext } from "node:vm";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { docWith } from "../harness/user-docs.js";

const page = docWith("## A policy service").text;
const section = page.slice(page.indexOf("## A policy service"));
const block = /```ts\n([\s\S]*?)```/.exec(section)![1]!;
const source = /decide: ([\s\S]*?),\n\}\);/.exec(block)![1]!;
type Decide = (c: { request: { requirements: { kind: string; match: string }[] } }) => { effect: string; reason: string };
const imports = [...block.matchAll(/^import \{ ([^}]+) \} from "node:path";$/gm)].flatMap((m) => m[1]!.split(",").map((s) => s.trim()));
// Only node:path's posix may be used besides the language: anything else would not run here.
expect(imports.every((i) => i === "posix")).toBe(true);
const decide = runInNewContext(`(${source})`, { posix }) as Decide;

/** What "reads under /tmp" means: at least one requirement, each an fs.read of a path inside /tmp. */
const inTmp = (match: string) => match.startsWith("/") && posix.normalize(match).startsWith("/tmp/");
const expected = (rs: { kind: string; match: string }[]) => rs.length > 0 && rs.every((r) => r.kind === "fs.read" && inTmp(r.match));

const segment = fc.constantFrom("tmp", "..", ".", "etc", "a", "", "tmpx", "shadow");
const path = fc.oneof(
  fc.array(segment, { maxLength: 5 }).map((s) => `/${s.join("/")}`),
  fc.array(segment, { maxLength: 5 }).map((s) => s.join("/")),
  fc.string(),
);
const requirement = fc.record({ kind: fc.constantFrom("fs.read", "fs.write", "command.execute", "net.http"), match: path });

describe("the docs' policy block", () => {
  it("approves exactly the requests whose every requirement reads inside /tmp (none: deny; '..' out of /tmp: deny)", () => {
    fc.assert(
      fc.property(fc.array(requirement, { maxLength: 4 }), (rs) => {
        expect(decide({ request: { requirements: rs } }).effect).toBe(expected(rs) ? "approve" : "deny");
      }),
      { numRuns: 2000 },
    );
  });

  it("the cases a reader would try first", () => {
    const read = (match: string) => ({ kind: "fs.read", match });
    expect(decide({ request: { requirements: [] } }).effect).toBe("deny");
    expect(decide({ request: { requirements: [read("/tmp/../etc/shadow")] } }).effect).toBe("deny");
    expect(decide({ request: { requirements: [read("/tmp/a")] } }).effect).toBe("approve");
  });
});
