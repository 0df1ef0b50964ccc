// The session catalog against a full fold of every journal, on a real nats-server: a
// generated run of sessions and events, with concurrent updaters, an updater killed
// mid-update, checkpoints reset (every record offered again) and a server restart; the
// list of 10,000 sessions paged; the consumers 5 concurrent gateway lists open; forged
// and poison data costing nothing but itself.
import { Kvm } from "@nats-io/kv";
import { jetstream } from "@nats-io/jetstream";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, type JetloopEvent, type Jetloop, newId, openSessionCatalog, startGateway } from "../../src/index.js";
import { eventSubject } from "../../src/subjects/subjects.js";
import { entries, fullFold, listed, resetCheckpoints, type Row } from "../harness/catalog.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";
import { startServer, type NatsServer } from "../harness/server.js";
import { waitFor } from "../harness/async.js";
import { jetloopIn } from "../harness/cli.js";
import { request } from "./gateway/http.js";

/** One generated event of a session, by kind; the pools make gates resolve across loops and twice. */
const stepKind = fc.constantFrom("SessionStarted", "LoopStarted", "TurnStarted", "StepDone", "GateOpened", "GateResolved", "TurnDone", "TurnFailed", "TurnInterrupted", "SessionStopped", "PermissionRequested");
const text = fc.oneof(fc.string({ maxLength: 120 }), fc.constantFrom("", "\n\n  first line\nsecond", "\u00a0\u3000x\u0085", "🚀".repeat(90), " \t\n"));
const sessionPlan = fc.record({ steps: fc.array(fc.tuple(stepKind, fc.nat(1), fc.nat(1), text, fc.nat(3600)), { minLength: 1, maxLength: 10 }) });

function eventsOf(plan: { steps: [string, number, number, string, number][] }): JetloopEvent[] {
  const sessionId = newId();
  const loops = [newId(), newId()];
  const gates = [newId(), newId()];
  const turn = newId();
  const base = Date.UTC(2026, 11, 1);
  return plan.steps.map(([kind, l, g, t, sec]) => {
    const loopId = loops[l]!;
    const createdAt = new Date(base + sec * 1000).toISOString();
    const c = { sessionId, loopId, turnId: turn, createdAt };
    switch (kind) {
      case "SessionStarted":
      case "SessionStopped":
        return createEvent(kind, { sessionId, createdAt });
      case "LoopStarted":
        return createEvent(kind, { sessionId, loopId, createdAt });
      case "TurnStarted":
        return createEvent(kind, { ...c, message: { role: "user", blocks: [{ type: "text", text: t }] } });
      case "StepDone":
        return createEvent(kind, { ...c, stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: t }] }] });
      case "GateOpened":
        return createEvent(kind, { ...c, stepId: newId(), gate: { id: gates[g]!, kind: "harness.permission", resolver: "loop", subject: { toolExecutionId: newId() } } });
      case "GateResolved":
        return createEvent(kind, { ...c, stepId: newId(), gateId: gates[g]!, resolver: "loop", reason: "answered", action: "Approve" });
      case "PermissionRequested":
        return createEvent(kind, { ...c, stepId: newId(), toolExecutionId: newId(), request: { toolName: "bash", summary: "run it", requirements: [] } });
      default:
        return createEvent(kind as "TurnDone" | "TurnFailed" | "TurnInterrupted", c);
    }
  });
}

describe("the session catalog against a full fold", () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  it("agrees after a generated run with concurrent and killed updaters, replayed updates and a server restart", { timeout: 120_000 }, async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(sessionPlan, { minLength: 1, maxLength: 6 }), fc.array(fc.nat(), { minLength: 4, maxLength: 4 }), async (plans, cuts) => {
        const restart = run++ === 0; // one restart per test: seconds each
        const ns = uniqueNamespace("cat");
        const a = await connect({ servers: server.url, namespace: ns });
        let b = await connect({ servers: server.url, namespace: ns });
        try {
          await a.provision();
          const catA = await openSessionCatalog(a, { onReport: () => undefined });
          let catB = await openSessionCatalog(b, { onReport: () => undefined });
          // The sessions' events interleaved, in each session's own order.
          const queues = plans.map(eventsOf);
          const all: JetloopEvent[] = [];
          for (let i = 0; queues.some((q) => q.length > 0); i++) {
            const q = queues[i % queues.length]!;
            if (q.length > 0) all.push(q.shift()!);
          }
          const at = [...new Set(cuts.map((c) => c % (all.length + 1)))].sort((x, y) => x - y);
          let from = 0;
          for (const [i, cut] of [...at, all.length].entries()) {
            await a.publishAll(all.slice(from, cut));
            from = cut;
            switch (i % 4) {
              case 0: // two updaters at once
                await Promise.all([catA.catchUp(), catB.catchUp()]);
                break;
              case 1: {
                // An updater dies mid-update: its connection goes while it reads and writes.
                const dying = catB.catchUp().catch(() => undefined);
                await b.nc.close();
                await dying;
                b = await connect({ servers: server.url, namespace: ns });
                catB = await openSessionCatalog(b, { onReport: () => undefined });
                break;
              }
              case 2: // every record offered again
                await resetCheckpoints(a);
                await catA.catchUp();
                break;
              default:
                if (restart) {
                  await server.restart();
                  await waitFor("the bus back", async () => (await a.jetstreamManager().then((m) => m.streams.info(a.stream)).then(() => true).catch(() => false)), 20_000);
                }
            }
          }
          const expected = await fullFold(a);
          expect(await listed(catA)).toEqual(expected);
          expect(await listed(catB)).toEqual(expected);
          // Offered every record again, the catalog writes nothing: each entry keeps its revision.
          const before = await entries(a);
          await resetCheckpoints(a);
          await catA.catchUp();
          expect(await entries(a)).toEqual(before);
          // And a rebuild from the journal comes to the same list.
          await catB.rebuild();
          expect(await listed(catA)).toEqual(expected);
          await catA.close();
          await catB.close();
        } finally {
          await a.close();
          await b.close();
        }
      }),
      { numRuns: 3, seed: Number(process.env.JETLOOP_SEED ?? 3801), endOnFailure: true },
    );
  });
});

