// Adversary edges, third round: what a durable trusts in its consumer's metadata, and one
// caller's session lists against other viewers' reads.
//
// Rule (src/sources/filter-changes.ts, readFilterChanges): "A value jetloop never writes
// is refused". jetloop writes a filter change's `at` as the journal's end read after the
// change, so an `at` past the journal's end is a value it never writes. Anyone who may update
// the consumer (the example's gateway user has `$JS.API.CONSUMER.CREATE.<stream>.>`, an
// operator's script) can set `jetloop_filter_changes` to `[[0, 2^53-1, ["<a subject of no
// session>"]]]`: well formed, so it is read; never pruned (its `at` is always ahead of the
// ack floor); and every message of every later atomic turn counts as "begun before the
// change" and is acknowledged as seen without being delivered. The durable fails open:
// every turn lost, silently, across reopenings and recreations. Expected: such a record is
// refused (typed error on open, as a malformed one is) or bounded by the journal's end;
// never a silent skip of events stored after it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, newId, startGateway, type Delivery, type Jetloop, type JetloopEvent, type RunningGateway, type Subscription } from "../../src/index.js";
import { supports } from "../../src/subjects/server-features.js";
import { natsServerFlavor, natsServers, natsServerVersion, uniqueNamespace } from "../harness/context.js";

const ATOMIC = natsServerFlavor() === "external" || supports(natsServerVersion(), "atomicBatch");
const buses: Jetloop[] = [];
afterAll(async () => {
  for (const b of buses) await b.close().catch(() => undefined);
});

const decided = (sessionId: string, loopId: string): JetloopEvent =>
  createEvent("PermissionDecided", { sessionId, loopId, turnId: newId(), stepId: newId(), toolExecutionId: newId(), effect: "approve" });

/** Takes and acknowledges deliveries up to and including journal sequence `last` (they come in journal order). */
async function takeUpTo(sub: Subscription<JetloopEvent>, last: number, timeoutMs = 20_000): Promise<Delivery<JetloopEvent>[]> {
  const got: Delivery<JetloopEvent>[] = [];
  const it = sub[Symbol.asyncIterator]();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((r) => (timer = setTimeout(() => r("late"), Math.max(1, deadline - Date.now()))));
    const next = await Promise.race([it.next(), late]);
    clearTimeout(timer);
    if (next === "late" || next.done) throw new Error(`journal sequence ${last} not delivered; got ${JSON.stringify(got.map((d) => d.journalSeq))}`);
    got.push(next.value);
    if ("ack" in next.value && typeof next.value.ack === "function") await (next.value.ack as () => Promise<void>)();
    if (next.value.journalSeq >= last) return got;
  }
}

type Forgery = { name: string; key: string; value: (end: number, ns: string) => string };

// The family: every position a durable's metadata records, set past the journal's end
// (just past, far past, the largest safe integer), or on a shard the durable does not read.
const forgeries: Forgery[] = [
  ...[1, 1000, Number.MAX_SAFE_INTEGER].map((past) => ({
    name: `a filter change whose end is ${past === Number.MAX_SAFE_INTEGER ? "2^53-1" : `the journal's end + ${past}`}`,
    key: "jetloop_filter_changes",
    value: (end: number, ns: string) => JSON.stringify([[0, past === Number.MAX_SAFE_INTEGER ? past : end + past, [`${ns}.journal.nobody.>`]]]),
  })),
  {
    name: "a filter change begun past the journal's end, its end not yet read",
    key: "jetloop_filter_changes",
    value: (end: number, ns: string) => JSON.stringify([[end + 5, null, [`${ns}.journal.nobody.>`]]]),
  },
  {
    name: "an honest change followed by one past the journal's end",
    key: "jetloop_filter_changes",
    value: (end: number, ns: string) => JSON.stringify([[0, end, [`${ns}.journal.nobody.>`]], [end, end + 2, [`${ns}.journal.nobody.>`]]]),
  },
  ...[1, 1_000_000].map((past) => ({ name: `a "new" start at the journal's end + ${past}`, key: "jetloop_new_at", value: (end: number) => `0:${end + past}` })),
  { name: 'a "new" start on a shard the durable does not read', key: "jetloop_new_at", value: (end: number) => `0:${end},7:1` },
];

