// One session's catalog entry can never pin the namespace, on real nats-servers: what an
// entry holds is bounded by construction (whatever one session stores, its entry stays
// under ENTRY_MAX_BYTES: the measured attack of 12,500 gates on a default server, and
// generated gate floods on a 64 KiB server); and a session whose entry cannot be written
// anyway (a server whose max_payload is below the bound), or whose records are poison or
// carry forged headers, costs only itself: it is marked and listed, the checkpoints move
// to the journal's end, honest sessions beside it are listed as a full fold lists them, a
// session stored after it is read alone, and `jetloop catalog rebuild` exits non-zero
// naming the marked session; it and the gateway's list show it.
import { headers } from "@nats-io/transport-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, encodeEvent, eventSubject, type Jetloop, type JetloopEvent, newId, openSessionCatalog, type CatalogReport, startGateway } from "../../src/index.js";
import { ENTRY_MAX_BYTES } from "../../src/catalog/entry.js";
import { GATES_KEPT } from "../../src/catalog/fold.js";
import { defaultRegistry } from "../../src/events/catalogue.js";
import { checkpoints, entries, fullFold, listed, type Row } from "../harness/catalog.js";
import { MUTATIONS } from "../harness/bad-messages.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";
import { jetloopIn } from "../harness/cli.js";
import { startServer, type NatsServer } from "../harness/server.js";
import { request } from "./gateway/http.js";

const base = Date.UTC(2026, 10, 1);
const at = (sec: number) => new Date(base + sec * 1000).toISOString();

/** An honest session: started, a turn with a title at a distinct time, maybe a gate opened and resolved, maybe stopped. */
function honestSession(k: number, shape: number): JetloopEvent[] {
  const sessionId = newId();
  const loopId = newId();
  const turnId = newId();
  const gate = newId();
  const c = { sessionId, loopId, turnId, createdAt: at(100 + k) };
  const out: JetloopEvent[] = [createEvent("SessionStarted", { sessionId, createdAt: at(k) }), createEvent("TurnStarted", { ...c, message: { role: "user", blocks: [{ type: "text", text: `honest task ${k}\nmore` }] } })];
  if (shape % 2 === 1) out.push(createEvent("GateOpened", { ...c, stepId: newId(), gate: { id: gate, kind: "harness.permission", resolver: "loop" } }));
  if (shape % 4 === 3) out.push(createEvent("GateResolved", { ...c, stepId: newId(), gateId: gate, resolver: "loop", reason: "answered", action: "Approve" }));
  if (shape % 3 === 2) out.push(createEvent("TurnDone", c), createEvent("SessionStopped", { sessionId, createdAt: at(200 + k) }));
  return out;
}

/**
 * A session flooding gates: `n` gates over two loops, each opened and then, by the plan's
 * digit, left open, resolved by its opener, resolved by the other loop, resolved twice, or
 * opened again by the other loop (a takeover): every binding the fold remembers a gate for.
 */
function gateFlood(n: number, plan: readonly number[], title: string, sessionId: string = newId()): JetloopEvent[] {
  const loops = [newId(), newId()];
  const turnId = newId();
  const out: JetloopEvent[] = [createEvent("SessionStarted", { sessionId, createdAt: at(0) }), createEvent("TurnStarted", { sessionId, loopId: loops[0]!, turnId, createdAt: at(50), message: { role: "user", blocks: [{ type: "text", text: title }] } })];
  for (let i = 0; i < n; i++) {
    const id = newId();
    const mine = loops[i % 2]!;
    const other = loops[(i + 1) % 2]!;
    const opened = (loopId: string) => createEvent("GateOpened", { sessionId, loopId, turnId, stepId: newId(), gate: { id, kind: "harness.permission", resolver: "loop" } });
    const resolved = (loopId: string) => createEvent("GateResolved", { sessionId, loopId, turnId, stepId: newId(), gateId: id, resolver: "loop", reason: "answered", action: "Approve" });
    out.push(opened(mine));
    switch (plan[i % plan.length]! % 5) {
      case 1:
        out.push(resolved(mine));
        break;
      case 2:
        out.push(resolved(other));
        break;
      case 3:
        out.push(resolved(mine), resolved(mine));
        break;
      case 4:
        out.push(opened(other));
        break;
      default:
    }
  }
  return out;
}

