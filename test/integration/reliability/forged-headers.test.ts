// A header a writer sets is trusted for nothing beyond its own message (SECURITY.md), as a
// property against a real nats-server (batch headers are checked on 2.12+, stored verbatim
// before; both servers run it): a journal publisher
// stores, on one victim session, messages carrying every `Jetloop-*` and `Nats-*` header
// jetloop reads (and the server's republish and source headers), forged to values from a
// generator, at every position of a raw atomic batch (its commit on the victim's session or
// on the attacker's own) or outside any batch, and with the payload of every poison kind of
// the bad-input table (RELIABILITY.md scenario 6) or a valid event. After each, honest
// sessions beside it keep working: the policy service decides their gates, their replay and
// a namespace replay end, a namespace feed subscription and a durable subscription deliver
// their next event (a sentinel, awaited: nothing is inferred from silence), and the
// gateway answers their status, journal page, the session list and their SSE stream; each
// within a generous bound over a control round of the same honest work run before any
// forgery in this test. The victim's own replay ends too, and its gateway status answers.
// Its figures are RELIABILITY.md scenario 15.
import { headers, type NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createEvent,
  type DurableSubscription,
  encodeEvent,
  eventSubject,
  type GateServer,
  type Jetloop,
  type JetloopEvent,
  newId,
  type PolicyService,
  type RunningGateway,
  servePolicy,
  startGateway,
  type Subscription,
  type SubscriptionReport,
  TurnUnheldError,
} from "../../../src/index.js";
import { defaultRegistry } from "../../../src/events/catalogue.js";
import { supports } from "../../../src/subjects/server-features.js";
import { MUTATIONS } from "../../harness/bad-messages.js";
import { connectTest, natsServerVersion, provisionedBus } from "../../harness/context.js";
import { sleep, waitFor } from "../../harness/async.js";
import { defaultContext, record } from "../../harness/reliability/scenarios/common.js";
import { saveRecord } from "../../harness/reliability/save.js";
import { tmpReadRule } from "../fixtures/tmp-read-rule.js";
import { request, SseReader } from "../gateway/http.js";

let bus: Jetloop;
const cleanup = provisionedBus((b) => void (bus = b));
let nc: NatsConnection;
let gw: RunningGateway;
let policy: PolicyService;
let feed: Subscription;
let durable: DurableSubscription;
const fed = new Set<string>();
const durableGot = new Set<string>();
let fedCount = 0;
let durableCount = 0;
/** The honest session's sentinels, one per round. */
const sentinels: string[] = [];
const sentinelSet = new Set<string>();
const victim = newId();
const attacker = newId();
const honest = newId();
const honestLoop = newId();
let gates: GateServer;

const decided = (sessionId: string): JetloopEvent =>
  createEvent("PermissionDecided", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), toolExecutionId: newId(), effect: "approve" });
const journalSubject = (e: JetloopEvent) => eventSubject(bus.namespace, "journal", { ...e, family: defaultRegistry.get(e.type)!.family });

beforeAll(async () => {
  nc = await connectTest();
  gw = await startGateway(bus, { listen: "127.0.0.1:0" });
  policy = await servePolicy(bus, { durable: `policy-${newId().slice(-8)}`, decide: tmpReadRule, subscription: { start: "new" } });
  cleanup.push(() => policy.close());
  gates = await bus.serveGates(honest, honestLoop);
  cleanup.push(() => gates.close());
  feed = await bus.subscribeEvents({ enduring: "all" }, { start: "new", feed: "namespace" });
  durable = await bus.subscribeEvents({ enduring: "all" }, { durable: `forged-${newId().slice(-8)}`, start: "new" });
  void (async () => {
    for await (const d of feed) {
      fed.add(d.event.eventId);
      if (sentinelSet.has(d.event.eventId)) fedCount++;
    }
  })().catch(() => undefined);
  void (async () => {
    for await (const d of durable) {
      durableGot.add(d.event.eventId);
      if (sentinelSet.has(d.event.eventId)) durableCount++;
      await d.ack();
    }
  })().catch(() => undefined);
});

