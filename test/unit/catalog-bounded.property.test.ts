// What bounds a session's catalog entry, as properties: the gate ledger's capacity (it
// forgets resolved gates first, then the oldest open ones, deterministically), a fold
// resumed from its entry at any cut equal to one from the start however many gates a
// session floods, and every entry the catalog can write, the largest included, under
// ENTRY_MAX_BYTES; a mark reads back as written and cannot carry a fold's fields.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CatalogEntryError, createEvent, encodeEvent, GateLedger, type JetloopEvent, newId } from "../../src/index.js";
import { type CatalogEntry, decodeEntry, encodeEntry, ENTRY_MAX_BYTES, entryKey, entryOf, markedEntry } from "../../src/catalog/entry.js";
import { GATES_KEPT, StatusFold, TITLE_MAX_RUNES } from "../../src/catalog/fold.js";
import type { Delivery } from "../../src/sources/delivery.js";

const SEED = Number(process.env.JETLOOP_SEED ?? 3804);
const uid = (n: number) => `0190f2a1-5b3c-7d4e-8f60-${(0xc00 + n).toString(16).padStart(12, "0")}`;
const SESSION = uid(9000);
const LOOPS = [uid(9001), uid(9002)];
const TURN = uid(9003);

const opened = (gate: number, loop: number) => createEvent("GateOpened", { sessionId: SESSION, loopId: LOOPS[loop]!, turnId: TURN, stepId: uid(5000 + gate), gate: { id: uid(gate), kind: "harness.permission", resolver: "loop" } });
const resolved = (gate: number, loop: number) => createEvent("GateResolved", { sessionId: SESSION, loopId: LOOPS[loop]!, turnId: TURN, stepId: uid(6000 + gate), gateId: uid(gate), resolver: "loop", reason: "answered", action: "Approve" });

/** Opens and resolutions over a pool of gate ids larger than the capacity, from either loop. */
const step = fc.record({ open: fc.boolean(), gate: fc.nat(GATES_KEPT * 3), loop: fc.nat(1) });

describe("GateLedger with a capacity", () => {
  it("remembers at most its capacity, forgetting the first resolved gate, else the first open one, and binds as a model with the same rule", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.array(fc.record({ open: fc.boolean(), gate: fc.nat(15), loop: fc.nat(1) }), { maxLength: 80 }), (capacity, steps) => {
        const ledger = new GateLedger({ capacity });
        // The model: gates in the order opened (a reopen moves to the end), each with its loop and whether resolved.
        let model: { gate: number; loop: number; resolved: boolean }[] = [];
        for (const s of steps) {
          const known = model.find((g) => g.gate === s.gate);
          if (s.open) {
            const v = ledger.apply(opened(s.gate, s.loop));
            if (known && known.loop !== s.loop) {
              expect(v).toMatchObject({ kind: "violation", violation: { rule: "other_loop" } });
              continue;
            }
            expect(v.kind).toBe("opened");
            model = model.filter((g) => g.gate !== s.gate);
            if (model.length >= capacity) {
              const drop = model.find((g) => g.resolved) ?? model[0]!;
              model = model.filter((g) => g !== drop);
            }
            model.push({ gate: s.gate, loop: s.loop, resolved: false });
          } else {
            const v = ledger.apply(resolved(s.gate, s.loop));
            if (!known) expect(v.kind).toBe("unmatched");
            else if (known.loop !== s.loop) expect(v).toMatchObject({ kind: "violation", violation: { rule: "other_loop" } });
            else if (known.resolved) expect(v).toMatchObject({ kind: "violation", violation: { rule: "already_resolved" } });
            else {
              expect(v.kind).toBe("resolved");
              known.resolved = true;
            }
          }
          expect(ledger.all().map((g) => [g.gateId, g.loopId, g.resolved])).toEqual(model.map((g) => [uid(g.gate), LOOPS[g.loop], g.resolved]));
        }
      }),
      { numRuns: 300, seed: SEED },
    );
  });
});

function delivery(event: JetloopEvent, journalSeq: number): Delivery<JetloopEvent> {
  return { event, journalSeq, shard: 0, subject: "s", data: encodeEvent(event) };
}

describe("a fold resumed from its catalog entry", () => {
  it("equals a fold from the start at every cut, however many gates a session floods, and its entry stays under the bound", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: GATES_KEPT * 6 }), fc.array(fc.nat(), { maxLength: 5 }), (steps, cuts) => {
        const events: JetloopEvent[] = [createEvent("SessionStarted", { sessionId: SESSION }), createEvent("TurnStarted", { sessionId: SESSION, loopId: LOOPS[0]!, turnId: TURN, message: { role: "user", blocks: [{ type: "text", text: "flood" }] } })];
        for (const s of steps) events.push(s.open ? opened(s.gate, s.loop) : resolved(s.gate, s.loop));
        const whole = new StatusFold();
        events.forEach((e, i) => whole.apply(delivery(e, i + 1)));
        const at = new Set(cuts.map((c) => c % events.length));
        let resumed = new StatusFold();
        events.forEach((e, i) => {
          if (at.has(i)) {
            // Through the entry's bytes, as the catalog keeps it between updates.
            const text = encodeEntry(entryOf(SESSION, 0, i, resumed));
            expect(Buffer.byteLength(text)).toBeLessThanOrEqual(ENTRY_MAX_BYTES);
            resumed = StatusFold.resume(decodeEntry(entryKey(SESSION), text));
          }
          resumed.apply(delivery(e, i + 1));
        });
        const fields = (f: StatusFold) => ({ ...entryOf(SESSION, 0, events.length, f), gates: f.gates().map((g) => [g.gateId, g.loopId, g.resolved]) });
        expect(fields(resumed)).toEqual(fields(whole));
        expect(whole.gates().length).toBeLessThanOrEqual(GATES_KEPT);
      }),
      { numRuns: 150, seed: SEED },
    );
  });
});

