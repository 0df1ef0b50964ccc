/**
 * The Go runtime's HTTP surface (harness `pkg/serve`, reference harness-http.md), as the
 * attach calls it: a POST with a bounded wait and a bounded answer, and the `/events`
 * stream read frame by frame. The bearer token goes in the `Authorization` header of
 * requests to the configured origin only: redirects are never followed (a 3xx is an
 * answer like any other), and the token is never logged or put in an error message.
 */
import { JetloopError } from "../errors.js";

/** Where the runtime's HTTP surface is and how it is called. */
export interface GoHttpSettings {
  /** The runtime's base URL (`http://host:port`, optionally with a path prefix before `/v1`). */
  readonly url: string;
  /** The bearer token, sent to that origin only. */
  readonly token?: string | undefined;
  /** How long a POST waits for the runtime's whole answer. */
  readonly requestTimeoutMs: number;
  /** How long `/events` may take to answer with its headers (Go flushes nothing until a frame or its 20 s ping). */
  readonly eventsConnectTimeoutMs: number;
  /** The largest answer body read (a POST's, or one SSE frame); past it the request fails. */
  readonly maxResponseBytes: number;
}

/**
 * A call to the runtime's HTTP surface that gave no answer to act on: unreachable, too
 * slow, an answer too large or not in Go's envelope. `status` is the HTTP status when
 * there was one. Never carries the token.
 */
export class GoHttpError extends JetloopError {
  constructor(
    readonly problem: "unreachable" | "timeout" | "too_large" | "malformed" | "status",
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super("ATTACH_FAILED", `the Go runtime's HTTP surface: ${message}`, options);
  }
}

/** A runtime answer: its status, and Go's error envelope when it sent one. */
export interface GoAnswer {
  readonly status: number;
  /** Go's `error.code` (`gate_not_found`, …) for an error answer in its envelope. */
  readonly code?: string | undefined;
  readonly retryable: boolean;
  /** The parsed JSON body, when it was JSON. */
  readonly body: unknown;
}

/** Checks a base URL: http or https, no query, fragment or credentials. Returns it without a trailing slash. */
export function checkGoHttpUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new TypeError(`not a URL: ${JSON.stringify(url)}`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new TypeError(`not an http or https URL: ${JSON.stringify(url)}`);
  if (u.username || u.password) throw new TypeError("the URL carries credentials: give the token with --go-token-file or JETLOOP_GO_TOKEN");
  if (u.search || u.hash) throw new TypeError(`the URL has a query or fragment: ${JSON.stringify(url)}`);
  return u.href.replace(/\/+$/, "");
}

/** Reads at most `max` bytes of a body; more is a GoHttpError too_large (the rest is not read). */
async function readCapped(body: ReadableStream<Uint8Array> | null, max: number, signal: AbortSignal): Promise<Uint8Array> {
  if (body === null) return new Uint8Array();
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let n = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      n += value.byteLength;
      if (n > max) throw new GoHttpError("too_large", `an answer larger than ${max} bytes`);
      parts.push(value);
    }
  } catch (e) {
    if (e instanceof GoHttpError) throw e;
    throw signal.aborted ? new GoHttpError("timeout", "no whole answer in time", undefined, { cause: e }) : new GoHttpError("unreachable", "the answer broke off", undefined, { cause: e });
  } finally {
    void reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(parts);
}

/** The runtime's HTTP surface: POSTs and the `/events` stream. */
export class GoHttp {
  readonly #base: string;
  readonly #settings: GoHttpSettings;

  constructor(settings: GoHttpSettings) {
    this.#base = checkGoHttpUrl(settings.url);
    this.#settings = settings;
  }

