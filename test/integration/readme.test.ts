// README.md as a new user meets it: the package packed, installed into a fresh ES module
// project, every TypeScript block of the README type-checked there and the runnable ones
// run against the test server. A block that declares what the reader supplies
// (`declare function handle…`) is type-checked only.
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { natsUrl } from "../harness/context.js";
import { oldestNode, refusedEngines } from "../harness/engines.js";

const run = promisify(execFile);
const repo = resolve(import.meta.dirname, "../..");
const tsc = join(repo, "node_modules/typescript/bin/tsc");

/** The ```ts blocks of a markdown text, in order. */
function tsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? "");
}

let work: string;
let app: string;
let blocks: string[];
/** What `npm install` of the packed package printed. */
let install: string;

async function runNode(file: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [file], { cwd: app, env: { ...process.env, NATS_URL: natsUrl() }, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const failed = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === "number" ? failed.code : 1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "jetloop-readme-"));
  // Built and packed from a staging copy, so two projects running this file at once never
  // share dist/ (the package's files: dist, streams, README.md).
  const stage = join(work, "stage");
  await run(process.execPath, [tsc, "-p", join(repo, "tsconfig.build.json"), "--outDir", join(stage, "dist")]);
  await Promise.all(["package.json", "README.md", "streams"].map((f) => cp(join(repo, f), join(stage, f), { recursive: true })));
  const { stdout } = await run("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", work], { cwd: stage });
  const tarball = join(work, stdout.trim().split("\n").pop()!);

  app = join(work, "app");
  await mkdir(app);
  await writeFile(join(app, "package.json"), JSON.stringify({ name: "readme-app", private: true, type: "module" }));
  const installed = await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball, "@types/node@20"], { cwd: app });
  install = `${installed.stdout}${installed.stderr}`;
  await writeFile(
    join(app, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, types: ["node"], outDir: "out", skipLibCheck: false },
      include: ["*.ts"],
    }),
  );
  blocks = tsBlocks(await readFile(join(repo, "README.md"), "utf8"));
  await Promise.all(blocks.map((b, i) => writeFile(join(app, `block${i}.ts`), b)));
}, 240_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

describe("README.md", () => {
  it("installs without an engine warning: every dependency a user gets admits the oldest Node supported", () => {
    expect(install).not.toContain("EBADENGINE");
    // The same on a newer Node, where npm would not warn.
    expect(refusedEngines(join(app, "package-lock.json"), oldestNode())).toEqual([]);
  });

  it("has TypeScript blocks, and all of them type-check against the packed package", async () => {
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    const result = await run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: app }).then(
      () => "",
      (e: { stdout?: string; message?: string }) => e.stdout || (e.message ?? "tsc failed"),
    );
    expect(result).toBe("");
  }, 120_000);

  it("runs every runnable block against the server; watchTools sees the whole approval sequence", async () => {
    const runnable = blocks.map((b, i) => ({ b, i })).filter(({ b }) => !/^declare /m.test(b));
    expect(runnable.length).toBeGreaterThanOrEqual(3);
    const outputs: string[] = [];
    for (const { i } of runnable) {
      const r = await runNode(join(app, "out", `block${i}.js`));
      expect({ block: i, code: r.code, stderr: r.stderr }).toEqual({ block: i, code: 0, stderr: "" });
      outputs.push(r.stdout);
    }
    const watch = outputs.find((o) => o.includes("approval requested"));
    expect(watch?.trim().split("\n").map((l) => l.replace(/[0-9a-f-]{36}/g, "ID").replace(/journal \d+$/, "journal N"))).toEqual([
      "approval requested for ID: bash",
      "tool ID decision approve at journal N",
      "tool ID started: bash",
      "tool ID completed, error=false: total 0",
    ]);
  }, 120_000);

  it("gives a CommonJS consumer a clear message", async () => {
    await writeFile(join(app, "consumer.cjs"), 'require("jetloop");\n');
    const r = await runNode(join(app, "consumer.cjs"));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("jetloop is an ES module and cannot be loaded with require()");
    expect(r.stderr).not.toContain("ERR_PACKAGE_PATH_NOT_EXPORTED");
  });

  it("ships source maps that carry their sources, and no map pointing at unshipped files", async () => {
    const dist = join(app, "node_modules/jetloop/dist");
    const files = (await readdir(dist, { recursive: true })).map(String);
    const maps = files.filter((f) => f.endsWith(".map"));
    expect(maps.filter((f) => f.endsWith(".js.map")).length).toBeGreaterThan(10);
    expect(maps.filter((f) => f.endsWith(".d.ts.map"))).toEqual([]);
    for (const f of maps) {
      const map = JSON.parse(await readFile(join(dist, f), "utf8")) as { sources: string[]; sourcesContent?: (string | null)[] };
      expect({ f, contents: map.sourcesContent?.filter((c) => typeof c === "string").length }).toEqual({ f, contents: map.sources.length });
    }
  });
});