/** A title of 80 runes each as long as Go's escaping makes one (\u003c, \u2028, a control character). */
const widest = fc.constantFrom("<", ">", "&", "\u2028", "\u2029", "\u0001", "\u007f", "🚀").map((c) => `x${c.repeat(TITLE_MAX_RUNES - 2)}x`);
const longTime = fc.constantFrom("9999-12-31T23:59:59.999999999+14:00", "0001-01-01T00:00:00.000000001-12:59");

describe("the entry's byte bound", () => {
  it("holds for the largest entry the catalog can write: every field at its longest and GATES_KEPT gates", () => {
    fc.assert(
      fc.property(widest, longTime, fc.boolean(), (title, time, resolvedToo) => {
        const e: CatalogEntry = {
          sessionId: newId(),
          shard: 2 ** 31,
          foldedSeq: Number.MAX_SAFE_INTEGER,
          state: "waiting_on_gate",
          lastJournalSeq: Number.MAX_SAFE_INTEGER,
          activeTurnId: newId(),
          waitingGateId: newId(),
          createdAt: time,
          lastActiveAt: time,
          title,
          status: "stopped",
          loopCount: Number.MAX_SAFE_INTEGER,
          gates: Array.from({ length: GATES_KEPT }, () => ({ sessionId: SESSION, gateId: newId(), loopId: newId(), kind: undefined, toolExecutionId: undefined, turnId: undefined, stepId: undefined, resolved: resolvedToo })),
        };
        const text = encodeEntry(e);
        expect(decodeEntry(entryKey(e.sessionId), text).title).toBe(title);
        expect(Buffer.byteLength(text)).toBeLessThanOrEqual(ENTRY_MAX_BYTES);
      }),
      { numRuns: 50, seed: SEED },
    );
  });

  it("refuses an entry holding more gates than the fold keeps", () => {
    const e = entryOf(SESSION, 0, 1, new StatusFold());
    const gates = Array.from({ length: GATES_KEPT + 1 }, (_, i) => ({ gate_id: uid(i) }));
    const text = encodeEntry(e).replace('"gates":[]', `"gates":${JSON.stringify(gates)}`);
    expect(() => decodeEntry(entryKey(SESSION), text)).toThrow(CatalogEntryError);
    expect(() => decodeEntry(entryKey(SESSION), text.replace(`,${JSON.stringify(gates.at(-1))}`, ""))).not.toThrow();
  });
});

describe("a session's mark", () => {
  const reason = fc.constantFrom("too_large" as const, "fold_failed" as const, "unreadable" as const);
  it("reads back as written, small whatever the session held, and never with a fold's fields", () => {
    fc.assert(
      fc.property(reason, fc.integer({ min: 1, max: 2 ** 40 }), fc.nat(2 ** 20), fc.nat(15), (r, folded, back, shard) => {
        const journalSeq = Math.max(1, folded - back);
        const mark = markedEntry(newId(), shard, folded, { reason: r, journalSeq });
        const text = encodeEntry(mark);
        expect(Buffer.byteLength(text)).toBeLessThan(512);
        expect(decodeEntry(entryKey(mark.sessionId), text)).toEqual(mark);
        const v = JSON.parse(text) as Record<string, unknown> & { jetloop: Record<string, unknown> };
        for (const spoiled of [
          { ...v, title: "a title" },
          { ...v, state: "idle" },
          { ...v, loop_count: 1 },
          { ...v, jetloop: { ...v.jetloop, gates: [{ gate_id: uid(1) }] } },
          { ...v, jetloop: { ...v.jetloop, poisoned: { reason: "bored", journal_seq: journalSeq } } },
          { ...v, jetloop: { ...v.jetloop, poisoned: { reason: r, journal_seq: folded + 1 } } },
          { ...v, jetloop: { ...v.jetloop, poisoned: { reason: r, journal_seq: 0 } } },
          { ...v, jetloop: { ...v.jetloop, poisoned: { reason: r, journal_seq: journalSeq, more: 1 } } },
        ]) {
          expect(() => decodeEntry(entryKey(mark.sessionId), JSON.stringify(spoiled)), JSON.stringify(spoiled)).toThrow(CatalogEntryError);
        }
      }),
      { numRuns: 200, seed: SEED },
    );
  });
});