const byteLength = (s: string) => new TextEncoder().encode(s).length;

describe("the measured attack: a session of 12,500 gates on a default server", () => {
  let bus: Jetloop;
  beforeAll(async () => {
    bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("catsz") });
    await bus.provision();
  });
  afterAll(() => bus.close());

  it("is listed as a full fold lists it, every entry under the bound, and the checkpoints move past it", { timeout: 180_000 }, async () => {
    const honest = Array.from({ length: 6 }, (_, k) => honestSession(k, k));
    const flood = gateFlood(12_500, [0], "the attacker");
    await bus.publishAll([...honest.slice(0, 3).flat(), ...flood, ...honest.slice(3).flat()]);
    const reports: CatalogReport[] = [];
    const catalog = await openSessionCatalog(bus, { onReport: (r) => reports.push(r) });
    try {
      expect(await listed(catalog)).toEqual(await fullFold(bus));
      for (const [key, [, value]] of await entries(bus)) expect([key, byteLength(value) <= ENTRY_MAX_BYTES]).toEqual([key, true]);
      for (const c of await checkpoints(bus)) expect(c.checkpoint).toBe(c.end);
      expect(reports.filter((r) => r.kind !== "entry_invalid")).toEqual([]);
      // A session stored after it is read alone: the checkpoint is past the flood.
      const later = honestSession(7, 1);
      await bus.publishAll(later);
      expect((await catalog.catchUp()).read).toBe(later.length);
      expect((await listed(catalog)).map((r) => r.session_id)).toContain(later[0]!.sessionId);
      const rebuilt = await jetloopIn(["catalog", "rebuild", "--server", natsServers().join(","), "--namespace", bus.namespace]);
      expect([rebuilt.code, rebuilt.stderr]).toEqual([0, ""]);
    } finally {
      await catalog.close();
    }
  });
});

describe("entries bounded by construction on a 64 KiB server", () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startServer({ configText: "max_payload: 65536" });
  });
  afterAll(() => server.close());

  it("whatever gates one session floods, every entry stays under ENTRY_MAX_BYTES and the list equals a full fold", { timeout: 180_000 }, async () => {
    const runs: number[] = [];
    const title = fc.oneof(fc.string({ minLength: 200, maxLength: 400 }), fc.constantFrom("<&>".repeat(200), "\u2028\u0001".repeat(100), "🚀".repeat(300), `${"x".repeat(79)}\u3000tail`));
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 200, max: 1500 })), fc.array(fc.nat(4), { minLength: 1, maxLength: 16 }), title, fc.nat(5), async (n, plan, t, place) => {
        const bus = await connect({ servers: server.url, namespace: uniqueNamespace("catb") });
        try {
          await bus.provision();
          const honest = Array.from({ length: 5 }, (_, k) => honestSession(k, k + place));
          await bus.publishAll([...honest.slice(0, place).flat(), ...gateFlood(n, plan, t), ...honest.slice(place).flat()]);
          const reports: CatalogReport[] = [];
          const catalog = await openSessionCatalog(bus, { onReport: (r) => reports.push(r) });
          try {
            expect(await listed(catalog)).toEqual(await fullFold(bus));
            for (const [key, [, value]] of await entries(bus)) expect([key, byteLength(value) <= ENTRY_MAX_BYTES]).toEqual([key, true]);
            for (const c of await checkpoints(bus)) expect(c.checkpoint).toBe(c.end);
            expect(reports).toEqual([]);
            runs.push(n);
          } finally {
            await catalog.close();
          }
        } finally {
          await bus.close();
        }
      }),
      { numRuns: 4, seed: Number(process.env.JETLOOP_SEED ?? 3802), endOnFailure: true },
    );
    // The flood passed what the fold keeps in at least one run.
    expect(Math.max(...runs)).toBeGreaterThan(GATES_KEPT);
  });
});

