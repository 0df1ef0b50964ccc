// One size rule: an event the codec accepts always fits. The server counts jetloop's
// headers against max_payload and the stream's max_msg_size, so the codec's cap leaves
// journalHeaderRoom() for them: checked here for every header set an append can carry
// (every namespace and stream name shape, any event id, fenced or not, any sequence,
// with or without trace context: a traceparent and a tracestate of up to 512 characters;
// inside an atomic batch or not).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nuid } from "@nats-io/nats-core";
import { FixedHeaders, journalHeaderRoom } from "../../src/publish/journal-writer.js";
import { sessionJournalSubject } from "../../src/subjects/subjects.js";
import { formatTraceParent } from "../../src/telemetry/traceparent.js";
import { uuidArb } from "./arbitraries.js";
import { longestTraceState, traceParentArb, traceStateArb } from "./trace-arbitraries.js";

const tokenArb = fc.stringMatching(/^[A-Za-z0-9-]{1,16}$/);
const namespaceArb = fc.array(tokenArb, { minLength: 1, maxLength: 4 }).map((t) => t.join("."));
const streamArb = fc.stringMatching(/^[A-Za-z0-9_-]{1,255}$/);
const seqArb = fc.oneof(fc.constant(Number.MAX_SAFE_INTEGER), fc.constant(0), fc.nat({ max: Number.MAX_SAFE_INTEGER }));

/** The headers JournalWriter.append builds, in its order. */
function appendHeaders(stream: string, ns: string, eventId: string, sessionId: string, fence: number | undefined, trace: [string, string][], batch?: Batch): FixedHeaders {
  const entries: [string, string][] = [
    ["Nats-Msg-Id", eventId],
    ["Nats-Expected-Stream", stream],
  ];
  if (fence !== undefined) {
    entries.push(["Nats-Expected-Last-Subject-Sequence", String(fence)]);
    entries.push(["Nats-Expected-Last-Subject-Sequence-Subject", sessionJournalSubject(ns, sessionId)]);
  }
  entries.push(...trace);
  if (batch) {
    entries.push(["Nats-Batch-Id", batch.id], ["Nats-Batch-Sequence", String(batch.seq)], ["Jetloop-Batch-Size", String(batch.size)]);
    if (batch.commit) entries.push(["Nats-Batch-Commit", "1"]);
  }
  return new FixedHeaders(entries);
}

/** An atomic batch's headers (atomic-batch.ts): a NUID, a sequence up to its size (1,000 at most), jetloop's size, the commit on the last. */
interface Batch {
  id: string;
  seq: number;
  size: number;
  commit: boolean;
}
const batchArb: fc.Arbitrary<Batch | undefined> = fc.option(
  fc
    .integer({ min: 1, max: 1000 })
    .chain((size) => fc.record({ id: fc.constant(nuid.next()), seq: fc.integer({ min: 1, max: size }), size: fc.constant(size) }))
    .map((b) => ({ ...b, commit: b.seq === b.size })),
  { nil: undefined },
);
const largestBatch: Batch = { id: nuid.next(), seq: 1000, size: 1000, commit: true };

/** The trace headers a publish adds: none, a traceparent, or both (the longest tracestate often). */
const traceArb: fc.Arbitrary<[string, string][]> = fc.oneof(
  fc.constant<[string, string][]>([]),
  traceParentArb.map((p): [string, string][] => [["traceparent", formatTraceParent(p)!]]),
  fc.tuple(traceParentArb, fc.oneof(traceStateArb, fc.constant(longestTraceState))).map(([p, s]): [string, string][] => [
    ["traceparent", formatTraceParent(p)!],
    ["tracestate", s],
  ]),
);

describe("journalHeaderRoom", () => {
  it("holds every header set an append can carry, and is exact for the largest", () => {
    fc.assert(
      fc.property(namespaceArb, streamArb, uuidArb, uuidArb, fc.option(seqArb, { nil: undefined }), traceArb, batchArb, (ns, stream, eventId, sessionId, fence, trace, batch) => {
        const size = appendHeaders(stream, ns, eventId, sessionId, fence, trace, batch).encode().length;
        const room = journalHeaderRoom(stream, ns);
        expect(size).toBeLessThanOrEqual(room);
        if (fence === Number.MAX_SAFE_INTEGER && trace[1]?.[1] === longestTraceState && batch?.seq === 1000) expect(size).toBe(room);
      }),
      { numRuns: 500 },
    );
  });

  it("is exactly the largest set: fenced at the largest sequence, with the longest trace context, committing a batch of 1,000", () => {
    const [ns, stream, id] = ["acme.prod", "S".repeat(255), "0190a5b2-0000-7000-8000-000000000001"];
    const trace: [string, string][] = [
      ["traceparent", `00-${"a".repeat(32)}-${"b".repeat(16)}-01`],
      ["tracestate", longestTraceState],
    ];
    expect(appendHeaders(stream, ns, id, id, Number.MAX_SAFE_INTEGER, trace, largestBatch).encode().length).toBe(journalHeaderRoom(stream, ns));
  });
});
