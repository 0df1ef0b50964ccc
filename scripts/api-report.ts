/**
 * The API report of the package's public surface: etc/jetloop.api.md, what
 * @microsoft/api-extractor reads from the declarations of src/index.ts (every exported
 * name with its kind and signature). A change of the surface is then a change of this
 * file, reviewed like code.
 *
 *   npx tsx scripts/api-report.ts          # rewrites etc/jetloop.api.md (npm run api:report)
 *   npx tsx scripts/api-report.ts --check  # fails if the surface differs from it (npm run api:check, in npm test's static checks)
 *
 * The declarations are emitted by tsc into .api-build/ (ignored; tsconfig.build.json, as
 * the build does), so the check needs no build and leaves dist/ alone: a folder of the
 * project, so the report's paths are the same on every machine, and not under
 * node_modules/, whose files api-extractor takes for other packages'.
 * api-extractor.json at the root holds the settings; the entry point is replaced here.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Extractor, ExtractorConfig } from "@microsoft/api-extractor";
import { exportedNames, REPORT_PATH } from "./api-report-names.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

function main(): void {
  const check = process.argv.includes("--check");
  const out = join(root, ".api-build");
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  try {
    const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
    execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json"), "--emitDeclarationOnly", "--outDir", out], { stdio: "inherit" });
    const configPath = join(root, "api-extractor.json");
    const configObject = ExtractorConfig.loadFile(configPath);
    configObject.mainEntryPointFilePath = join(out, "index.d.ts");
    const config = ExtractorConfig.prepare({ configObject, configObjectFullPath: configPath, packageJsonFullPath: join(root, "package.json") });
    const result = Extractor.invoke(config, { localBuild: !check, showVerboseMessages: false });
    const names = exportedNames(readFileSync(REPORT_PATH, "utf8"));
    if (check && result.apiReportChanged) {
      process.stderr.write("the public surface differs from etc/jetloop.api.md: review the change, then run npm run api:report and commit the report\n");
      process.exitCode = 1;
    } else if (!result.succeeded) {
      process.stderr.write(`api-extractor: ${result.errorCount} errors\n`);
      process.exitCode = 1;
    } else {
      console.log(`api report: ${names.length} exported names${check ? ", unchanged" : ""}`);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
