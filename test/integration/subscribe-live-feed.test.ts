// Live subscriptions over the stream's republished feed: provisioning declares it, the
// hand-over from the journal to the feed is exact while appends continue, viewers of one
// loop share one core subscription, and no consumer is left while they follow.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busContext } from "../../src/bus.js";
import { connect, createEvent, newId, NotProvisionedError, type Jetloop, type JetloopEvent, type Subscription } from "../../src/index.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";
import { Reader } from "../harness/reader.js";
import { sleep, waitFor } from "../harness/async.js";
import { consumerCount } from "../harness/stream-state.js";
import { RepublishReader, rawHeaderEnd } from "../../src/sources/republish-headers.js";
import type { Msg } from "@nats-io/transport-node";
import { pino } from "pino";

function decided(sessionId: string, loopId: string): JetloopEvent {
  return createEvent("PermissionDecided", { sessionId, loopId, turnId: newId(), stepId: newId(), toolExecutionId: newId(), effect: "approve" });
}

let bus: Jetloop;
/** Viewers on the default feed mode (loop) and on the namespace feed. */
let viewers: Jetloop;
let nsViewers: Jetloop;

beforeAll(async () => {
  const namespace = uniqueNamespace();
  bus = await connect({ servers: natsServers(), namespace });
  await bus.provision();
  viewers = await connect({ servers: natsServers(), namespace });
  nsViewers = await connect({ servers: natsServers(), namespace, feed: "namespace" });
});

afterAll(async () => {
  await viewers?.close();
  await nsViewers?.close();
  await (await bus?.jetstreamManager())?.streams.delete(bus.stream).catch(() => undefined);
  await bus?.close();
});

describe("the feed declaration", () => {
  it("provision declares the republish to {ns}.feed.>, reports its drift, and live subscriptions refuse a stream without it", async () => {
    const own = await connect({ servers: natsServers(), namespace: uniqueNamespace() });
    try {
      await own.provision();
      const jsm = await own.jetstreamManager();
      const cfg = (await jsm.streams.info(own.stream)).config;
      expect(cfg.republish).toEqual({ src: `${own.namespace}.journal.>`, dest: `${own.namespace}.feed.>` });

      // An older stream, without the feed.
      await jsm.streams.update(own.stream, { ...cfg, republish: undefined });
      const err = await own.subscribeEvents({ enduring: "all" }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NotProvisionedError);
      expect((err as Error).message).toMatch(/does not republish the journal to .*\.feed\.>; run `jetloop provision`/);
      const verify = await own.provision({ mode: "verify" });
      expect(verify.action).toBe("drifted");
      expect(verify.drift.map((d) => d.field)).toEqual(["republish"]);
      expect((await own.provision()).action).toBe("updated");
      const sub = await own.subscribeEvents({ enduring: "all" });
      await sub.close();
    } finally {
      await (await own.jetstreamManager()).streams.delete(own.stream).catch(() => undefined);
      await own.close();
    }
  });
});

describe("the feed's republish headers", () => {
  it("are read from the bytes NATS.js received, as its header map reads them", async () => {
    const sessionId = newId();
    const loop = newId();
    const got: Msg[] = [];
    const sub = viewers.nc.subscribe(`${bus.namespace}.feed.${sessionId}.>`, { callback: (_e, m) => void got.push(m) });
    await viewers.nc.flush();
    const seqs = (await bus.publishAll([decided(sessionId, loop), decided(sessionId, loop), decided(sessionId, newId())])).map((r) => r.journalSeq);
    await waitFor("the feed messages", () => got.length === 3, 2000, 10);
    sub.unsubscribe();
    const reader = new RepublishReader(bus.stream);
    for (const [i, m] of got.entries()) {
      // The installed client exposes the received bytes: the feed never decodes the header map.
      expect(rawHeaderEnd(m)).toBeGreaterThan(0);
      const at = reader.position(m);
      expect(at).toEqual({ seq: seqs[i], lastSeq: Number(m.headers!.get("Nats-Last-Sequence") || "0") });
    }
    expect(got.map((m) => reader.position(m)!.lastSeq)).toEqual([expect.any(Number), seqs[0], expect.any(Number)]);
  });
});