afterAll(async () => {
  await feed?.close();
  await durable?.close();
  await gw?.close();
  await nc?.close();
});

/** How long each part of the honest work took (ms). */
interface Round {
  gate: number;
  delivered: number;
  sessionReplay: number;
  namespaceReplay: number;
  gateway: number;
}

/** The honest session's work: a gate the policy service decides, a sentinel delivered, replays, the gateway. */
async function honestRound(): Promise<Round> {
  let t = Date.now();
  const d = await gates.requestPermission({
    turnId: newId(),
    stepId: newId(),
    toolExecutionId: newId(),
    request: { toolName: "read", requirements: [{ kind: "fs.read", match: "/tmp/a", description: "read" }] },
    timeoutMs: 60_000,
  });
  expect(d.effect).toBe("approve");
  const gate = Date.now() - t;

  t = Date.now();
  const sentinel = decided(honest);
  sentinels.push(sentinel.eventId);
  sentinelSet.add(sentinel.eventId);
  const at = (await bus.publish(sentinel)).journalSeq;
  await waitFor("the feed and the durable to deliver the sentinel", () => fed.has(sentinel.eventId) && durableGot.has(sentinel.eventId), 30_000, 10);
  const delivered = Date.now() - t;

  t = Date.now();
  const mine: string[] = [];
  for await (const x of bus.session(honest).replay({ enduring: "all" })) mine.push(x.event.eventId);
  expect(mine.at(-1)).toBe(sentinel.eventId);
  const sessionReplay = Date.now() - t;

  t = Date.now();
  const all: string[] = [];
  for await (const x of bus.replay({ enduring: "all" })) all.push(x.event.eventId);
  expect(all).toContain(sentinel.eventId);
  const namespaceReplay = Date.now() - t;

  t = Date.now();
  const base = `${gw.url}/v1/sessions`;
  const [list, status, page] = await Promise.all([request(base), request(`${base}/${honest}/status`), request(`${base}/${honest}/journal?from_journal_seq=${at}`)]);
  expect([list.status, status.status, page.status]).toEqual([200, 200, 200]);
  expect(list.body).toContain(honest);
  expect(page.body).toContain(sentinel.eventId);
  const sse = await SseReader.open(`${base}/${honest}/events`, { "Last-Event-ID": String(at - 1) });
  try {
    await sse.until((text) => text.includes(sentinel.eventId), 30_000);
  } finally {
    sse.close();
  }
  const gateway = Date.now() - t;
  return { gate, delivered, sessionReplay, namespaceReplay, gateway };
}

/** The headers jetloop reads (SECURITY.md's table) and those the server sets on what it republishes or sources. */
const HEADER_NAMES = [
  "Jetloop-Batch-Size",
  "Jetloop-Last-Journal-Seq",
  "Jetloop-Gate-Actor",
  "Jetloop-Parked-Subject",
  "Jetloop-Parked-Seq",
  "Jetloop-Parked-Durable",
  "Jetloop-Parked-Reason",
  "Nats-Batch-Id",
  "Nats-Batch-Sequence",
  "Nats-Batch-Commit",
  "Nats-Stream",
  "Nats-Sequence",
  "Nats-Last-Sequence",
  "Nats-Subject",
  "Nats-Time-Stamp",
  "Nats-Stream-Source",
  "Nats-Msg-Id",
  "Nats-Expected-Stream",
  "traceparent",
] as const;

const forgedValue = (stream: string) =>
  fc.constantFrom("1000", "999", "2", "1", "0", "-1", "18446744073709551615", "9007199254740993", "1e3", "", " 7 ", stream, `${stream} 1 > >`, "eob", "ü garbage");

