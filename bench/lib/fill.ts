/**
 * Filling a stream quickly with valid, pre-encoded events, for the replay benchmarks.
 * Building a million events through `createEvent` (validation, fresh v7 ids) would take
 * longer than the benchmark itself, so the wire text of one real PermissionDecided is
 * used as a template and only its ids change: ids are synthetic but canonical UUIDs, and
 * a sample of the output is decoded with jetloop's own unmarshalEvent to prove the events
 * valid. They are appended with the lean raw loop (acknowledged, with message ids).
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { eventSubject, unmarshalEvent } from "../../src/index.js";
import { coordinates, enduringEvent, toWire, type WireEvent } from "./events.js";
import { LeanAppender } from "./lean.js";

/** A canonical v7-shaped UUID from a kind (0-4095) and a counter: unique, never nil. */
export function syntheticId(kind: number, n: number): string {
  const tail = (n + 1).toString(16).padStart(12, "0");
  return `0190f2a1-5b3c-7${kind.toString(16).padStart(3, "0")}-8f60-${tail}`;
}

const KIND = { session: 1, loop: 2, turn: 3, step: 4, event: 5, tool: 6 } as const;

export class WireFactory {
  readonly #ns: string;
  readonly #parts: string[];
  readonly #slots: (keyof typeof KIND)[];
  readonly #encoder = new TextEncoder();

  constructor(ns: string) {
    this.#ns = ns;
    const c = coordinates();
    const e = enduringEvent(c) as unknown as Record<string, string>;
    const text = new TextDecoder().decode(toWire(ns, e as never).data);
    const ids: [keyof typeof KIND, string][] = [
      ["session", c.sessionId],
      ["loop", c.loopId],
      ["turn", c.turnId],
      ["step", c.stepId],
      ["event", e.eventId!],
      ["tool", e.toolExecutionId!],
    ];
    // Split the template at every id, remembering which id goes in each gap.
    const marks: { at: number; len: number; slot: keyof typeof KIND }[] = [];
    for (const [slot, id] of ids) {
      let at = text.indexOf(id);
      while (at >= 0) {
        marks.push({ at, len: id.length, slot });
        at = text.indexOf(id, at + id.length);
      }
    }
    marks.sort((a, b) => a.at - b.at);
    this.#parts = [];
    this.#slots = [];
    let from = 0;
    for (const m of marks) {
      this.#parts.push(text.slice(from, m.at));
      this.#slots.push(m.slot);
      from = m.at + m.len;
    }
    this.#parts.push(text.slice(from));
  }

  /** Event number `i` of session `session` (a small integer), loop `loop` of that session. */
  make(session: number, loop: number, i: number): WireEvent {
    const v = {
      session: syntheticId(KIND.session, session),
      loop: syntheticId(KIND.loop, session * 16 + loop),
      turn: syntheticId(KIND.turn, session * 16 + loop),
      step: syntheticId(KIND.step, session * 16 + loop),
      event: syntheticId(KIND.event, i),
      tool: syntheticId(KIND.tool, i),
    };
    let text = this.#parts[0]!;
    for (let k = 0; k < this.#slots.length; k++) text += v[this.#slots[k]!] + this.#parts[k + 1]!;
    const subject = eventSubject(this.#ns, "journal", { sessionId: v.session, loopId: v.loop, family: "tool", type: "PermissionDecided" });
    return { subject, data: this.#encoder.encode(text), eventId: v.event };
  }
}

/**
 * Appends `count` events, event i from `eventAt(i)`; returns the rate. Most are published
 * without a reply subject (the stream stores them all the same, with their message ids);
 * every ACK_EVERY-th is an acknowledged append, and at most ACKS_AHEAD of those are
 * outstanding, which paces the producer to what the server stores. The stream's message
 * count is checked at the end. Every 10,000th event is decoded by jetloop first, so an
 * invalid template fails loudly.
 */
export async function fillStream(nc: NatsConnection, jsm: JetStreamManager, stream: string, count: number, eventAt: (i: number) => WireEvent): Promise<number> {
  const ACK_EVERY = 256;
  const ACKS_AHEAD = 16;
  const before = (await jsm.streams.info(stream)).state.messages;
  const lean = new LeanAppender(nc);
  const t0 = performance.now();
  try {
    const acks: Promise<number>[] = [];
    for (let i = 0; i < count; i++) {
      const w = eventAt(i);
      if (i % 10_000 === 0) unmarshalEvent(w.data);
      if (i % ACK_EVERY === ACK_EVERY - 1 || i === count - 1) {
        acks.push(lean.append(w.subject, w.data, w.eventId));
        if (acks.length > ACKS_AHEAD) await acks.shift();
      } else {
        const h = headers();
        h.set("Nats-Msg-Id", w.eventId);
        nc.publish(w.subject, w.data, { headers: h });
      }
    }
    await Promise.all(acks);
  } finally {
    lean.close();
  }
  const rate = (count / (performance.now() - t0)) * 1000;
  const stored = (await jsm.streams.info(stream)).state.messages - before;
  if (stored !== count) throw new Error(`fill: the stream stored ${stored} of ${count} events`);
  return rate;
}
