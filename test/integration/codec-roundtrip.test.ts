// Writer = reader, end to end: whatever `publish` accepts comes back identical through
// replay, a live subscription, a durable, and the gateway's journal page and SSE frames,
// on a real nats-server; what no reader would read is refused by `publish` and never
// stored. Depth and size edges included.
import fc from "fast-check";
import { jetstream, type JetStreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import {
  createEvent,
  DEFAULT_MAX_EVENT_BYTES,
  EventEncodeError,
  encodeEvent,
  eventSubject,
  newId,
  RawJson,
  startGateway,
  validateEvent,
  type Jetloop,
  type JetloopEvent,
} from "../../src/index.js";
import { provisionedBus } from "../harness/context.js";
import { Reader } from "../harness/reader.js";
import { frames, request, SseReader } from "./gateway/http.js";
import { enduringEventArb } from "../unit/arbitraries.js";

let bus: Jetloop;
let jsm: JetStreamManager;
const cleanup = provisionedBus((b, j) => void ([bus, jsm] = [b, j]));

const wire = (e: JetloopEvent) => new TextDecoder().decode(encodeEvent(e));
const nest = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;

function stepWith(sessionId: string, input: unknown, text = "x"): JetloopEvent {
  return createEvent("StepDone", {
    sessionId,
    loopId: newId(),
    turnId: newId(),
    stepId: newId(),
    messages: [{ role: "assistant", blocks: [{ type: "text", text }, { type: "tool_use", id: "toolu_01", name: "bash", input }] }],
  });
}

/** The edges: raw JSON as models write it, Go's nesting limit, an event just under the byte cap. */
function edgeEvents(sessionId: string): JetloopEvent[] {
  const withText = (n: number) => stepWith(sessionId, {}, "y".repeat(n));
  const base = encodeEvent(withText(0)).length;
  return [
    stepWith(sessionId, RawJson.fromText('{"timeout": 30.0, "2": 2, "10": 1, "p": "\\/work", "n": [-0, 3e+0, 12345678901234567890, 1e23]}')),
    stepWith(sessionId, { command: "ls <dir> && echo", nested: { a: [1, 2, { b: null }] } }),
    // root 1, messages 2, a message 3, its blocks 4, a block 5: the input's first bracket is 6.
    stepWith(sessionId, RawJson.fromText(nest(9_995))),
    // The message's headers count against max_payload too: a little room for them.
    withText(DEFAULT_MAX_EVENT_BYTES - base - 1024),
    createEvent("GateOpened", {
      sessionId,
      gate: { id: newId(), kind: "harness.ask_user", resolver: "session", responsePolicy: { onTimeout: "model_decide", modelDecision: { prompt: "p", metadata: { k: [1, 2.5] } } } },
    }),
  ];
}

/** Whether the frame of journal sequence `seq` arrived whole: its id line can come in a chunk before its data. */
const frameWhole =
  (seq: number) =>
  (text: string): boolean => {
    const at = text.indexOf(`id: ${seq}\n`);
    return at >= 0 && text.indexOf("\n\n", at) >= 0;
  };

describe("what publish accepts is read back identically", () => {
  it("by replay, a live subscription, a durable and the gateway", async () => {
    const sessionId = newId();
    const durable = `rt-${newId().slice(-12)}`;
    cleanup.push(() => jsm.consumers.delete(bus.stream, durable));
    const filter = { sessions: [sessionId], enduring: "all" as const };
    const live = await bus.subscribeEvents(filter);
    cleanup.push(() => live.close());
    const sampled = fc.sample(enduringEventArb, { numRuns: 40, seed: 28 }).map((e) => ({ ...e, sessionId }) as JetloopEvent);
    const accepted: JetloopEvent[] = [];
    const seqs: number[] = [];
    for (const e of [...edgeEvents(sessionId), ...sampled]) {
      let valid: JetloopEvent;
      try {
        valid = validateEvent(e);
      } catch {
        continue; // an arbitrary event that needs coordinates this session's rewrite broke
      }
      seqs.push((await bus.publish(valid)).journalSeq);
      accepted.push(valid);
    }
    expect(accepted.length).toBeGreaterThan(30);

    const replayed: JetloopEvent[] = [];
    for await (const d of bus.replay(filter)) replayed.push(d.event);
    // Identical as the journal holds them: the same bytes. (A zero a publisher passes, such
    // as `agency: 0`, is omitted on the wire as Go omits it, so it reads back absent.)
    const want = accepted.filter((e) => e.visibility !== "internal").map(wire);
    expect(replayed.map(wire)).toEqual(want);

    const liveGot = (await new Reader(live).take(replayed.length)).map((d) => d.event);
    expect(liveGot.map(wire)).toEqual(want);

    const sub = await bus.subscribeEvents(filter, { durable, start: "all" });
    cleanup.push(() => sub.close());
    const got = await new Reader(sub).take(replayed.length);
    for (const d of got) await d.ack();
    expect(got.map((d) => wire(d.event))).toEqual(want);

    // The gateway serves the stored bytes: the page and the frames embed exactly them.
    const wantSeqs = seqs.filter((_, i) => accepted[i]!.visibility !== "internal");
    const gw = await startGateway(bus, { listen: "127.0.0.1:0" });
    cleanup.push(() => gw.close());
    const page = await request(`${gw.url}/v1/sessions/${sessionId}/journal?limit=1000`);
    expect(page.status).toBe(200);
    const entries = want.map((w, i) => `{"journal_seq":${wantSeqs[i]},"event":${w}}`).join(",");
    expect(page.body).toBe(`{"events":[${entries}],"next_journal_seq":0,"done":true}\n`);

    const sse = await SseReader.open(`${gw.url}/v1/sessions/${sessionId}/events?last_event_id=${seqs[0]! - 1}`);
    await sse.until(frameWhole(wantSeqs.at(-1)!), 30_000);
    sse.close();
    const enduring = frames(sse.text).filter((f) => f.startsWith("event: enduring\n"));
    expect(enduring).toEqual(want.map((w, i) => `event: enduring\nid: ${wantSeqs[i]}\ndata: {"v":1,"event":${w}}\n\n`));
  });

  it("by the gateway as stored: Go-readable bytes jetloop would write otherwise are served as they are, compacted as Go embeds them", async () => {
    const sessionId = newId();
    const e = createEvent("SessionStarted", { sessionId, agentName: "a/b" });
    const canonical = wire(e);
    // Spaces and newlines between tokens, `\/` for `/`: Go's reader (and jetloop's) takes both.
    const stored = canonical.replace(/,"/g, ' ,\n "').replace("a/b", "a\\/b");
    const subject = eventSubject(bus.namespace, "journal", { sessionId, family: "session", type: "SessionStarted" });
    const { seq } = await jetstream(bus.nc).publish(subject, new TextEncoder().encode(stored));
    const replayed: JetloopEvent[] = [];
    for await (const d of bus.replay({ sessions: [sessionId], enduring: "all" })) replayed.push(d.event);
    expect(replayed.map(wire)).toEqual([canonical]); // re-encoding would write this

    const served = stored.replace(/ ,\n "/g, ',"');
    expect(served).not.toBe(canonical);
    const gw = await startGateway(bus, { listen: "127.0.0.1:0" });
    cleanup.push(() => gw.close());
    const page = await request(`${gw.url}/v1/sessions/${sessionId}/journal`);
    expect(page.body).toBe(`{"events":[{"journal_seq":${seq},"event":${served}}],"next_journal_seq":0,"done":true}\n`);
    const sse = await SseReader.open(`${gw.url}/v1/sessions/${sessionId}/events?last_event_id=${seq - 1}`);
    await sse.until(frameWhole(seq));
    sse.close();
    expect(frames(sse.text).filter((f) => f.startsWith("event: enduring\n"))).toEqual([`event: enduring\nid: ${seq}\ndata: {"v":1,"event":${served}}\n\n`]);
  });

  it("refuses what no reader would read, and stores nothing", async () => {
    const sessionId = newId();
    const tooDeep = stepWith(sessionId, RawJson.fromText(nest(9_996)));
    await expect(bus.publish(tooDeep)).rejects.toBeInstanceOf(EventEncodeError);
    await expect(bus.publish(stepWith(sessionId, {}, "y".repeat(DEFAULT_MAX_EVENT_BYTES)))).rejects.toBeInstanceOf(EventEncodeError);
    const stored: unknown[] = [];
    for await (const d of bus.replay({ sessions: [sessionId], enduring: "all" })) stored.push(d);
    expect(stored).toEqual([]);
  });
});
