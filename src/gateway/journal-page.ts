/**
 * `GET /v1/sessions/{sid}/journal`: a page of a session's public events in journal order
 * (reference §4). The journal sequence is the stream sequence; internal events are
 * skipped, which leaves gaps, and `limit` counts what is returned.
 */
import type { Jetloop } from "../bus.js";
import { storedEventJson } from "../catalog/fold.js";
import type { ReadShare } from "./read-budget.js";

export interface JournalPage {
  readonly events: readonly { readonly journalSeq: number; readonly json: string }[];
  /** Last returned sequence + 1, or 0 when done. */
  readonly nextSeq: number;
  /** The journal ran dry before `limit` was reached. */
  readonly done: boolean;
}

// The stored bytes as Go embeds them: one function, the fold's (the status summaries use it too).
export { storedEventJson } from "../catalog/fold.js";

/** Where a page is written as it is read. */
export interface PageSink {
  /** Resolves once the client can take more (backpressure); rejects when it is gone or too slow. */
  write(chunk: string): Promise<void>;
  end(chunk: string): void;
}

/** A page's pull: one more than the page, so that the read does not pull far past what it returns. */
export function pageBatch(limit: number): number {
  return Math.min(limit + 1, 512);
}

/** The longest tail a page ends with: `],"next_journal_seq":<2^53>,"done":false}` and a newline. */
const TAIL_ROOM = 64;

/**
 * Streams a page to `sink` as it reads the journal: one event in memory at a time, not the
 * whole page (1000 events of 1 MB are 1 GB). The first read happens before anything is
 * written, so a journal that cannot be read is still an error answer; an empty page is returned whole
 * (`undefined` when written, else the page's JSON) so that it goes out as before, with its
 * length. A page ends at `limit` events, or before an event that would take it past
 * `maxBytes` (it always holds at least one): then it says done:false and the next
 * sequence, as a page that reached `limit` does, and the client reads on from there.
 *
 * `share` is the page's read-budget share (read-budget.ts): held before each read of the
 * journal (a read may pull), and given back by the sink while it waits for a slow client.
 */
export async function streamJournalPage(bus: Jetloop, sessionId: string, fromSeq: number, limit: number, maxBytes: number, sink: PageSink, share?: ReadShare): Promise<string | undefined> {
  // Its pulls are bounded in bytes as well (journal/pull-size.ts).
  const read = bus.session(sessionId).replay({ enduring: "all" }, { fromSeq: Math.max(fromSeq, 1), batch: pageBatch(limit) })[Symbol.asyncIterator]();
  try {
    const pull = async () => {
      await share?.hold();
      return await read.next();
    };
    let next = await pull();
    if (next.done) return journalPageJson({ events: [], nextSeq: 0, done: true });
    const head = '{"events":[';
    await sink.write(head);
    let bytes = head.length;
    let count = 0;
    let lastSeq = 0;
    const tail = (nextSeq: number, done: boolean) => `],"next_journal_seq":${nextSeq},"done":${String(done)}}\n`;
    while (!next.done) {
      const d = next.value;
      const entry = `${count === 0 ? "" : ","}{"journal_seq":${d.journalSeq},"event":${storedEventJson(d)}}`;
      const size = Buffer.byteLength(entry);
      if (count > 0 && bytes + size + TAIL_ROOM > maxBytes) break;
      await sink.write(entry);
      bytes += size;
      count++;
      lastSeq = d.journalSeq;
      // An exact fill says done:false (the Go reader stops at limit without looking further).
      if (count === limit) break;
      next = await pull();
    }
    sink.end(next.done ? tail(0, true) : tail(lastSeq + 1, false));
    return undefined;
  } finally {
    await read.return?.();
  }
}

export function journalPageJson(page: JournalPage): string {
  const events = page.events.map((e) => `{"journal_seq":${e.journalSeq},"event":${e.json}}`).join(",");
  return `{"events":[${events}],"next_journal_seq":${page.nextSeq},"done":${String(page.done)}}`;
}
