// Bundles the gateway's web page script (src/web/app.ts, with the SDK's projection and
// codec) for the browser into dist/web/, beside the page itself. Run by `npm run build`;
// an argument names another dist folder (the packed-package test builds into a staging copy).
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { build, type Plugin } from "esbuild";

// zod's classic namespace re-exports every locale (`z.locales`), which the page never
// uses and esbuild cannot tree-shake from a namespace object: half the bundle. Its English
// messages are imported on their own and stay.
const withoutZodLocales: Plugin = {
  name: "without-zod-locales",
  setup(b) {
    b.onResolve({ filter: /\/locales\/index\.js$/ }, (a) => (a.importer.includes("/node_modules/zod/") ? { path: "zod-locales", namespace: "empty" } : undefined));
    b.onLoad({ filter: /.*/, namespace: "empty" }, () => ({ contents: "export {};", loader: "js" }));
  },
};

// The codec's generated decoders are a fast path beside the reference reader, which decides
// every input alike (src/codec/README.md): a page decoding one session's events needs the
// reference path alone, and the generated code was a third of the bundle. Without the
// module every type takes the reference path (codec.ts finds no factory for it).
const withoutGeneratedDecoders: Plugin = {
  name: "without-generated-decoders",
  setup(b) {
    b.onResolve({ filter: /\/generated\/decoders\.js$/ }, (a) => (a.importer.includes("/src/codec/") ? { path: "generated-decoders", namespace: "empty" } : undefined));
  },
};

const web = join(process.argv[2] ?? "dist", "web");
mkdirSync(web, { recursive: true });
await build({
  entryPoints: ["src/web/app.ts"],
  bundle: true,
  minify: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  outfile: join(web, "app.js"),
  logLevel: "warning",
  plugins: [withoutZodLocales, withoutGeneratedDecoders],
});
copyFileSync("src/web/page.html", join(web, "page.html"));
