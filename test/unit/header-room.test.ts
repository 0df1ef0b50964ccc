// One size rule: an event the codec accepts always fits. The server counts jetloop's
// headers against max_payload and the stream's max_msg_size, so the codec's cap leaves
// journalHeaderRoom() for them: checked here for every header set an append can carry
// (every namespace and stream name shape, any event id, fenced or not, any sequence).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FixedHeaders, journalHeaderRoom } from "../../src/publish/journal-writer.js";
import { sessionJournalSubject } from "../../src/subjects/subjects.js";
import { uuidArb } from "./arbitraries.js";

const tokenArb = fc.stringMatching(/^[A-Za-z0-9-]{1,16}$/);
const namespaceArb = fc.array(tokenArb, { minLength: 1, maxLength: 4 }).map((t) => t.join("."));
const streamArb = fc.stringMatching(/^[A-Za-z0-9_-]{1,255}$/);
const seqArb = fc.oneof(fc.constant(Number.MAX_SAFE_INTEGER), fc.constant(0), fc.nat({ max: Number.MAX_SAFE_INTEGER }));

/** The headers JournalWriter.append builds, in its order. */
function appendHeaders(stream: string, ns: string, eventId: string, sessionId: string, fence: number | undefined): FixedHeaders {
  const entries: [string, string][] = [
    ["Nats-Msg-Id", eventId],
    ["Nats-Expected-Stream", stream],
  ];
  if (fence !== undefined) {
    entries.push(["Nats-Expected-Last-Subject-Sequence", String(fence)]);
    entries.push(["Nats-Expected-Last-Subject-Sequence-Subject", sessionJournalSubject(ns, sessionId)]);
  }
  return new FixedHeaders(entries);
}

describe("journalHeaderRoom", () => {
  it("holds every header set an append can carry, and is exact for the largest", () => {
    fc.assert(
      fc.property(namespaceArb, streamArb, uuidArb, uuidArb, fc.option(seqArb, { nil: undefined }), (ns, stream, eventId, sessionId, fence) => {
        const size = appendHeaders(stream, ns, eventId, sessionId, fence).encode().length;
        const room = journalHeaderRoom(stream, ns);
        expect(size).toBeLessThanOrEqual(room);
        if (fence === Number.MAX_SAFE_INTEGER) expect(size).toBe(room);
      }),
      { numRuns: 500 },
    );
  });
});
