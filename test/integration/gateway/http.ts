// HTTP helpers for the gateway tests: plain requests and an SSE reader over fetch.
import { expect } from "vitest";

export interface Reply {
  readonly status: number;
  readonly body: string;
  readonly headers: Headers;
}

export async function request(url: string, init: RequestInit = {}): Promise<Reply> {
  const res = await fetch(url, init);
  return { status: res.status, body: await res.text(), headers: res.headers };
}

/** An open SSE response: read text until a condition holds, then close. */
export class SseReader {
  text = "";
  #ended = false;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  readonly #controller: AbortController;

  private constructor(
    readonly response: Response,
    controller: AbortController,
  ) {
    this.#reader = response.body!.getReader();
    this.#controller = controller;
  }

  /** Opens the stream; resolves when the headers have arrived (the gateway flushes them at once). */
  static async open(url: string, headers: Record<string, string> = {}): Promise<SseReader> {
    const controller = new AbortController();
    const res = await fetch(url, { headers, signal: controller.signal });
    expect(res.status).toBe(200);
    return new SseReader(res, controller);
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Reads until `done(text)` or the stream ends; fails after `timeoutMs`. */
  async until(done: (text: string) => boolean, timeoutMs = 10_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (!done(this.text) && !this.#ended) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`SSE: condition not met in ${timeoutMs} ms; got ${this.text.length} chars:\n${this.text.slice(-500)}`);
      let timer: NodeJS.Timeout | undefined;
      const r = await Promise.race([
        this.#reader.read(),
        new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), left))),
      ]).finally(() => clearTimeout(timer));
      if (r === "timeout") continue;
      if (r.done) this.#ended = true;
      else this.text += this.#decoder.decode(r.value, { stream: true });
    }
    return this.text;
  }

  close(): void {
    this.#controller.abort();
  }
}

/** The `id:` values of the enduring frames in an SSE text. */
export function frameIds(text: string): number[] {
  return [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
}

/** The frames of an SSE text (comments such as `: ping` left out). */
export function frames(text: string): string[] {
  return text
    .split("\n\n")
    .filter((f) => f !== "" && !f.startsWith(":"))
    .map((f) => `${f}\n\n`);
}