/** Publishes one forged case; whatever the server refuses is not stored, which is fine. */
async function forge(c: { header: string; value: string; batch: number; at: number; commitOnVictim: boolean; poison: number }, on: string = victim): Promise<void> {
  const events = Array.from({ length: c.batch || 1 }, (_, i) => decided(c.batch === 0 || i < c.batch - 1 || c.commitOnVictim ? on : attacker));
  const id = newId().replaceAll("-", "").slice(0, 22);
  for (const [i, e] of events.entries()) {
    const h = headers();
    h.set("Nats-Msg-Id", e.eventId);
    if (c.batch > 0) {
      h.set("Nats-Batch-Id", id);
      h.set("Nats-Batch-Sequence", String(i + 1));
      h.set("Jetloop-Batch-Size", String(c.batch));
      if (i === c.batch - 1) h.set("Nats-Batch-Commit", "1");
    }
    let data = encodeEvent(e);
    let subject = journalSubject(e);
    if (i === c.at) {
      h.set(c.header, c.value);
      const m = MUTATIONS[c.poison];
      if (m !== undefined && e.sessionId === on) {
        const bad = m.corrupt({ ns: bus.namespace, channel: "journal", coords: { sessionId: on, loopId: e.loopId!, turnId: newId(), stepId: newId() }, event: e, data, capBytes: 65_536, int: () => 0 });
        data = bad.data;
        subject = bad.subject ?? subject;
      }
    }
    if (c.batch > 0 && i < c.batch - 1) nc.publish(subject, data, { headers: h });
    else await nc.request(subject, data, { headers: h, timeout: 5000 }).catch(() => undefined);
  }
}

