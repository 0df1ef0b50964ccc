// Bundles the gateway's web page script (src/web/app.ts, with the SDK's projection and
// codec) for the browser into dist/web/, beside the page itself. Run by `npm run build`.
import { copyFileSync, mkdirSync } from "node:fs";
import { build } from "esbuild";

mkdirSync("dist/web", { recursive: true });
await build({ entryPoints: ["src/web/app.ts"], bundle: true, minify: true, format: "esm", platform: "browser", target: "es2022", outfile: "dist/web/app.js", logLevel: "warning" });
copyFileSync("src/web/page.html", "dist/web/page.html");
