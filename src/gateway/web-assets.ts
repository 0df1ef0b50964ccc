/**
 * The web page (`/`) and its script (`/app.js`), built into dist/web/ by
 * scripts/build-web.ts. Read once, from dist/web beside the compiled gateway, or from the
 * repository's dist/ when running from source.
 */
import { existsSync, readFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { sendNotFound } from "./envelope.js";

const CANDIDATES = [new URL("../web/", import.meta.url), new URL("../../dist/web/", import.meta.url)];

const ASSETS = {
  page: ["page.html", "text/html; charset=utf-8"],
  script: ["app.js", "text/javascript; charset=utf-8"],
} as const;

/**
 * The page talks to its own origin only, and no other site may frame it: a framed page's
 * Approve button could be clicked through a decoy (clickjacking). Its styles are inline and
 * its favicon a data: URL, so nothing else is loaded.
 */
const PAGE_HEADERS = {
  "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
};

const cache = new Map<string, Buffer>();

function load(file: string): Buffer | undefined {
  let data = cache.get(file);
  if (data === undefined) {
    const dir = CANDIDATES.find((d) => existsSync(new URL(file, d)));
    if (dir === undefined) return undefined;
    data = readFileSync(new URL(file, dir));
    cache.set(file, data);
  }
  return data;
}

/** Serves a web asset; a gateway built without the page (no dist/web) answers 404. */
export function sendAsset(res: ServerResponse, which: keyof typeof ASSETS): void {
  const [file, type] = ASSETS[which];
  const data = load(file);
  if (data === undefined) return sendNotFound(res);
  res.writeHead(200, {
    "Content-Type": type,
    "Content-Length": data.length,
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    ...(which === "page" ? PAGE_HEADERS : {}),
  });
  res.end(data);
}
