/**
 * The live parts of an attached runtime, over its HTTP surface (`attach(bus, { goHttp })`,
 * `jetloop attach --go-http URL`): per session followed, its previews from `/events`
 * (go-previews.ts) and its answers and controls forwarded to the runtime (go-answers.ts).
 * The session store holds no ephemeral frames and takes no answers; the runtime's HTTP
 * surface is where both live.
 */
import type { Jetloop } from "../bus.js";
import { SessionAnswers } from "./go-answers.js";
import { GoHttp } from "./go-http.js";
import { type PreviewFigures, PreviewFollower } from "./go-previews.js";
import type { GoHttpSettings } from "./options.js";

/** One session's live figures: its preview stream, and whether answers are served. */
export interface LiveFigures extends PreviewFigures {
  /** The attach is the session's gate actor and serves its controls, forwarding to the runtime. */
  readonly answering: boolean;
}

export class GoLive {
  readonly #bus: Jetloop;
  readonly #http: GoHttp;
  readonly #settings: GoHttpSettings;
  readonly #report: (sessionId: string, error: Error) => void;
  readonly #previews = new Map<string, PreviewFollower>();
  readonly #answers = new Map<string, { answers: SessionAnswers; started: Promise<boolean> }>();
  readonly #followed = new Set<string>();
  #closed = false;

  constructor(bus: Jetloop, settings: GoHttpSettings, report: (sessionId: string, error: Error) => void) {
    this.#bus = bus;
    this.#settings = settings;
    this.#http = new GoHttp(settings);
    this.#report = report;
  }

  /** Starts the live parts of a session the attach follows (once per session). */
  follow(sessionId: string): void {
    if (this.#closed || this.#followed.has(sessionId)) return;
    this.#followed.add(sessionId);
    const bus = this.#bus;
    if (this.#settings.previews) {
      this.#previews.set(
        sessionId,
        new PreviewFollower(
          {
            http: this.#http,
            registry: bus.registry,
            // Fire and forget: a preview is never stored, and a slow confirmation would hold the stream.
            publish: (e) => bus.publish(e, { fireAndForget: true }),
            report: this.#report,
            minBackoffMs: this.#settings.minBackoffMs,
            maxBackoffMs: this.#settings.maxBackoffMs,
          },
          sessionId,
        ),
      );
    }
    if (this.#settings.answers) {
      const answers = new SessionAnswers({ bus: this.#bus, http: this.#http, resolvedWaitMs: this.#settings.resolvedWaitMs, maxInFlight: this.#settings.maxInFlight, report: this.#report }, sessionId);
      const started = answers.start().then(
        () => true,
        (e: unknown) => {
          this.#report(sessionId, e as Error);
          return false;
        },
      );
      this.#answers.set(sessionId, { answers, started });
    }
  }

  /** Resolves once every session's answers are subscribed (for tests and a one-shot attach). */
  async ready(): Promise<void> {
    await Promise.all([...this.#answers.values()].map((a) => a.started));
  }

  figures(sessionId: string): LiveFigures | undefined {
    const p = this.#previews.get(sessionId)?.figures();
    const a = this.#answers.get(sessionId);
    if (p === undefined && a === undefined) return undefined;
    return { ...(p ?? { connected: false, previews: 0, skipped: 0, reconnects: 0 }), answering: a !== undefined };
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#previews.values()].map((p) => p.close()));
    await Promise.all([...this.#answers.values()].map(async (a) => (await a.started) && a.answers.close()));
  }
}
