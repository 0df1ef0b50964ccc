// The table of malformed messages (test/harness/bad-messages.ts) against the decoder both
// channels share: every row, on the journal and on live, is refused with the error the
// row names (or, for a stripped row, yielded without its extra key). subscribe-poison and
// the bad-input scenario send the same rows over NATS.
import { describe, expect, it } from "vitest";
import type { EventDecodeError, EventValidationError} from "../../src/index.js";
import { defaultRegistry, newId, type JetloopEvent } from "../../src/index.js";
import { decodeMessage } from "../../src/sources/delivery.js";
import { badMessages, CHANNELS, MUTATIONS, SECRET_ARGUMENT, SECRET_GRANT } from "../harness/bad-messages.js";

// Room for an event nested past the reader's depth limit (10,000) under the cap.
const CAP = 65_536;
const NS = "tmut";
const ctx = { namespace: NS, registry: defaultRegistry, maxEventBytes: CAP, includeInternal: false, shards: 1 };
const coords = { sessionId: newId(), loopId: newId(), turnId: newId(), stepId: newId() };
// Several seeds and repeats: every random variant of a row must give the row's error.
const messages = [1, 2, 3].flatMap((seed) => badMessages(NS, coords, 4, seed, CAP));

describe("the bad-message table", () => {
  it("has unique names and covers both channels", () => {
    expect(new Set(MUTATIONS.map((m) => m.name)).size).toBe(MUTATIONS.length);
    for (const channel of CHANNELS) expect(messages.filter((b) => b.channel === channel)).toHaveLength(3 * 4 * MUTATIONS.length);
  });

  for (const m of MUTATIONS) {
    for (const channel of CHANNELS) {
      it(`${m.name} on ${channel}: ${m.expect === "stripped" ? "yielded without the key" : m.expect.code}`, () => {
        for (const b of messages.filter((x) => x.kind === m.name && x.channel === channel)) {
          expect(b.subject.startsWith(`${NS}.${channel}.${coords.sessionId}.`)).toBe(true);
          const r = decodeMessage<JetloopEvent>(ctx, b.subject, b.data);
          if (m.expect === "stripped") {
            if (!r.ok) expect.fail(`${m.name} on ${channel} refused: ${r.error.message}`);
            const text = JSON.stringify(r.event);
            expect(text).not.toMatch(/extra_\d+|"arguments"/);
            expect(text).not.toContain(SECRET_ARGUMENT);
            continue;
          }
          if (r.ok) expect.fail(`${m.name} on ${channel} was accepted`);
          expect(r.error.code).toBe(m.expect.code);
          if (m.expect.reason) expect((r.error as EventDecodeError).reason).toBe(m.expect.reason);
          if (m.expect.field) expect((r.error as EventValidationError).field).toBe(m.expect.field);
          expect(r.error.message).not.toContain(SECRET_GRANT);
          expect(r.error.message).not.toContain(SECRET_ARGUMENT);
        }
      });
    }
  }
});
