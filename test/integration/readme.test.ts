// README.md as a new user meets it: the package packed, installed into a fresh ES module
// project, every TypeScript block of the README type-checked there and the runnable ones
// run against the test server. A block that declares what the reader supplies
// (`declare function handle…`) is type-checked only. The same installed package's command
// line is run there as a user runs it (`npx jetloop …`): one pack and install for both.
import { execFile, spawn, spawnSync } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { natsUrl, uniqueNamespace } from "../harness/context.js";
import { findServerBinary } from "../harness/server.js";
import { oldestNode, refusedEngines } from "../harness/engines.js";
import { userDocs } from "../harness/user-docs.js";
import { connect as connectNats } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";

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
  // Built as `npm run build` builds, into the staging copy.
  await run(process.execPath, ["--import", "tsx", "scripts/build-package.ts", join(stage, "dist")], { cwd: repo });
  await Promise.all(["package.json", "README.md", "LICENSE", "docs", "streams"].map((f) => cp(join(repo, f), join(stage, f), { recursive: true })));
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
  blocks = userDocs().flatMap((d) => tsBlocks(d.text));
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
    // The blocks leave nothing behind on the server: no durable, no read consumer.
    const nc = await connectNats({ servers: natsUrl() });
    try {
      const jsm = await jetstreamManager(nc);
      const streams = (await jsm.streams.names().next()).filter((n) => n.startsWith("acme"));
      expect(streams.length).toBeGreaterThan(0);
      for (const stream of streams) expect({ stream, consumers: (await jsm.consumers.list(stream).next()).map((c) => c.name) }).toEqual({ stream, consumers: [] });
    } finally {
      await nc.close();
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

  it("ships no source maps, and only the declarations index.d.ts reaches (the rest are the inside of the library)", async () => {
    const dist = join(app, "node_modules/jetloop/dist");
    const files = (await readdir(dist, { recursive: true })).map(String);
    expect(files.filter((f) => f.endsWith(".map"))).toEqual([]);
    // Every declaration file a user's compiler can reach from the package's types, and no other.
    const reached = new Set<string>();
    const queue = ["index.d.ts", "require.d.cts"].filter((f) => files.includes(f));
    while (queue.length > 0) {
      const f = queue.pop()!;
      if (reached.has(f)) continue;
      reached.add(f);
      const text = await readFile(join(dist, f), "utf8");
      for (const m of text.matchAll(/(?:from\s+|import\()["'](\.{1,2}\/[^"']+)\.js["']/g)) queue.push(join(f, "..", `${m[1]}.d.ts`));
    }
    const declarations = files.filter((f) => f.endsWith(".d.ts") || f.endsWith(".d.cts"));
    expect(declarations.filter((f) => !reached.has(f))).toEqual([]);
    expect([...reached].filter((f) => !declarations.includes(f))).toEqual([]);
    expect(declarations.length).toBeGreaterThan(10);
  });

  it("ships its code compact: the generated decoders minified, the page without them, the code under its ceiling", async () => {
    const dist = join(app, "node_modules/jetloop/dist");
    const files = (await readdir(dist, { recursive: true })).map(String);
    const size = async (f: string) => (await readFile(join(dist, f))).length;
    // Minified: a few long lines, not the generator's thousands of short ones.
    const decoders = await readFile(join(dist, "codec/generated/decoders.js"), "utf8");
    expect(decoders.split("\n").length).toBeLessThan(50);
    // The page decodes on the reference path: none of the generated decoders' code (their
    // per-type sets of folded keys) in it.
    const page = await readFile(join(dist, "web/app.js"), "utf8");
    expect(page).not.toMatch(/"TOOL_EXECUTION_ID"/);
    // A ceiling on the code a user installs, so growth is a decision: measured 1.52 MB when
    // set (1.24 MB of library, 0.28 MB of page). Raise it in the commit that grows the code,
    // saying why.
    let code = 0;
    for (const f of files.filter((n) => n.endsWith(".js") || n.endsWith(".cjs"))) code += await size(f);
    expect(code).toBeLessThan(1_600_000);
    expect(await size("web/app.js")).toBeLessThan(300_000);
  });
});

