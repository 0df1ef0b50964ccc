// The package's dist/ (`npm run build`; an argument names another folder: the packed-package
// test builds into a staging copy, so two runs never share dist/). The steps, in order:
// tsc; only the declarations a user's compiler can reach (prune-declarations.ts); the
// generated code compacted; the gateway's page (build-web.ts).
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { transformSync } from "esbuild";

const dist = process.argv[2] ?? "dist";
const tsx = ["--import", "tsx"];
rmSync(dist, { recursive: true, force: true });
execFileSync(process.execPath, [createRequire(import.meta.url).resolve("typescript/bin/tsc"), "-p", "tsconfig.build.json", "--outDir", dist], { stdio: "inherit" });
execFileSync(process.execPath, [...tsx, "scripts/prune-declarations.ts", dist], { stdio: "inherit" });

// Generated modules (src/codec/generated/, written by scripts/generate-codec.ts) are read
// by no one: a person reads and changes their generator. Minified they are a quarter of
// their size, and they were a quarter of the package's code. Hand-written modules stay as
// tsc writes them, so a stack trace into jetloop names a line a person can read.
const generated = join(dist, "codec", "generated");
for (const f of readdirSync(generated).filter((n) => n.endsWith(".js"))) {
  const path = join(generated, f);
  writeFileSync(path, transformSync(readFileSync(path, "utf8"), { minify: true, format: "esm", target: "es2022", legalComments: "none" }).code);
}

execFileSync(process.execPath, [...tsx, "scripts/build-web.ts", dist], { stdio: "inherit" });