describe.each(["loop", "namespace"] as const)("the seam between the journal and the feed (feed: %s)", (mode) => {
  it("viewers opened from every start position while appends continue each get their loop's events exactly once, in journal order", async () => {
    const sessionId = newId();
    const loops = [newId(), newId(), newId()];
    const sent = new Map<string, number[]>(loops.map((l) => [l, []]));
    const before = await bus.publishAll(loops.flatMap((l) => [decided(sessionId, l), decided(sessionId, l)]));
    before.forEach((r, i) => sent.get(loops[Math.floor(i / 2)]!)!.push(r.journalSeq));
    const firstSeq = before[0]!.journalSeq;

    // Appends keep going in the background while the viewers open and hand over.
    let stop = false;
    const producing = (async () => {
      for (let i = 0; !stop; i++) {
        const l = loops[i % loops.length]!;
        sent.get(l)!.push((await bus.publish(decided(sessionId, l))).journalSeq);
      }
    })();
    const opened: { sub: Subscription<JetloopEvent>; loop: string; start: "all" | "new" | { seq: number } }[] = [];
    for (let i = 0; i < 24; i++) {
      const loop = loops[i % loops.length]!;
      const start = (["all", "new", { seq: firstSeq + 3 }] as const)[i % 3]!;
      opened.push({ sub: await (mode === "loop" ? viewers : nsViewers).subscribeEvents({ sessions: [sessionId], enduring: { loops: [loop] } }, { start }), loop, start });
      await sleep(5);
    }
    await sleep(200);
    stop = true;
    await producing;
    // A sentinel of every loop after the last append: a viewer reads up to its loop's.
    const sentinels = new Map<string, number>();
    for (const l of loops) sentinels.set(l, (await bus.publish(decided(sessionId, l))).journalSeq);

    for (const o of opened) {
      const all = sent.get(o.loop)!;
      const from = o.start === "all" ? 0 : o.start === "new" ? undefined : o.start.seq;
      const reader = new Reader(o.sub);
      if (from !== undefined) {
        const want = all.filter((s) => s >= from);
        expect((await reader.take(want.length)).map((d) => d.journalSeq)).toEqual(want);
      } else {
        // "new": whatever it starts with, it then has every later event of its loop, none twice.
        const got: number[] = [];
        while (got.at(-1) !== all.at(-1)) got.push((await reader.take(1))[0]!.journalSeq);
        expect(got).toEqual(all.slice(all.indexOf(got[0]!)));
      }
      expect(await reader.before((d) => d.journalSeq === sentinels.get(o.loop)), "nothing after its loop's last event but the sentinel").toEqual([]);
    }
    // The history reads are over: no consumer is left while the viewers follow the feed.
    expect(await consumerCount(await bus.jetstreamManager(), bus.stream)).toBe(0);
    for (const o of opened) await o.sub.close();
  });

  it("viewers of one loop in one process share one feed subscription per subject, released with the last", async () => {
    const sessionId = newId();
    const loop = newId();
    const base = busContext(viewers).feeds.subscriptions;
    const subs = await Promise.all(Array.from({ length: 5 }, () => viewers.subscribeEvents({ sessions: [sessionId], enduring: { loops: [loop] } })));
    // The loop's subject and the session-scoped `_` subject.
    expect(busContext(viewers).feeds.subscriptions - base).toBe(2);
    const seqs = (await bus.publishAll([decided(sessionId, loop), decided(sessionId, loop)])).map((r) => r.journalSeq);
    for (const s of subs) expect((await new Reader(s).take(2)).map((d) => d.journalSeq)).toEqual(seqs);
    for (const s of subs) await s.close();
    await waitFor("the shared subscriptions to be released", () => busContext(viewers).feeds.subscriptions === base, 2000, 10);
  });

  it("in namespace mode viewers of any loops share one subscription on the whole feed", async () => {
    const sessionId = newId();
    const loops = [newId(), newId(), newId()];
    expect(busContext(nsViewers).feeds.subscriptions).toBe(0);
    const subs = await Promise.all(loops.map((l) => nsViewers.subscribeEvents({ sessions: [sessionId], enduring: { loops: [l] } })));
    expect(busContext(nsViewers).feeds.subscriptions).toBe(1);
    const seqs = (await bus.publishAll(loops.map((l) => decided(sessionId, l)))).map((r) => r.journalSeq);
    // Each gets its own loop's event only: the other loops' events come before a sentinel of its own loop, if at all.
    const sentinels = (await bus.publishAll(loops.map((l) => decided(sessionId, l)))).map((r) => r.journalSeq);
    for (const [i, s] of subs.entries()) {
      const reader = new Reader(s);
      expect((await reader.take(1)).map((d) => d.journalSeq)).toEqual([seqs[i]]);
      expect(await reader.before((d) => d.journalSeq === sentinels[i])).toEqual([]);
    }
    for (const s of subs) await s.close();
    expect(busContext(nsViewers).feeds.subscriptions).toBe(0);
  });
});