/** How one session is hostile: an entry the server cannot hold, poison records, forged headers. */
const hostileKind = fc.oneof(
  fc.record({ kind: fc.constant("unwritable" as const), gates: fc.integer({ min: 60, max: 300 }) }),
  fc.record({ kind: fc.constant("poison" as const), mutation: fc.nat(MUTATIONS.length - 1), count: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ kind: fc.constant("forged" as const), header: fc.constantFrom("Jetloop-Batch-Size", "Nats-Batch-Sequence", "Nats-Batch-Commit", "Nats-Stream", "Nats-Sequence", "Nats-Msg-Id"), value: fc.constantFrom("1000", "0", "-1", "18446744073709551615", "", "garbage"), batch: fc.integer({ min: 0, max: 3 }) }),
);

describe("one hostile session among honest ones (a 4 KiB max_payload server)", () => {
  let server: NatsServer;
  beforeAll(async () => {
    // Below ENTRY_MAX_BYTES: an entry of many gates cannot be written at all here.
    server = await startServer({ configText: "max_payload: 4096" });
  });
  afterAll(() => server.close());

  it("costs that session alone: it is marked or true, honest sessions are a full fold's, the checkpoints move on, and a rebuild says which session it could not write", { timeout: 300_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(hostileKind, fc.integer({ min: 2, max: 5 }), fc.nat(3), async (hostile, honestCount, place) => {
        const bus = await connect({ servers: server.url, namespace: uniqueNamespace("cati") });
        try {
          await bus.provision();
          const honest = Array.from({ length: honestCount }, (_, k) => honestSession(k, k + place));
          const victim = newId();
          const first = [createEvent("SessionStarted", { sessionId: victim, createdAt: at(10) }), createEvent("TurnStarted", { sessionId: victim, loopId: newId(), turnId: newId(), createdAt: at(60), message: { role: "user", blocks: [{ type: "text", text: "hostile" }] } })];
          await bus.publishAll([...honest.slice(0, place).flat(), ...first]);
          await hostileRecords(bus, victim, hostile);
          await bus.publishAll(honest.slice(place).flat());
          const catalog = await openSessionCatalog(bus, { onReport: () => undefined });
          try {
            const t0 = Date.now();
            const got = await listed(catalog);
            const took = Date.now() - t0;
            const expected = await fullFold(bus);
            const honestIds = new Set(honest.map((h) => h[0]!.sessionId));
            expect(got.filter((r) => honestIds.has(r.session_id))).toEqual(expected.filter((r) => honestIds.has(r.session_id)));
            // The hostile session is listed: its true row, or marked (only when its entry could not be written).
            const row = got.find((r) => r.session_id === victim);
            if (hostile.kind === "unwritable") expect(row).toEqual({ session_id: victim, poisoned: "too_large" } satisfies Row);
            else expect(row).toEqual(expected.find((r) => r.session_id === victim));
            for (const c of await checkpoints(bus)) expect(c.checkpoint).toBe(c.end);
            // A session stored after it is read alone, and listed at once.
            const later = honestSession(9, 0);
            await bus.publishAll(later);
            expect((await catalog.catchUp()).read).toBe(later.length);
            expect((await listed(catalog)).map((r) => r.session_id)).toContain(later[0]!.sessionId);
            expect(took).toBeLessThan(30_000);
            // The operator's commands: the rebuild says which entry it could not write; the list shows it.
            const cli = ["--server", server.url, "--namespace", bus.namespace];
            const rebuilt = await jetloopIn(["catalog", "rebuild", ...cli]);
            if (hostile.kind === "unwritable") {
              expect(rebuilt.code).toBe(1);
              expect(rebuilt.stderr).toContain(victim);
            } else expect([rebuilt.code, rebuilt.stderr]).toEqual([0, ""]);
            // The gateway's list (Go's shape: a marked session by its id alone) answers and shows it.
            const gw = await startGateway(bus, { listen: "127.0.0.1:0" });
            try {
              const page = await request(`${gw.url}/v1/sessions?limit=1000`);
              expect(page.status).toBe(200);
              const ids = (JSON.parse(page.body) as { sessions: { session_id: string }[] }).sessions.map((r) => r.session_id);
              expect(ids).toContain(victim);
              for (const id of honestIds) expect(ids).toContain(id);
            } finally {
              await gw.close();
            }
            const sessions = await jetloopIn(["sessions", "--json", ...cli]);
            expect(sessions.code).toBe(0);
            const lines = sessions.stdout.trim().split("\n").map((l) => JSON.parse(l) as { session_id: string; poisoned?: { reason: string; journal_seq: number } });
            const shown = lines.find((l) => l.session_id === victim);
            expect(shown).toBeDefined();
            if (hostile.kind === "unwritable") expect(shown?.poisoned).toEqual({ reason: "too_large", journal_seq: expect.any(Number) as number });
            else expect(shown?.poisoned).toBeUndefined();
          } finally {
            await catalog.close();
          }
        } finally {
          await bus.close();
        }
      }),
      {
        numRuns: 12,
        seed: Number(process.env.JETLOOP_SEED ?? 3803),
        endOnFailure: true,
        // Each kind at least once whatever the seed: the measured forgery (a turn's first message on the victim claiming 1,000, its commit elsewhere), a poison record, an entry the server cannot hold.
        examples: [
          [{ kind: "forged", header: "Jetloop-Batch-Size", value: "1000", batch: 2 }, 3, 1],
          [{ kind: "poison", mutation: 0, count: 2 }, 2, 0],
          [{ kind: "unwritable", gates: 60 }, 2, 2],
        ],
      },
    );
  });
});