describe("the list over many sessions", () => {
  let bus: Jetloop;
  const sessions: { sid: string; at: number | undefined }[] = [];
  beforeAll(async () => {
    bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("cat10k") });
    await bus.provision();
    // 10,000 sessions made fast: a first event each, published in bulk; a third also active at a generated time.
    const rand = fc.sample(fc.nat(86_400), { numRuns: 10_000, seed: 38 });
    const events: JetloopEvent[] = [];
    for (let i = 0; i < 10_000; i++) {
      const sid = newId();
      const active = i % 3 === 0;
      const at = active ? Date.UTC(2026, 11, 2) + rand[i]! * 1000 : undefined;
      sessions.push({ sid, at });
      events.push(createEvent("SessionStarted", { sessionId: sid }));
      if (active) events.push(createEvent("TurnStarted", { sessionId: sid, loopId: newId(), turnId: newId(), createdAt: new Date(at!).toISOString() }));
    }
    await bus.publishAll(events);
  }, 120_000);
  afterAll(() => bus.close());

  it("pages 10,000 sessions in Go's order, every one once", { timeout: 120_000 }, async () => {
    const catalog = await openSessionCatalog(bus);
    try {
      const expected = [...sessions].sort((x, y) => ((x.at ?? -Infinity) === (y.at ?? -Infinity) ? (x.sid < y.sid ? -1 : 1) : (y.at ?? -Infinity) > (x.at ?? -Infinity) ? 1 : -1)).map((s) => s.sid);
      const got: string[] = [];
      for (let skip = 0; ; skip += 1000) {
        const page = await catalog.list({ skip, limit: 1000 });
        got.push(...page.sessions.map((s) => s.sessionId));
        if (page.sessions.length < 1000) break;
      }
      expect(got).toEqual(expected);
      // Pages of 20 anywhere in the list are its slices.
      for (const skip of [0, 20, 4_990, 9_980, 9_999, 10_000]) {
        const page = await catalog.list({ skip, limit: 20 });
        expect(page.sessions.map((s) => s.sessionId)).toEqual(expected.slice(skip, skip + 20));
      }
    } finally {
      await catalog.close();
    }
  });

  it("5 concurrent gateway lists open at most the documented consumers (the index's watch, one read per shard, one refold)", { timeout: 60_000 }, async () => {
    const gw = await startGateway(bus, { listen: "127.0.0.1:0" });
    const nc = bus.nc;
    // The gateway's first list loads its index (its one watch); the lists below then share it.
    expect((await request(`${gw.url}/v1/sessions?limit=1`)).status).toBe(200);
    // Consumers created and deleted on the server, from its advisories: the peak open at once, not a sample.
    const streams = new Set([...bus.journals().map((j) => j.stream), `KV_${bus.namespace.replaceAll(".", "_")}_catalog`]);
    let open = 0;
    let peak = 0;
    const advisories = nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.>", {
      callback: (_, m) => {
        const stream = m.subject.split(".")[5];
        if (stream === undefined || !streams.has(stream)) return;
        if (m.subject.includes(".CREATED.")) peak = Math.max(peak, ++open);
        if (m.subject.includes(".DELETED.")) open--;
      },
    });
    try {
      await nc.flush();
      // New sessions since the last list, so the lists' update has journal to read; and 50
      // entries made unreadable, with a new record each, so it folds those 50 sessions again.
      const kv = await new Kvm(nc).open(`${bus.namespace.replaceAll(".", "_")}_catalog`);
      const spoiled = sessions.slice(0, 50).map((s) => s.sid);
      for (const sid of spoiled) await kv.put(`sessions.${sid}`, "{spoiled");
      await bus.publishAll([...Array.from({ length: 300 }, () => createEvent("SessionStarted", { sessionId: newId() })), ...spoiled.map((sid) => createEvent("LoopStarted", { sessionId: sid, loopId: newId() }))]);
      const replies = await Promise.all(Array.from({ length: 5 }, (_, i) => request(`${gw.url}/v1/sessions?skip=${i * 20}&limit=20`)));
      for (const r of replies) expect(r.status).toBe(200);
      const firsts = replies.map((r) => (JSON.parse(r.body) as { sessions: unknown[] }).sessions.length);
      expect(firsts).toEqual([20, 20, 20, 20, 20]);
      // A sentinel after: every advisory of the lists has arrived once the server answered it.
      await nc.flush();
      expect(peak).toBeGreaterThan(0);
      // The index's watch opened at the first list, before counting: what the lists opened is the update's, one read per shard and one refold.
      expect(peak).toBeLessThanOrEqual(bus.shards + 1);
    } finally {
      advisories.unsubscribe();
      await gw.close();
    }
  });
});

