// The attach's side of the runtime's HTTP surface, without NATS: every preview frame the Go
// handler wrote (shared/conformance's go-sse-frames.jsonl) read back into a jetloop event that
// jetloop's gateway writes as the same bytes; the kinds jetloop has no type for skipped; and the
// HTTP client's bounds: an answer too large, a redirect never followed (the token goes nowhere
// else), a hung runtime cut at the request bound.
import { readFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { GoHttp, GoHttpError, parseFrame } from "../../src/attach/go-http.js";
import { previewOf } from "../../src/attach/go-previews.js";
import { FrameCache } from "../../src/gateway/sse-frames.js";

const ROOT = join(import.meta.dirname, "../..");
const SID = "6f1c2a3b-4d5e-4f60-8a7b-000000000101";

describe("preview frames from the Go handler", () => {
  const frames = readFileSync(join(ROOT, "test/conformance/data/go-sse-frames.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as { id: string; frame: string })
    .filter((f) => f.frame.startsWith("event: ephemeral"));

  it("holds tool-call frames and frames jetloop has no type for", () => {
    expect(frames.filter((f) => /"kind":"tool_call_(started|completed)"/.test(f.frame)).length).toBeGreaterThanOrEqual(5);
    expect(frames.some((f) => f.frame.includes('"kind":"token_delta"'))).toBe(true);
  });

  it.each(frames.map((f) => [f.id, f.frame] as const))("%s: a tool-call frame becomes the preview jetloop's gateway writes as the same bytes; any other kind is skipped", (_, frame) => {
    const parsed = parseFrame(frame.replace(/\n\n$/, ""))!;
    expect(parsed.event).toBe("ephemeral");
    const event = previewOf(parsed.data, SID);
    if (!/"kind":"tool_call_(started|completed)"/.test(frame)) {
      expect(event).toBeUndefined();
      return;
    }
    expect(event).toBeDefined();
    expect(new FrameCache().frameFor({ event: event!, journalSeq: 0, shard: 0, subject: "" })).toBe(frame);
    // A frame naming another session is not this session's preview.
    expect(previewOf(parsed.data, "6f1c2a3b-4d5e-4f60-8a7b-000000000999")).toBeUndefined();
  });

  it("reads SSE fields as the standard says: comments skipped, one leading space dropped, data lines joined", () => {
    expect(parseFrame(": ping")).toBeUndefined();
    expect(parseFrame("event: x\nid: 7\ndata:a\ndata:  b")).toEqual({ event: "x", id: "7", data: "a\n b" });
    expect(previewOf("{not json", SID)).toBeUndefined();
    expect(previewOf('{"v":2,"kind":"tool_call_started","header":{"session_id":"' + SID + '"},"delta":{}}', SID)).toBeUndefined();
  });
});

let servers: Server[] = [];
afterEach(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  servers = [];
});

async function serve(handler: RequestListener): Promise<string> {
  const s = createServer(handler);
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

const settings = { token: "tok", requestTimeoutMs: 500, eventsConnectTimeoutMs: 500, maxResponseBytes: 1024 };

describe("the HTTP client's bounds", () => {
  it("an answer larger than maxResponseBytes is refused, not read whole", async () => {
    const url = await serve((_, res) => res.writeHead(200, { "content-type": "application/json" }).end(`{"x":"${"a".repeat(4096)}"}`));
    await expect(new GoHttp({ url, ...settings }).post("/v1/x", "{}")).rejects.toMatchObject({ problem: "too_large" });
  });

  it("a redirect is an answer, never followed: the token reaches no other server", async () => {
    const elsewhere: IncomingHttpHeaders[] = [];
    const other = await serve((req, res) => {
      elsewhere.push(req.headers);
      res.end("{}");
    });
    const seen: IncomingHttpHeaders[] = [];
    const url = await serve((req, res) => {
      seen.push(req.headers);
      res.writeHead(307, { location: `${other}/v1/x` }).end();
    });
    const r = await new GoHttp({ url, ...settings }).post("/v1/x", "{}");
    expect(r.status).toBe(307);
    expect(seen[0]?.authorization).toBe("Bearer tok");
    expect(elsewhere).toEqual([]);
  });

  it("a hung runtime is cut at requestTimeoutMs; a stopped one fails at once; neither message holds the token", async () => {
    const url = await serve(() => undefined);
    const t0 = Date.now();
    const hung = await new GoHttp({ url, ...settings }).post("/v1/x", "{}").catch((e: unknown) => e);
    expect(hung).toBeInstanceOf(GoHttpError);
    expect(hung).toMatchObject({ problem: "timeout" });
    expect(Date.now() - t0).toBeLessThan(2000);
    const stopped = await new GoHttp({ url: "http://127.0.0.1:1", ...settings }).post("/v1/x", "{}").catch((e: unknown) => e);
    expect(stopped).toMatchObject({ problem: "unreachable" });
    expect(`${(hung as Error).message} ${(stopped as Error).message}`).not.toContain("tok");
  });

  it("/events: a status other than 200 names it; a frame past the cap ends the stream", async () => {
    const url = await serve((req, res) => {
      if (req.url?.includes("missing")) return void res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"code":"session_not_found","message":"session not found","retryable":false}}\n');
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`event: ephemeral\ndata: ${"x".repeat(4096)}`);
    });
    const http = new GoHttp({ url, ...settings });
    const read = async (sid: string) => {
      const got: unknown[] = [];
      for await (const f of http.events(sid, new AbortController().signal)) got.push(f);
      return got;
    };
    await expect(read("missing")).rejects.toThrow(/404 session_not_found/);
    await expect(read("big")).rejects.toMatchObject({ problem: "too_large" });
  });

  it("refuses a URL that is not http(s) or carries credentials", () => {
    expect(() => new GoHttp({ url: "ftp://h/", ...settings })).toThrow(/http/);
    expect(() => new GoHttp({ url: "http://u:p@h/", ...settings })).toThrow(/credentials/);
  });
});