describe("feed messages lost without a reconnect (the drop hook), on views over many subjects", () => {
  // A session view spans one subject per loop and event type. Every 3rd feed message is dropped.
  async function dropped(b: Jetloop): Promise<{ want: number[]; got: number[] }> {
    const sessionId = newId();
    const loops = [newId(), newId(), newId()];
    const sub = await b.subscribeEvents({ sessions: [sessionId], enduring: "all" });
    let seen = 0;
    busContext(b).feeds.testHooks.drop = () => ++seen % 3 === 0;
    const want: number[] = [];
    try {
      for (let i = 0; i < 30; i++) want.push((await bus.publish(decided(sessionId, loops[i % 3]!))).journalSeq);
    } finally {
      busContext(b).feeds.testHooks.drop = undefined;
    }
    // The loops speak once more, so loop mode sees every miss too.
    for (const l of loops) want.push((await bus.publish(decided(sessionId, l))).journalSeq);
    const reader = new Reader(sub);
    const got = (await reader.take(want.length)).map((d) => d.journalSeq);
    // Nothing more (no repair delivered twice) before a sentinel published after.
    const sentinel = (await bus.publish(decided(sessionId, loops[0]!))).journalSeq;
    expect(await reader.before((d) => d.journalSeq === sentinel)).toEqual([]);
    await sub.close();
    return { want, got };
  }

  it("namespace mode delivers every event once, in journal order", async () => {
    const { want, got } = await dropped(nsViewers);
    expect(got).toEqual(want);
  });

  it("namespace mode reports a repaired loss to the viewers it concerned, not to every viewer", async () => {
    const [a, b] = [newId(), newId()];
    const reports: Record<string, string[]> = { a: [], b: [] };
    const open = (sessionId: string, name: "a" | "b") =>
      nsViewers.subscribeEvents({ sessions: [sessionId], enduring: "all" }, { onReport: (r) => void (r.kind === "gap_closed" && reports[name]!.push(r.reason)) });
    const [subA, subB] = [await open(a, "a"), await open(b, "b")];
    let dropped = 0;
    busContext(nsViewers).feeds.testHooks.drop = (m) => m.subject.includes(a) && dropped++ === 0;
    try {
      const want = { a: [] as number[], b: [] as number[] };
      want.a.push((await bus.publish(decided(a, newId()))).journalSeq);
      want.b.push((await bus.publish(decided(b, newId()))).journalSeq);
      want.a.push((await bus.publish(decided(a, newId()))).journalSeq);
      expect((await new Reader(subA).take(2)).map((d) => d.journalSeq)).toEqual(want.a);
      expect((await new Reader(subB).take(1)).map((d) => d.journalSeq)).toEqual(want.b);
      expect(dropped).toBeGreaterThan(0);
      expect(reports).toEqual({ a: ["gap"], b: [] });
    } finally {
      busContext(nsViewers).feeds.testHooks.drop = undefined;
      await subA.close();
      await subB.close();
    }
  });

  it("loop mode delivers every event exactly once, a missed one when its subject speaks again", async () => {
    const { want, got } = await dropped(viewers);
    expect([...got].sort((a, b) => a - b)).toEqual(want);
  });
});

describe("a resync that finds nothing missed", () => {
  it("reports no gap, in either feed mode: never a range that ends before it begins", async () => {
    for (const feed of ["loop", "namespace"] as const) {
      const logs: { msg?: string; reason?: string; fromSeq?: number; toSeq?: number }[] = [];
      const own = await connect({ servers: natsServers(), namespace: bus.namespace, feed, logger: pino({ level: "debug" }, { write: (line: string) => void logs.push(JSON.parse(line) as (typeof logs)[number]) }) });
      try {
        const sessionId = newId();
        const reports: { fromSeq: number; toSeq: number; reason: string }[] = [];
        const sub = await own.subscribeEvents({ sessions: [sessionId], enduring: "all" }, { onReport: (r) => void (r.kind === "gap_closed" && reports.push(r)) });
        const seq = (await bus.publish(decided(sessionId, newId()))).journalSeq;
        expect((await new Reader(sub).take(1)).map((d) => d.journalSeq)).toEqual([seq]);
        // A reconnect with nothing published meanwhile: each viewer checks the journal and
        // finds it no further than what it took.
        await busContext(own).nc.reconnect();
        // Loop mode: each viewer reads on its own; namespace mode: each shard's lane for all.
        const done = feed === "loop" ? "feed viewer resynced from the journal" : "namespace feed resynced from the journal";
        const resynced = () => logs.filter((l) => l.msg === done && l.reason === "reconnect");
        await waitFor("the resync", () => resynced().length > 0, 10_000, 10);
        expect({ feed, resync: resynced()[0]!.toSeq! < resynced()[0]!.fromSeq!, reports }).toEqual({ feed, resync: true, reports: [] });
        await sub.close();
      } finally {
        await own.close();
      }
    }
  });
});
