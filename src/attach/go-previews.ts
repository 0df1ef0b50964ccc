/**
 * Previews of an attached session from the Go runtime's `/events` stream: each ephemeral
 * frame jetloop has a type for (tool_call_started, tool_call_completed) is published as a
 * jetloop preview (core NATS, never stored). Enduring frames are ignored: the session
 * store is their source, read in order by the session follower, and an SSE stream drops
 * frames on a slow client (Go's hub) where the store does not. The stream is opened again
 * after it ends or fails, with a backoff doubled per failure and bounded; previews sent
 * while it is down are lost, as they are for any client of the runtime (no resume).
 */
import { decodeEvent } from "../codec/codec.js";
import type { JetloopEvent } from "../events/catalogue.js";
import type { EventRegistry } from "../events/registry.js";
import { GoHttpError, type GoHttp } from "./go-http.js";

/** The serve frame kinds jetloop has an event type for; the others (token_delta, input_queued, compaction_started) have none. */
const KINDS: Record<string, string> = { tool_call_started: "ToolCallStarted", tool_call_completed: "ToolCallCompleted" };

/**
 * The jetloop preview for one ephemeral frame's data, or undefined when jetloop has no
 * type for its kind, it names another session, or the event it makes is refused by the
 * codec (a frame is read as strictly as any event).
 */
export function previewOf(data: string, sessionId: string, registry?: EventRegistry<unknown>): JetloopEvent | undefined {
  let frame: { v?: unknown; kind?: unknown; header?: unknown; delta?: unknown };
  try {
    frame = JSON.parse(data) as typeof frame;
  } catch {
    return undefined;
  }
  const type = typeof frame.kind === "string" ? KINDS[frame.kind] : undefined;
  if (frame.v !== 1 || type === undefined) return undefined;
  const header = frame.header as Record<string, unknown> | undefined;
  if (typeof header !== "object" || header === null || header.session_id !== sessionId) return undefined;
  const delta = typeof frame.delta === "object" && frame.delta !== null ? (frame.delta as Record<string, unknown>) : {};
  // The frame carries the header as Go writes it and the event's own fields: together
  // they are the event's wire form (the gateway writes the frame from exactly these).
  try {
    return decodeEvent<JetloopEvent>(JSON.stringify({ ...delta, ...header, type, v: 1 }), registry ? { registry: registry } : {});
  } catch {
    return undefined;
  }
}

/** What a preview follower needs: the runtime, how to publish, how to report. */
export interface PreviewDeps {
  readonly http: GoHttp;
  readonly registry?: EventRegistry<unknown> | undefined;
  /** Publishes one preview (fire and forget: a preview is never stored). */
  publish(event: JetloopEvent): Promise<unknown>;
  /** A connection failure, once per distinct message in a row (a stopped runtime is not reported every backoff). */
  report(sessionId: string, error: Error): void;
  readonly minBackoffMs: number;
  readonly maxBackoffMs: number;
}

/** One session's preview stream figures. */
export interface PreviewFigures {
  /** The /events stream is open (the runtime answered 200). */
  readonly connected: boolean;
  /** Previews published. */
  readonly previews: number;
  /** Frames not published: a kind jetloop has no type for, a frame it cannot read, a publish refused. */
  readonly skipped: number;
  /** Times the stream was opened again after it ended or failed. */
  readonly reconnects: number;
  /** The last failure of the stream (the runtime unreachable, a status other than 200, …); never holds the token. */
  readonly lastError?: string | undefined;
}

/** Follows one session's `/events` until closed. */
export class PreviewFollower {
  readonly #deps: PreviewDeps;
  readonly #sessionId: string;
  readonly #abort = new AbortController();
  readonly #done: Promise<void>;
  #connected = false;
  #previews = 0;
  #skipped = 0;
  #reconnects = 0;
  #lastError: string | undefined;

  constructor(deps: PreviewDeps, sessionId: string) {
    this.#deps = deps;
    this.#sessionId = sessionId;
    this.#done = this.#run();
  }

  figures(): PreviewFigures {
    return { connected: this.#connected, previews: this.#previews, skipped: this.#skipped, reconnects: this.#reconnects, ...(this.#lastError ? { lastError: this.#lastError } : {}) };
  }

  async #run(): Promise<void> {
    const signal = this.#abort.signal;
    let delay = this.#deps.minBackoffMs;
    while (!signal.aborted) {
      let notLive = false;
      try {
        const opened = () => {
          this.#connected = true;
          // A stream that opened is a success: the next failure starts the backoff again.
          delay = this.#deps.minBackoffMs;
        };
        for await (const f of this.#deps.http.events(this.#sessionId, signal, opened)) {
          if (f.event !== "ephemeral") continue;
          const event = previewOf(f.data, this.#sessionId, this.#deps.registry);
          if (event === undefined) {
            this.#skipped++;
            continue;
          }
          try {
            await this.#deps.publish(event);
            this.#previews++;
          } catch {
            this.#skipped++;
          }
        }
      } catch (e) {
        const err = e instanceof Error ? e : new GoHttpError("unreachable", String(e));
        if (err.message !== this.#lastError) this.#deps.report(this.#sessionId, err);
        this.#lastError = err.message;
        notLive = err instanceof GoHttpError && err.status === 404;
      }
      this.#connected = false;
      if (signal.aborted) break;
      // Jitter keeps many sessions' streams from reopening at the same instant after the runtime comes back.
      await sleep(delay / 2 + Math.random() * (delay / 2), signal);
      // A session the runtime does not host live (404: stopped, or hosted elsewhere) is asked
      // again at most every 4 × maxBackoffMs, so a store of many stopped sessions costs the
      // runtime few requests; a reachable runtime's live session comes back within maxBackoffMs.
      delay = Math.min(delay * 2, notLive ? 4 * this.#deps.maxBackoffMs : this.#deps.maxBackoffMs);
      if (!signal.aborted) this.#reconnects++;
    }
  }

  async close(): Promise<void> {
    this.#abort.abort();
    await this.#done;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
