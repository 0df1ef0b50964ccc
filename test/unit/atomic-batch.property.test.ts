// The atomic batch's rules, for every size and fence: one batch id, sequences 1..n, the
// commit on the last message only, every event's own message id and the stream check on
// each, the fence on the first only; the journal sequences contiguous and ending at the
// commit's; more than 1,000 refused whole (never split).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BatchTooLargeError } from "../../src/errors.js";
import { newId } from "../../src/events/ids.js";
import { batchMessageHeaders, batchSequences, checkAtomicBatchSize } from "../../src/publish/atomic-batch.js";
import { MAX_ATOMIC_BATCH } from "../../src/subjects/server-features.js";
import type { AppendRequest } from "../../src/publish/journal-writer.js";

const request = (sessionId: string, fence?: number): AppendRequest => ({
  subject: `ns.journal.${sessionId}.x.y`,
  data: new Uint8Array(1),
  eventId: newId(),
  sessionId,
  expectedLastSeq: fence,
  fenceSubject: fence === undefined ? undefined : `ns.journal.${sessionId}.>`,
});

describe("atomic batch headers", () => {
  it("number the batch, say its size on every message, commit on the last, and fence only the first (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: MAX_ATOMIC_BATCH }), fc.option(fc.nat({ max: 1e9 }), { nil: undefined }), (n, fence) => {
        const session = newId();
        const requests = Array.from({ length: n }, (_, i) => request(session, i === 0 ? fence : undefined));
        const all = requests.map((_, i) => new Map(batchMessageHeaders("S", "BATCH", requests, i)));
        // Every header of every message as the rule says it must be (one expect: fast at 1,000 messages).
        const wrong = all.flatMap((h, i) => {
          const fenced = i === 0 && fence !== undefined;
          const want: Record<string, string | undefined> = {
            "Nats-Batch-Id": "BATCH",
            "Nats-Batch-Sequence": String(i + 1),
            "Jetloop-Batch-Size": String(n),
            "Nats-Msg-Id": requests[i]!.eventId,
            "Nats-Expected-Stream": "S",
            "Nats-Batch-Commit": i === n - 1 ? "1" : undefined,
            "Nats-Expected-Last-Subject-Sequence": fenced ? String(fence) : undefined,
            "Nats-Expected-Last-Subject-Sequence-Subject": fenced ? `ns.journal.${session}.>` : undefined,
          };
          const bad = Object.entries(want).filter(([k, v]) => h.get(k) !== v).map(([k]) => `${i}:${k}`);
          if (h.size !== Object.values(want).filter((v) => v !== undefined).length) bad.push(`${i}:extra`);
          for (const v of h.values()) if (/[\r\n]/.test(v)) bad.push(`${i}:CRLF`);
          return bad;
        });
        expect(wrong).toEqual([]);
        expect(all.at(-1)!.get("Nats-Batch-Sequence")!.length).toBeLessThanOrEqual(4);
      }),
      { numRuns: 40 },
    );
  });

  it("give contiguous journal sequences ending at the commit's (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: MAX_ATOMIC_BATCH }), fc.integer({ min: 0, max: 2 ** 40 }), (n, before) => {
        const seqs = batchSequences(before + n, n);
        expect(seqs).toHaveLength(n);
        expect(seqs[0]).toBe(before + 1);
        expect(seqs.at(-1)).toBe(before + n);
        expect(seqs.every((s, i) => i === 0 || s - seqs[i - 1]! === 1)).toBe(true);
      }),
    );
  });

  it("refuse more than 1,000 events whole, and take 0 to 1,000 (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 5 * MAX_ATOMIC_BATCH }), (n) => {
        if (n <= MAX_ATOMIC_BATCH) expect(() => checkAtomicBatchSize(n)).not.toThrow();
        else expect(() => checkAtomicBatchSize(n)).toThrow(BatchTooLargeError);
      }),
    );
  });
});
