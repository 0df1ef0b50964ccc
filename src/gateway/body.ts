import type { IncomingMessage } from "node:http";

/**
 * The request body as text, or undefined past `maxBytes` (the runtime answers that with
 * 400 invalid_body, never 413). Reading stops at the cap; the rest is not buffered.
 */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<string | undefined> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > maxBytes) {
    req.resume();
    return undefined;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      req.resume();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}
