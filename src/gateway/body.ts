import type { IncomingMessage } from "node:http";

export type BodyResult = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly error: "invalid_body" | "body_timeout" };

/**
 * The request body as text. Past `maxBytes` it is invalid_body (the runtime answers 400,
 * never 413) and reading stops: the rest is not buffered. A body that has not fully
 * arrived within `timeoutMs` (a trickle) is body_timeout; the caller closes the connection.
 */
export async function readBody(req: IncomingMessage, maxBytes: number, timeoutMs: number): Promise<BodyResult> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > maxBytes) {
    req.resume();
    return { ok: false, error: "invalid_body" };
  }
  return new Promise<BodyResult>((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (r: BodyResult) => {
      clearTimeout(timer);
      req.off("data", onData).off("end", onEnd).off("error", onError).off("aborted", onError);
      if (!r.ok) req.resume();
      resolve(r);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) finish({ ok: false, error: "invalid_body" });
      else chunks.push(chunk);
    };
    const onEnd = () => finish({ ok: true, text: Buffer.concat(chunks).toString("utf8") });
    const onError = () => finish({ ok: false, error: "invalid_body" });
    const timer = setTimeout(() => finish({ ok: false, error: "body_timeout" }), timeoutMs);
    req.on("data", onData).on("end", onEnd).on("error", onError).on("aborted", onError);
  });
}

/**
 * A body the route answered without reading (an early error, a GET with a body) still
 * arrives, and Node drains it to keep the connection alive: it gets `timeoutMs` from the
 * answer to finish, else the connection is closed. Without this a trickle holds the
 * connection forever.
 */
export function cutUnreadBody(req: IncomingMessage, timeoutMs: number): void {
  if (req.complete) return;
  const timer = setTimeout(() => {
    if (!req.complete) req.socket.destroy();
  }, timeoutMs);
  const clear = () => clearTimeout(timer);
  req.once("end", clear).once("close", clear);
}