describe("forged headers on one session", () => {
  it("cost that session alone: honest sessions' gates, feeds, durables, replays and gateway answers stay within their unforged bounds", async () => {
    // The victim is a session the gateway knows: one honest event of its own before the forgeries.
    await bus.publish(decided(victim));
    const startedAt = Date.now();
    await honestRound(); // warm up
    const control = await honestRound();
    const bound = (ms: number) => 3 * ms + 3000;
    const reports: SubscriptionReport[] = [];
    let worstGate = 0;
    let runs = 0;
    let victimWorst = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          header: fc.constantFrom(...HEADER_NAMES),
          value: forgedValue(bus.stream),
          batch: fc.integer({ min: 0, max: 4 }),
          commitOnVictim: fc.boolean(),
          poison: fc.integer({ min: -MUTATIONS.length, max: MUTATIONS.length - 1 }),
          atRaw: fc.nat(),
        }).map((c) => ({ ...c, at: c.atRaw % Math.max(1, c.batch) })),
        async (c) => {
          runs++;
          await forge(c);
          // The victim's own reads end, and its status answers.
          let t = Date.now();
          for await (const d of bus.session(victim).replay({ enduring: "all" }, { onReport: (r) => reports.push(r) })) void d;
          victimWorst = Math.max(victimWorst, Date.now() - t);
          expect((await request(`${gw.url}/v1/sessions/${victim}/status`)).status).toBe(200);
          // A namespace replay whose range ends on the forgery.
          t = Date.now();
          for await (const d of bus.replay({ enduring: "all" })) void d;
          expect(Date.now() - t).toBeLessThan(bound(control.namespaceReplay));
          const r = await honestRound();
          worstGate = Math.max(worstGate, r.gate);
          for (const k of Object.keys(r) as (keyof Round)[]) expect(r[k], `${k} with ${JSON.stringify(c)}`).toBeLessThan(bound(control[k]));
        },
      ),
      {
        numRuns: 48,
        seed: 20261204,
        // The measured attack first (a turn's first message on the victim says 1,000, its commit
        // on the attacker's session), then each header once in that place; the rest generated.
        examples: HEADER_NAMES.map((header) => [{ header, value: "1000", batch: 2, commitOnVictim: false, poison: -1, atRaw: 0, at: 0 }]),
      },
    );
    // The forged size was reported as the poison it is (the first example; batch headers name turns on 2.12+ only), and the victim's reads ended well before the 16 s the claim once cost.
    const unheld = reports.filter((r) => r.kind === "poison" && r.error.name === "TurnUnheldError").length;
    if (supports(natsServerVersion(), "atomicBatch")) expect(unheld).toBeGreaterThan(0);
    expect(victimWorst).toBeLessThan(10_000);
    // Every honest sentinel once to the feed and the durable (each awaited above).
    const published = sentinels.length;
    expect(sentinels.every((id) => fed.has(id) && durableGot.has(id))).toBe(true);
    // The feed delivers once; a durable at least once (a redelivery after a late ack is its contract).
    expect(fedCount).toBe(published);
    expect(durableCount).toBeGreaterThanOrEqual(published);
    saveRecord(
      record(defaultContext(), "18-forged-headers", "18. Forged headers on one session beside honest ones", natsServerVersion(), startedAt, [
        { what: "honest session's sentinels, namespace feed subscription", published, delivered: fedCount, lost: 0, duplicated: fedCount - published },
        { what: "honest session's sentinels, durable subscription", published, delivered: durableCount, lost: 0, duplicated: durableCount - published },
      ], {
        "forged cases (generated, one victim session)": runs,
        "honest gate latency, control (ms)": control.gate,
        "honest gate latency with the forged session beside, worst (ms)": worstGate,
        "honest session replay, control / bound (ms)": `${control.sessionReplay} / ${bound(control.sessionReplay)}`,
        "namespace replay, control / bound (ms)": `${control.namespaceReplay} / ${bound(control.namespaceReplay)}`,
        "gateway status, journal, list and SSE, control / bound (ms)": `${control.gateway} / ${bound(control.gateway)}`,
        "victim replay, worst (ms)": victimWorst,
        "victim poison reports (all replays)": reports.length,
        "of them turn claims the journal does not hold (TurnUnheldError)": unheld,
        seed: 20261204,
      }),
    );
  }, 120_000);

  it("the victim's own SSE stream and journal page go on past every forgery, to its next honest event", async () => {
    const next = decided(victim);
    const at = (await bus.publish(next)).journalSeq;
    const base = `${gw.url}/v1/sessions/${victim}`;
    const sse = await SseReader.open(`${base}/events`, { "Last-Event-ID": "0" });
    try {
      await sse.until((text) => text.includes(next.eventId), 30_000);
    } finally {
      sse.close();
    }
    const page = await request(`${base}/journal?from_journal_seq=${at}`);
    expect(page.status).toBe(200);
    expect(page.body).toContain(next.eventId);
  }, 60_000);

  // Batch headers name turns on 2.12+ only: before, there is no size to forge.
  it.skipIf(!supports(natsServerVersion(), "atomicBatch"))("a forged size on a stream others keep writing costs the victim's replay a bounded wait, and is reported", async () => {
    const v = newId();
    await bus.publish(decided(v));
    await forge({ header: "Jetloop-Batch-Size", value: "1000", batch: 2, at: 0, commitOnVictim: false, poison: -1 }, v);
    // Another session writes on while the victim is replayed, paced (a load, not a synchronisation) so the
    // stream grows but not by the 998 positions the claim needs (reaching them, the read would end there: whole).
    let writing = true;
    const writer = (async () => {
      while (writing) {
        await bus.publish(decided(honest));
        await sleep(50);
      }
    })();
    const reports: SubscriptionReport[] = [];
    const t = Date.now();
    try {
      for await (const d of bus.session(v).replay({ enduring: "all" }, { onReport: (r) => reports.push(r) })) void d;
    } finally {
      writing = false;
      await writer;
    }
    // Four polls (3.75 s) and their reads; a generous bound on a loaded machine, against the 16 s failure it was.
    expect(Date.now() - t).toBeLessThan(12_000);
    const unheld = reports.filter((r) => r.kind === "poison" && r.error instanceof TurnUnheldError);
    expect(unheld).toHaveLength(1);
    const e = (unheld[0] as { error: TurnUnheldError }).error;
    // Typed: its stable code, where it stood, what it claimed, and where the journal was.
    expect({ name: e.name, code: e.code, subject: e.subject.includes(v) }).toEqual({ name: "TurnUnheldError", code: "DELIVERY_INVALID", subject: true });
    expect(e.journalSeq + 999).toBe(e.claimedEnd);
    expect(e.journalEnd).toBeLessThan(e.claimedEnd);
  }, 60_000);
});