/** Stores the hostile session's records: what a journal publisher (a raw NATS connection) may store on it. */
async function hostileRecords(bus: Jetloop, victim: string, h: HostileCase): Promise<void> {
  const nc = bus.nc;
  const decided = (sessionId: string): JetloopEvent => createEvent("PermissionDecided", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), toolExecutionId: newId(), effect: "approve" });
  const subjectOf = (e: JetloopEvent) => eventSubject(bus.namespace, "journal", { ...e, family: defaultRegistry.get(e.type)!.family }, bus.journalOf(e.sessionId).shard);
  const store = (subject: string, data: Uint8Array, h?: ReturnType<typeof headers>) => nc.request(subject, data, { timeout: 5000, ...(h ? { headers: h } : {}) }).catch(() => undefined);
  switch (h.kind) {
    case "unwritable": {
      await bus.publishAll(gateFlood(h.gates, [0], "x", victim).slice(2));
      return;
    }
    case "poison":
      for (let i = 0; i < h.count; i++) {
        const e = decided(victim);
        const m = MUTATIONS[(h.mutation + i) % MUTATIONS.length]!;
        const bad = m.corrupt({ ns: bus.namespace, channel: "journal", coords: { sessionId: victim, loopId: e.loopId!, turnId: newId(), stepId: newId() }, event: e, data: encodeEvent(e), capBytes: 2048, int: (n) => (i * 7) % Math.max(1, n) });
        await store(bad.subject ?? subjectOf(e), bad.data);
        await bus.publish(decided(victim));
      }
      return;
    case "forged": {
      const events = Array.from({ length: h.batch || 1 }, (_, i) => decided(h.batch > 0 && i === h.batch - 1 ? newId() : victim));
      const id = newId().replaceAll("-", "").slice(0, 22);
      for (const [i, e] of events.entries()) {
        const hd = headers();
        if (h.batch > 0) {
          hd.set("Nats-Batch-Id", id);
          hd.set("Nats-Batch-Sequence", String(i + 1));
          if (i === h.batch - 1) hd.set("Nats-Batch-Commit", "1");
        }
        if (i === 0) hd.set(h.header, h.value);
        if (h.batch > 0 && i < h.batch - 1) nc.publish(subjectOf(e), encodeEvent(e), { headers: hd });
        else await store(subjectOf(e), encodeEvent(e), hd);
      }
      await bus.publish(decided(victim));
      return;
    }
  }
}

type HostileCase =
  | { kind: "unwritable"; gates: number }
  | { kind: "poison"; mutation: number; count: number }
  | { kind: "forged"; header: string; value: string; batch: number };