describe.skipIf(!ATOMIC)("a durable's records in its consumer's metadata, set past the journal's end", () => {
  let bus: Jetloop;
  beforeAll(async () => {
    bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("ae3d") });
    buses.push(bus);
    await bus.provision();
  });

  /** A service's durable, opened once, given one event, closed; returns its name and the journal's end. */
  async function closedDurable(session: string, loop: string): Promise<{ durable: string; end: number }> {
    const durable = `svc_${newId().slice(-8)}`;
    const first = await bus.session(session).subscribeEvents({ enduring: "all" }, { durable, start: "all" });
    const { journalSeq: seq } = await bus.publish(decided(session, loop));
    expect((await takeUpTo(first, seq)).map((d) => d.journalSeq)).toEqual([seq]);
    await first.close();
    return { durable, end: seq };
  }

  async function plant(durable: string, key: string, value: string): Promise<void> {
    const jsm = await bus.jetstreamManager();
    const info = await jsm.consumers.info(bus.stream, durable);
    await jsm.consumers.update(bus.stream, durable, { metadata: { ...(info.config.metadata ?? {}), [key]: value } });
  }

  for (const f of forgeries) {
    it(`${f.name}: opening the durable is refused with a typed error, and an honest durable beside it gets every turn`, async () => {
      const session = newId();
      const loop = newId();
      const honestSession = newId();
      const { durable } = await closedDurable(session, loop);
      const honest = await closedDurable(honestSession, loop);
      // The journal's end now is the honest durable's event.
      await plant(durable, f.key, f.value(honest.end, bus.namespace));

      const refused = await bus
        .session(session)
        .subscribeEvents({ enduring: "all" }, { durable, start: "all" })
        .then(async (s) => {
          await s.close();
          return undefined;
        })
        .catch((e: unknown) => e);
      expect(refused).toMatchObject({ name: "OptionsError", code: "OPTIONS_INVALID" });
      expect((refused as Error).message).toContain("never wrote it");

      // The forged durable costs only itself: the honest one, opened after, gets a whole atomic turn.
      const opened = await bus.session(honestSession).subscribeEvents({ enduring: "all" }, { durable: honest.durable, start: "all" });
      const turn = await bus.publishAll([decided(honestSession, loop), decided(honestSession, loop), decided(honestSession, loop)], { atomic: true });
      const due = turn.map((r) => r.journalSeq);
      const got = await takeUpTo(opened, Math.max(...due));
      await opened.close();
      expect(got.map((d) => d.journalSeq).filter((s) => due.includes(s))).toEqual(due);
    }, 60_000);
  }

  it("a record planted while the durable runs is refused at its next filter change, not applied", async () => {
    const session = newId();
    const loop = newId();
    const { durable, end } = await closedDurable(session, loop);
    const sub = await bus.session(session).subscribeEvents({ enduring: { loops: [loop] } }, { durable, start: "all" });
    await plant(durable, "jetloop_filter_changes", JSON.stringify([[0, end + 100, [`${bus.namespace}.journal.nobody.>`]]]));
    await expect(sub.updateFilter({ enduring: "all" })).rejects.toMatchObject({ name: "OptionsError" });
    await sub.close();
  }, 60_000);

  it("a record at the journal's end, as jetloop writes one, is read: the durable opens and delivers what is due", async () => {
    const session = newId();
    const loop = newId();
    const { durable, end } = await closedDurable(session, loop);
    await plant(durable, "jetloop_filter_changes", JSON.stringify([[end, end, [`${bus.namespace}.journal.nobody.>`]]]));
    const opened = await bus.session(session).subscribeEvents({ enduring: "all" }, { durable, start: "all" });
    const lone = await bus.publish(decided(session, loop));
    const got = await takeUpTo(opened, lone.journalSeq);
    await opened.close();
    expect(got.map((d) => d.journalSeq)).toEqual([lone.journalSeq]);
  }, 60_000);
});

// Tried and held (kept as a guard): a session list holds read-budget shares for every
// shard; 40 lists at once must not hold an honest session's status past 2 s.
describe("lists against other viewers' reads", () => {
  let bus: Jetloop;
  let gw: RunningGateway;
  const honest = newId();
  beforeAll(async () => {
    bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("ae3"), shards: 4 });
    buses.push(bus);
    await bus.provision();
    for (let i = 0; i < 200; i++) await bus.publish(createEvent("SessionStarted", { sessionId: newId() }));
    await bus.publish(createEvent("SessionStarted", { sessionId: honest }));
    gw = await startGateway(bus, { listen: "127.0.0.1:0" });
  }, 120_000);
  afterAll(async () => {
    await gw?.close();
  });

  it("an honest session's status stays within 2 s while another caller sends 40 lists at once", async () => {
    expect((await fetch(`${gw.url}/v1/sessions/${honest}/status`)).status).toBe(200);
    const lists = Array.from({ length: 40 }, () => fetch(`${gw.url}/v1/sessions?limit=1000`).then((r) => r.text()));
    const t = Date.now();
    const r = await fetch(`${gw.url}/v1/sessions/${honest}/status`);
    const ms = Date.now() - t;
    await Promise.all(lists);
    expect(r.status).toBe(200);
    // Generous for a loaded machine: a stalled status (the failure) takes the read timeout, 30 s.
    expect(ms).toBeLessThan(5000);
  }, 60_000);
});
