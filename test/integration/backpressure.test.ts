// Backpressure: a slow reader under a burst. Ephemeral deliveries are dropped (oldest
// first, counted and reported); enduring deliveries are never dropped — the server holds
// them until the reader catches up (pull-based flow control).
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  connect,
  createEvent,
  newId,
  type Delivery,
  type EventFilter,
  type Jetloop,
  type JetloopEvent,
  type SubscriptionReport,
} from "../../src/index.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";
import { sleep, waitFor } from "../harness/async.js";
import { consumerCount } from "../harness/stream-state.js";

let pub: Jetloop;
let subBus: Jetloop;
let jsm: JetStreamManager;

beforeAll(async () => {
  const ns = uniqueNamespace();
  pub = await connect({ servers: natsServers(), namespace: ns });
  await pub.provision();
  subBus = await connect({ servers: natsServers(), namespace: ns });
  jsm = await jetstreamManager(pub.nc);
});

afterAll(async () => {
  await subBus?.close();
  await jsm?.streams.delete(pub.stream).catch(() => undefined);
  await pub?.close();
});

describe("a slow reader under a burst", () => {
  it("drops the oldest previews (counted in stats and reported) and delivers every enduring event", async () => {
    const sessionId = newId();
    const loopId = newId();
    const reports: SubscriptionReport[] = [];
    const filter: EventFilter = { sessions: [sessionId], ephemeral: { loops: [loopId] }, enduring: { loops: [loopId] } };
    const sub = await subBus.subscribeEvents(filter, { ephemeralBuffer: 4, enduringBuffer: 4, batch: 8, onReport: (r) => reports.push(r) });
    try {
      // The burst, while nobody reads: 240 previews and 60 journal events, interleaved.
      const previews: string[] = [];
      const journal: number[] = [];
      const pending: Promise<unknown>[] = [];
      for (let i = 0; i < 60; i++) {
        const coords = { sessionId, loopId, turnId: newId(), stepId: newId() };
        const toolExecutionId = newId();
        for (let k = 0; k < 2; k++) {
          const started = createEvent("ToolCallStarted", { ...coords, toolExecutionId, toolName: `t${i}.${k}` });
          const completed = createEvent("ToolCallCompleted", { ...coords, toolExecutionId, resultPreview: `r${i}.${k}` });
          for (const e of [started, completed]) {
            previews.push(e.eventId);
            pending.push(pub.publish(e));
          }
        }
        pending.push(pub.publish(createEvent("StepDone", { ...coords, messages: [{ role: "assistant" }, { role: "tool", toolUseId: toolExecutionId, blocks: [{ type: "text", text: "ok" }] }] })).then((r) => journal.push(r.journalSeq)));
      }
      await Promise.all(pending);
      await pub.nc.flush();
      // Every preview has reached the subscriber's connection (none lost on the wire).
      await waitFor("the previews to arrive", () => sub.stats().dropped === previews.length - 4, 10_000, 20);

      // Now the reader catches up, slowly.
      const got: Delivery<JetloopEvent>[] = [];
      const it = sub[Symbol.asyncIterator]();
      while (got.filter((d) => d.journalSeq > 0).length < journal.length) {
        const r = await Promise.race([it.next(), sleep(10_000).then(() => "timeout" as const)]);
        if (r === "timeout" || r.done) throw new Error(`stalled after ${got.length} deliveries`);
        got.push(r.value);
        if (got.length % 10 === 0) await sleep(5);
      }

      const enduring = got.filter((d) => d.journalSeq > 0);
      const ephemeral = got.filter((d) => d.journalSeq === 0);
      // Every enduring event, in journal order, none twice.
      expect(enduring.map((d) => d.journalSeq)).toEqual([...journal].sort((a, b) => a - b));
      // The previews that survived are the newest four, in order; the rest were counted.
      expect(ephemeral.map((d) => d.event.eventId)).toEqual(previews.slice(-4));
      const stats = sub.stats();
      expect(stats.dropped).toBe(previews.length - 4);
      expect(stats.dropped + ephemeral.length).toBe(previews.length);
      expect(stats.delivered).toBe(got.length);
      expect(stats.poison).toBe(0);
      // One report per drop, with the running total.
      const dropped = reports.filter((r): r is Extract<SubscriptionReport, { kind: "dropped" }> => r.kind === "dropped");
      expect(dropped.map((r) => r.total)).toEqual(Array.from({ length: stats.dropped }, (_, i) => i + 1));
      expect(sub.err()).toBeUndefined();
    } finally {
      await sub.close();
    }
  });

  it("enduring events wait in the journal while the reader is stalled, then all arrive in order", async () => {
    const sessionId = newId();
    const loopId = newId();
    const filter: EventFilter = { sessions: [sessionId], enduring: { loops: [loopId] } };
    const reports: SubscriptionReport[] = [];
    const sub = await subBus.subscribeEvents(filter, { enduringBuffer: 2, batch: 64, onReport: (r) => reports.push(r) });
    try {
      // More than a live subscription buffers from the feed (4,096) behind a stalled reader.
      const events = Array.from({ length: 5000 }, () => createEvent("PermissionDecided", { sessionId, loopId, turnId: newId(), stepId: newId(), toolExecutionId: newId(), effect: "approve" }));
      const seqs: number[] = [];
      const inBefore = subBus.nc.stats().inMsgs;
      for (let i = 0; i < events.length; i += 1000) seqs.push(...(await pub.publishAll(events.slice(i, i + 1000))).map((r) => r.journalSeq));

      // The reader has not read anything: no consumer holds the backlog; the journal does.
      // Every feed message has reached the process (a loaded machine republishes late), so
      // the overflow has happened before the reader starts.
      await waitFor("the feed messages to arrive", () => subBus.nc.stats().inMsgs - inBefore >= events.length, 30_000, 20);
      expect(await consumerCount(jsm, pub.stream)).toBe(0);

      const got: number[] = [];
      for await (const d of sub) {
        got.push(d.journalSeq);
        if (got.length % 500 === 0) await sleep(10);
        if (got.length === seqs.length) break;
      }
      expect(got).toEqual(seqs);
      expect(sub.stats()).toMatchObject({ dropped: 0, poison: 0 });
      // The feed's overflow was read back from the journal, once (reported when that read
      // ends, which can be just after its last event was taken).
      const closed = () => reports.filter((r) => r.kind === "gap_closed").map((r) => r.reason);
      await waitFor("the repair's report", () => closed().length > 0, 5000, 10);
      // Closed, the subscription reports nothing more: the list is final, and a second read
      // back would be in it (every event was delivered, none twice, so it had nothing to add).
      await sub.close();
      expect(closed()).toEqual(["slow_reader"]);
    } finally {
      await sub.close();
    }
  });
});