describe("forged and poison data cost only themselves", () => {
  it("a poison record, a forged entry, a foreign entry and a garbage checkpoint leave the list whole and true", { timeout: 60_000 }, async () => {
    const bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("catp") });
    try {
      await bus.provision();
      const honest = [newId(), newId(), newId()];
      const victim = honest[0]!;
      await bus.publishAll(honest.flatMap((sid, i) => [createEvent("SessionStarted", { sessionId: sid }), createEvent("TurnStarted", { sessionId: sid, loopId: newId(), turnId: newId(), createdAt: new Date(Date.UTC(2026, 0, 1, i)).toISOString(), message: { role: "user", blocks: [{ type: "text", text: `task ${i}` }] } })]));
      const reports: string[] = [];
      const catalog = await openSessionCatalog(bus, { onReport: (r) => reports.push(r.kind) });
      await catalog.list();
      // Poison on the victim's subject and on a session of its own; garbage under the catalog's keys.
      const js = jetstream(bus.nc);
      const poisonSid = newId();
      const subjectOf = (sid: string) => eventSubject(bus.namespace, "journal", { sessionId: sid, family: "session", type: "SessionStarted" }, bus.journalOf(sid).shard);
      for (const sid of [victim, poisonSid]) await js.publish(subjectOf(sid), new TextEncoder().encode("{not json"));
      const kv = await new Kvm(bus.nc).open(`${bus.namespace.replaceAll(".", "_")}_catalog`);
      const forged = newId();
      await kv.put(`sessions.${forged}`, `{"session_id":"${forged}","title":"forged","jetloop":{"shard":0,"folded_seq":0,"gates":[]}}`);
      await kv.put(`sessions.${honest[1]!}`, `{"session_id":"${honest[2]!}","jetloop":{"shard":0,"folded_seq":1,"gates":[]}}`);
      await kv.put(`sessions.${honest[2]!}`, `{"session_id":"${honest[2]!}","state":"stopped","jetloop":{"shard":0,"folded_seq":99999999,"gates":[]}}`);
      await kv.put(`sessions.${victim}`, "{not json");
      await kv.put("checkpoint.0", "abc");
      // New events, so the entries are read again by the update.
      await bus.publishAll(honest.map((sid) => createEvent("LoopStarted", { sessionId: sid, loopId: newId() })));
      const expected = await fullFold(bus);
      const got = (await listed(catalog)).filter((r) => r.session_id !== forged);
      expect(got).toEqual(expected);
      expect(reports).toContain("entry_invalid");
      // A checkpoint claiming more than the journal holds is nobody's: new records are still folded.
      await kv.put("checkpoint.0", "999999999");
      await bus.publishAll(honest.map((sid) => createEvent("TurnStarted", { sessionId: sid, loopId: newId(), turnId: newId(), createdAt: new Date(Date.UTC(2026, 1, 1)).toISOString() })));
      const later = await fullFold(bus);
      expect((await listed(catalog)).filter((r) => r.session_id !== forged)).toEqual(later);
      expect(Number((await kv.get("checkpoint.0"))!.string())).toBeLessThan(999999999);
      // The rebuild removes the entry no journal backs: the command, as an operator runs it.
      const cli = ["--server", natsServers().join(","), "--namespace", bus.namespace];
      const rebuilt = await jetloopIn(["catalog", "rebuild", ...cli]);
      expect([rebuilt.code, rebuilt.stdout]).toEqual([0, expect.stringMatching(/rebuilt: \d+ journal record\(s\) read, \d+ entries written, 1 removed/)]);
      expect(await listed(catalog)).toEqual(later);
      // `jetloop sessions --json` pages the same list.
      const page = await jetloopIn(["sessions", "--json", "--skip", "1", "--limit", "2", ...cli]);
      expect(page.code).toBe(0);
      expect(page.stdout.trim().split("\n").map((l) => JSON.parse(l) as Row)).toEqual(later.slice(1, 3));
      expect((await jetloopIn(["sessions", "--limit", "1001", ...cli])).code).toBe(2);
      await catalog.close();
    } finally {
      await bus.close();
    }
  });
});
