/**
 * `GET /v1/sessions/{sid}/journal`: a page of a session's public events in journal order
 * (reference §4). The journal sequence is the stream sequence; internal events are
 * skipped, which leaves gaps, and `limit` counts what is returned.
 */
import type { Jetloop } from "../bus.js";
import type { JetloopEvent } from "../events/catalogue.js";
import type { Delivery } from "../subscribe/delivery.js";
import { compactJson } from "../wire/strict-json.js";

export interface JournalPage {
  readonly events: readonly { readonly journalSeq: number; readonly json: string }[];
  /** Last returned sequence + 1, or 0 when done. */
  readonly nextSeq: number;
  /** The journal ran dry before `limit` was reached. */
  readonly done: boolean;
}

const decoder = new TextDecoder();

/**
 * An enduring event as the journal stores it, embedded as Go's json.Encoder embeds it
 * (compact, HTML-safe: what Go's writer and jetloop's encoder store already). From the
 * stored bytes, not re-encoded: the delivery was decoded (so the reader accepted it, and
 * filtering saw it), and the bytes are what every other reader of the journal gets.
 */
export function storedEventJson(d: Delivery<JetloopEvent>): string {
  if (d.data === undefined) throw new Error(`the delivery of journal sequence ${d.journalSeq} carries no stored bytes`);
  return compactJson(decoder.decode(d.data));
}

export async function readJournalPage(bus: Jetloop, sessionId: string, fromSeq: number, limit: number): Promise<JournalPage> {
  const events: { journalSeq: number; json: string }[] = [];
  // One more than the page so that the read does not pull far past what it returns.
  for await (const d of bus.session(sessionId).replay({ enduring: "all" }, { fromSeq: Math.max(fromSeq, 1), batch: Math.min(limit + 1, 512) })) {
    events.push({ journalSeq: d.journalSeq, json: storedEventJson(d) });
    // An exact fill says done:false (the Go reader stops at limit without looking further).
    if (events.length === limit) return { events, nextSeq: d.journalSeq + 1, done: false };
  }
  return { events, nextSeq: 0, done: true };
}

export function journalPageJson(page: JournalPage): string {
  const events = page.events.map((e) => `{"journal_seq":${e.journalSeq},"event":${e.json}}`).join(",");
  return `{"events":[${events}],"next_journal_seq":${page.nextSeq},"done":${String(page.done)}}`;
}
