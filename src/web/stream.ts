/// <reference lib="dom" />
/**
 * Follows one session's SSE stream into a SessionModel. The first connection reads from
 * the journal's beginning; EventSource's own reconnects send Last-Event-ID (the last
 * enduring frame's id); when the browser gives up (the gateway answered an error), a new
 * EventSource starts after the model's last journal sequence, with backoff.
 */
import { unmarshalEvent, unmarshalPreview } from "../codec/codec.js";
import { describeFailure, getJson } from "./api.js";
import { backoffMs, type LinkState } from "./link.js";
import type { SessionModel } from "./session-model.js";

/** The serve shape's ephemeral kinds and the event types they carry (reference §3). */
const KIND_TYPES: Record<string, string> = { tool_call_started: "ToolCallStarted", tool_call_completed: "ToolCallCompleted" };

export interface StreamCallbacks {
  readonly onState: (state: LinkState, why?: string) => void;
  readonly onChange: () => void;
  /** A frame that could not be read as the runtime reads it: the stream stops. */
  readonly onRefused: (message: string) => void;
}

export class SessionStream {
  #source: EventSource | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #attempt = 0;
  #closed = false;

  constructor(
    readonly sessionId: string,
    readonly model: SessionModel,
    readonly cb: StreamCallbacks,
  ) {
    this.#open();
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#source?.close();
  }

  #open(): void {
    const url = `/v1/sessions/${encodeURIComponent(this.sessionId)}/events?last_event_id=${this.model.lastJournalSeq}`;
    const source = new EventSource(url);
    this.#source = source;
    this.cb.onState(this.#attempt === 0 ? "connecting" : "reconnecting");
    source.addEventListener("open", () => {
      this.#attempt = 0;
      this.cb.onState("live");
    });
    source.addEventListener("error", () => {
      if (this.#closed || source !== this.#source) return;
      // Previews missed while away are gone for good: the journal says what happened.
      this.model.resetLive();
      this.cb.onChange();
      if (source.readyState === EventSource.CONNECTING) return this.cb.onState("reconnecting", "the event stream was cut; the browser is reconnecting");
      source.close();
      void this.#retry();
    });
    source.addEventListener("enduring", (m) => this.#frame(m as MessageEvent<string>, true));
    source.addEventListener("ephemeral", (m) => this.#frame(m as MessageEvent<string>, false));
  }

  /** The browser gave up (the gateway answered an error): ask the status route why, then retry unless the session does not exist. */
  async #retry(): Promise<void> {
    this.#attempt++;
    const wait = backoffMs(this.#attempt);
    const r = await getJson(`/v1/sessions/${encodeURIComponent(this.sessionId)}/status`);
    if (this.#closed) return;
    if (!r.ok && r.failure.status === 404) {
      this.close();
      return this.cb.onRefused(`Session ${this.sessionId} does not exist in this namespace: ${describeFailure(r.failure)}`);
    }
    const why = r.ok ? "the event stream was refused" : `the event stream was refused: ${describeFailure(r.failure)}`;
    this.cb.onState("disconnected", `${why}; retrying in ${Math.round(wait / 1000)} s`);
    this.#timer = setTimeout(() => this.#open(), wait);
  }

  #frame(m: MessageEvent<string>, enduring: boolean): void {
    try {
      if (enduring) {
        const journalSeq = Number(m.lastEventId);
        const { event } = JSON.parse(m.data) as { event: unknown };
        if (this.model.apply({ event: unmarshalEvent(JSON.stringify(event)), journalSeq })) this.cb.onChange();
        return;
      }
      const f = JSON.parse(m.data) as { kind: string; header: object; delta?: object };
      const type = KIND_TYPES[f.kind];
      if (type === undefined) return; // a kind the runtime added later: nothing to show
      if (this.model.apply({ event: unmarshalPreview(JSON.stringify({ ...f.header, ...f.delta, type, v: 1 })), journalSeq: 0 })) this.cb.onChange();
    } catch (e) {
      this.close();
      this.cb.onRefused(`a ${enduring ? `journal event (sequence ${m.lastEventId})` : "preview"} could not be read, so the page stopped following: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
}
