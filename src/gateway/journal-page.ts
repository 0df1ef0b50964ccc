/**
 * `GET /v1/sessions/{sid}/journal`: a page of a session's public events in journal order
 * (reference §4). The journal sequence is the stream sequence; internal events are
 * skipped, which leaves gaps, and `limit` counts what is returned.
 */
import type { Jetloop } from "../bus.js";
import { storedEventJson } from "../catalog/fold.js";

export interface JournalPage {
  readonly events: readonly { readonly journalSeq: number; readonly json: string }[];
  /** Last returned sequence + 1, or 0 when done. */
  readonly nextSeq: number;
  /** The journal ran dry before `limit` was reached. */
  readonly done: boolean;
}

// The stored bytes as Go embeds them: one function, the fold's (the status summaries use it too).
export { storedEventJson } from "../catalog/fold.js";

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