  #headers(extra: Record<string, string>): Record<string, string> {
    return this.#settings.token === undefined ? extra : { ...extra, authorization: `Bearer ${this.#settings.token}` };
  }

  /**
   * POSTs `body` (JSON text) to `path` (`/v1/…`); resolves with the runtime's answer,
   * whatever its status. Rejects with GoHttpError when there is none to act on: the
   * runtime unreachable, no whole answer within `requestTimeoutMs`, an answer over
   * `maxResponseBytes`, or one that is not JSON.
   */
  async post(path: string, body: string, signal?: AbortSignal): Promise<GoAnswer> {
    const timeout = AbortSignal.timeout(this.#settings.requestTimeoutMs);
    const both = signal ? AbortSignal.any([timeout, signal]) : timeout;
    let res: Response;
    try {
      res = await fetch(this.#base + path, { method: "POST", body, headers: this.#headers({ "content-type": "application/json" }), redirect: "manual", signal: both });
    } catch (e) {
      throw timeout.aborted ? new GoHttpError("timeout", `no answer within ${this.#settings.requestTimeoutMs} ms`, undefined, { cause: e }) : new GoHttpError("unreachable", `POST ${path} failed: ${(e as Error).message}`, undefined, { cause: e });
    }
    const bytes = await readCapped(res.body, this.#settings.maxResponseBytes, both);
    let json: unknown;
    try {
      json = bytes.byteLength === 0 ? undefined : JSON.parse(Buffer.from(bytes).toString("utf8"));
    } catch (e) {
      throw new GoHttpError("malformed", `POST ${path}: a ${res.status} answer that is not JSON`, res.status, { cause: e });
    }
    const error = (json as { error?: { code?: unknown; retryable?: unknown } } | undefined)?.error;
    return { status: res.status, code: typeof error?.code === "string" ? error.code : undefined, retryable: error?.retryable === true, body: json };
  }

  /**
   * Opens `GET /v1/sessions/{sid}/events` and yields its frames (`event` name and `data`;
   * comments such as the ping are skipped) until the stream ends, `signal` aborts, or a
   * frame exceeds `maxResponseBytes`. A status other than 200 is a GoHttpError `status`;
   * `onOpen` is called on the 200 (the runtime may send no frame for 20 s).
   */
  async *events(sessionId: string, signal: AbortSignal, onOpen?: () => void): AsyncGenerator<{ event: string; data: string; id?: string | undefined }> {
    const connect = AbortSignal.timeout(this.#settings.eventsConnectTimeoutMs);
    let res: Response;
    try {
      res = await fetch(`${this.#base}/v1/sessions/${sessionId}/events`, { headers: this.#headers({ accept: "text/event-stream" }), redirect: "manual", signal: AbortSignal.any([signal, connect]) });
    } catch (e) {
      if (signal.aborted) return;
      throw connect.aborted ? new GoHttpError("timeout", `/events sent no headers within ${this.#settings.eventsConnectTimeoutMs} ms`, undefined, { cause: e }) : new GoHttpError("unreachable", `/events failed: ${(e as Error).message}`, undefined, { cause: e });
    }
    if (res.status !== 200) {
      const b = await readCapped(res.body, this.#settings.maxResponseBytes, signal).catch(() => new Uint8Array());
      let code = "";
      try {
        code = (JSON.parse(Buffer.from(b).toString("utf8")) as { error?: { code?: string } }).error?.code ?? "";
      } catch {
        // not Go's envelope: the status says enough
      }
      throw new GoHttpError("status", `/events answered ${res.status}${code ? ` ${code}` : ""}`, res.status);
    }
    onOpen?.();
    if (res.body === null) return;
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    try {
      for (;;) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (e) {
          if (signal.aborted) return;
          throw new GoHttpError("unreachable", "/events broke off", undefined, { cause: e });
        }
        if (chunk.done) return;
        buf += chunk.value.replace(/\r\n?/g, "\n");
        for (let end = buf.indexOf("\n\n"); end >= 0; end = buf.indexOf("\n\n")) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const frame = parseFrame(block);
          if (frame) yield frame;
        }
        if (buf.length > this.#settings.maxResponseBytes) throw new GoHttpError("too_large", `an /events frame larger than ${this.#settings.maxResponseBytes} bytes`);
      }
    } finally {
      void reader.cancel().catch(() => undefined);
    }
  }
}

/** One SSE frame's fields (WHATWG's rules: `field: value`, one leading space dropped, data lines joined by \n); undefined for a comment-only block. */
export function parseFrame(block: string): { event: string; data: string; id?: string | undefined } | undefined {
  let event = "message";
  const data: string[] = [];
  let id: string | undefined;
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
    else if (field === "id") id = value;
  }
  return data.length === 0 ? undefined : { event, data: data.join("\n"), id };
}