/** A PATH with node and npx but no nats-server: a user's machine that has none. */
const PATH_WITHOUT_NATS = [...new Set([dirname(process.execPath), "/usr/bin", "/bin"])].join(":");

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `npx jetloop ARGS` in the installed project, as its user types it. */
function npxJetloop(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((done) => {
    execFile("npx", ["--no-install", "jetloop", ...args], { cwd: app, env: { ...process.env, NATS_URL: "", ...env }, timeout: 60_000 }, (error, stdout, stderr) => {
      done({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr });
    });
  });
}

describe("the installed command line", () => {
  it("`npx jetloop --help` prints the commands and exit codes and names no repository script", async () => {
    const r = await npxJetloop(["--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Usage: jetloop <command> [options]");
    expect(r.stdout).toContain("3 demo or dev found no nats-server to start");
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/npm run/);
  }, 60_000);

  it("`npx jetloop dev` and `demo` without a nats-server: one line saying how to get one, exit 3, no usage text", async () => {
    // The precondition, so the case cannot pass by finding one.
    expect(spawnSync("sh", ["-c", "command -v nats-server"], { env: { PATH: PATH_WITHOUT_NATS } }).status).not.toBe(0);
    for (const command of ["dev", "demo"]) {
      const r = await npxJetloop([command], { PATH: PATH_WITHOUT_NATS, NATS_SERVER_BIN: "" });
      expect({ command, code: r.code, stdout: r.stdout }).toEqual({ command, code: 3, stdout: "" });
      const lines = r.stderr.trimEnd().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^jetloop ${command}: NATS_SERVER_MISSING: no nats-server found .*https://github\\.com/nats-io/nats-server/releases.*NATS_SERVER_BIN`));
      expect(r.stderr).not.toMatch(/Usage|npm run/);
    }
  }, 60_000);

  it("a hint names a command the user has: `npx jetloop dev`, not a repository script", async () => {
    const r = await npxJetloop(["consumers", "--server", "nats://127.0.0.1:1"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/\nhint: .*`npx jetloop dev` starts a local one/);
    expect(r.stderr).not.toMatch(/npm run/);
  }, 60_000);

  it("`npx jetloop provision --verify` says what it checked, never that it is provisioning", async () => {
    const ns = uniqueNamespace();
    const verify = await npxJetloop(["provision", "--verify", "--server", natsUrl(), "--namespace", ns]);
    expect(verify.code).toBe(2);
    expect(verify.stdout).not.toMatch(/provisioning/);
    expect(verify.stdout).toContain(`stream ${ns}_journal: missing`);
    const apply = await npxJetloop(["provision", "--server", natsUrl(), "--namespace", ns]);
    expect(apply.code).toBe(0);
    expect(apply.stdout).toContain(`stream ${ns}_journal: created`);
  }, 60_000);

  it("`jetloop dev` with NATS_SERVER_BIN starts the server, the gateway and its page, and stops on Ctrl-C", async () => {
    // The installed bin itself (what npx runs: npm dies of the signal itself, so its own
    // code would say nothing of jetloop's), in a process group of its own, signalled as a
    // terminal's Ctrl-C signals the foreground group: the throwaway server gets it too.
    const child = spawn(join(app, "node_modules/.bin/jetloop"), ["dev", "--listen", "127.0.0.1:0", "--every", "1"], {
      cwd: app,
      env: { ...process.env, NATS_URL: "", PATH: PATH_WITHOUT_NATS, NATS_SERVER_BIN: findServerBinary() },
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
    const page = await new Promise<string>((done, fail) => {
      child.stdout.on("data", (b: Buffer) => {
        stdout += b.toString();
        const url = /^open (http:\/\/\S+\/) /m.exec(stdout)?.[1];
        if (url) done(url);
      });
      void exited.then((code) => fail(new Error(`dev exited ${code}: ${stdout}${stderr}`)));
    });
    try {
      const res = await fetch(page);
      expect([res.status, res.headers.get("content-type")]).toEqual([200, "text/html; charset=utf-8"]);
      await res.arrayBuffer();
    } finally {
      process.kill(-child.pid!, "SIGINT");
    }
    expect(await exited).toBe(0);
    expect(stdout).toContain("stopped: simulated loop, gateway, nats-server");
    expect(`${stdout}${stderr}`).not.toMatch(/npm run/);
  }, 90_000);
});
