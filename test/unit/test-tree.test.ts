// The suite proves what it says: no test body that reaches no assertion, no `return` before
// a test's first assertion, no clock as a seed, and waits by the clock or by silence only
// where the allow-list below says why (test-tree.ts reads the test files). The checker's own
// rules are tested first, on small texts, so that each can fail.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type FileCounts, TestTree, testFiles } from "./test-tree.js";

const ROOT = join(import.meta.dirname, "../..");

/**
 * Why a file may still wait by the clock (`sleep(`, `setTimeout`) or take silence as proof
 * (`.extra(`): the exact counts, so a removed wait shrinks its entry and a new one needs one.
 * The kinds of reason:
 * - pace: a handler's simulated work or a generated schedule's pacing, part of the input;
 * - moment: a fault or a call put at a generated or chosen moment (the moment is the input);
 * - bound: a timer racing an event, failing (or reporting) when it wins: a bound, not a wait;
 * - elapse: the rule is about time passing (a lease, an ack wait, a dedup window, a CPU rate).
 */
const ALLOWED: Readonly<Record<string, FileCounts & { why: string }>> = {
  "test/integration/adv-sharded-start.test.ts": { waits: 2, silences: 0, why: "moment: generated delays between starts and publishes" },
  "test/integration/adv-shards-group.test.ts": { waits: 1, silences: 0, why: "pace: random handler work" },
  "test/integration/adv-shards-update-filter.test.ts": { waits: 1, silences: 0, why: "moment: generated gaps between filter updates" },
  "test/integration/adversary-edges-3.test.ts": { waits: 1, silences: 0, why: "bound: a delivery up to a known sequence raced by 20 s" },
  "test/integration/adversary-edges-4.test.ts": { waits: 3, silences: 0, why: "pace: a busy session writing every 100 ms (1); moment: viewers started before the honest reads are timed (1), a session started inside a rebuild slowed by a 200 ms link (1)" },
  "test/integration/attach-http.test.ts": { waits: 2, silences: 0, why: "moment: an answer put at chosen delays around the runtime's gate timeout (1); elapse: a stopped runtime's /events reconnects counted over 1.5 s of backoff (1)" },
  "test/integration/attach-kill.test.ts": { waits: 4, silences: 0, why: "bound: a poll for the journal's count (1); pace: the Go writer yields every fifth write (1); elapse: the duplicate window runs out before the restart (1); moment: after the count is reached, a second append of anything would show (1)" },
  "test/integration/attach-lease.test.ts": { waits: 7, silences: 0, why: "bound: a poll for a role, a count or the journal (1); pace: the Go writers yield between writes (2); elapse: a lease time of renewals passes with the standby still standing by (1), three tries of a refused lease pass with one report (1); moment: after the count is reached, a second append of anything would show (2)" },
  "test/integration/attach-permissions.test.ts": { waits: 2, silences: 0, why: "bound: a poll for the attach's first catalog read (1); moment: refused writes answered, the Go side read after (1)" },
  "test/integration/append-order-adversary.test.ts": { waits: 13, silences: 0, why: "pace: the generated call pacing (1); moment: cuts, pauses and restarts put between appends in flight (12)" },
  "test/integration/append-order-cut.test.ts": { waits: 4, silences: 0, why: "pace: yielding every chunk of a burst (1); moment: a cut or a pause while appends are in flight (3)" },
  "test/integration/atomic-batch.test.ts": { waits: 3, silences: 0, why: "moment: a cut or a stop inside a batch's commit at a chosen or generated delay" },
  "test/integration/backpressure.test.ts": { waits: 3, silences: 0, why: "bound: a read raced by 10 s (1); pace: a slow consumer (2)" },
  "test/integration/bench-cpu-budget.test.ts": { waits: 2, silences: 0, why: "elapse: a CPU rate is measured over a window of time" },
  "test/integration/filter-change-turns.test.ts": { waits: 2, silences: 0, why: "moment: a filter change at a generated delay into a turn's commit (1); bound: the sentinel raced by 30 s (1)" },
  "test/integration/durable-turns.test.ts": {
    waits: 3,
    silences: 0,
    why: "bound: the quiet timer of a read (1); moment: generated start delays (1); elapse: a raw fetch's ack wait must lapse so that its two come again redelivered (1)",
  },
  "test/integration/exactly-once.test.ts": { waits: 3, silences: 0, why: "elapse: the server's duplicate window must pass (1); the server's stored times must differ either side of a `since` (2)" },
  "test/integration/gate-actor-race.test.ts": { waits: 2, silences: 0, why: "moment: a close or a step at a generated time in the actor's start" },
  "test/integration/gate-opening-race.test.ts": { waits: 1, silences: 0, why: "moment: an answer a few ms into a gate's opening" },
  "test/integration/gateway/header-flood.test.ts": { waits: 1, silences: 0, why: "pace: the gateway's memory sampled every 100 ms for the flood's 4 s (a measurement, not a synchronisation)" },
  "test/integration/gateway/limits.test.ts": { waits: 2, silences: 0, why: "bound: a trickled request's cut raced by 4 s" },
  "test/integration/group-adversary.test.ts": { waits: 2, silences: 0, why: "pace: random handler work (1); bound: a member's end raced by 10 s (1)" },
  "test/integration/group-lapsed-settle.test.ts": { waits: 10, silences: 0, why: "elapse: leases and ack waits must lapse, the rule under test (9); pace: random handler work (1)" },
  "test/integration/group-tools.test.ts": { waits: 2, silences: 0, why: "pace: random handler work (1); elapse: past 2/3 of the ack wait (1)" },
  "test/integration/group.test.ts": { waits: 1, silences: 0, why: "pace: random handler work, so that a second delivery of a session could overlap" },
  "test/integration/orphans-concurrent.test.ts": { waits: 1, silences: 0, why: "moment: generated offsets between concurrent actors' starts" },
  "test/integration/parking.test.ts": {
    waits: 2,
    silences: 1,
    why: "pace: a little work per delivery (1); elapse: a replay held for four ack waits before the server's count shows it never handed again (1); bound: a worker's read loop polling with a 100 ms timeout until told to stop, not a proof (1)",
  },
  "test/integration/policy-adversary.test.ts": { waits: 4, silences: 0, why: "bound: a close raced by 5 s (2); pace: random and fixed decision work (2)" },
  "test/integration/policy-service.test.ts": { waits: 1, silences: 0, why: "pace: a generated decision delay" },
  "test/integration/policy-slots-adversary.test.ts": { waits: 2, silences: 0, why: "pace: decisions that outlast their ack wait, the input of the case (300 ms each behind one slot, 400 ms leases; 800 ms against a 200 ms ack wait)" },
  "test/integration/read-consumers.test.ts": { waits: 1, silences: 0, why: "moment: another process frees the name 700 ms into the read's wait for it" },
  "test/integration/read-placement-adversary.test.ts": { waits: 1, silences: 0, why: "moment: a paused leader resumed after 8 s" },
  "test/integration/reliability/forged-headers.test.ts": { waits: 1, silences: 0, why: "pace: another session writes every 50 ms so the stream grows without reaching a forged claim (a load, not a synchronisation)" },
  "test/integration/subscribe-durable.test.ts": {
    waits: 2,
    silences: 3,
    why: "pace: a little work so both members get a share (1); elapse: a delivery held for four ack waits before the server's count shows it never redelivered (1); the claim is about when: not before a nak's delay, not before the ack wait, redeliveries watched over 2.3 s (3)",
  },
  "test/integration/subscribe-live-feed.test.ts": { waits: 2, silences: 0, why: "pace: viewers opened 5 ms apart, and appends kept going 200 ms after the last opened, while they hand over (2)" },
  "test/integration/subscribe-ordered.test.ts": {
    waits: 5,
    silences: 0,
    why: "pace: a slow reader (2); bound: a read raced by 60 s (1); elapse: the server's stored times must differ either side of a `time` start (2)",
  },
  "test/integration/telemetry-metrics.test.ts": { waits: 1, silences: 0, why: "bound: the gateway's start raced by 30 s" },
  "test/integration/turn-forgery.test.ts": { waits: 1, silences: 0, why: "bound: a read closed after 3 s if it hangs" },
  "test/integration/turn-moments.test.ts": { waits: 1, silences: 0, why: "moment: a reader started at a generated delay" },
  "test/integration/whole-turns.test.ts": { waits: 1, silences: 0, why: "moment: readers started at generated delays" },
  "test/unit/sharded-source.test.ts": { waits: 4, silences: 0, why: "moment: macrotask turns (setTimeout 0) that order the source's pulls, the input of the case" },
};

describe("the checker's rules, each on a text that breaks it", () => {
  const F = "/virtual/x.test.ts";
  const check = (text: string, extra: Record<string, string> = {}) => {
    const tree = new TestTree(new Map([[F, text], ...Object.entries(extra)]));
    return { findings: tree.findings(F, "/virtual").map((f) => `${f.kind}:${f.line}`), counts: tree.counts(F) };
  };

  it("a test body with no assertion, here or in a helper, is found; one through a helper of the file or an import is not", () => {
    expect(check(`it("a", async () => { await work(); });`).findings).toEqual(["no-assertion:1"]);
    expect(check(`function h() { expect(1).toBe(1); }\nit("a", () => { h(); });`).findings).toEqual([]);
    expect(check(`import { h } from "./h.js";\nit("a", () => { h(); });`, { "/virtual/h.ts": "export function h() { expect(1).toBe(1); }" }).findings).toEqual([]);
    expect(check(`import { h } from "./h.js";\nit("a", () => { h(); });`, { "/virtual/h.ts": "export function h() { return 1; }" }).findings).toEqual(["no-assertion:2"]);
    expect(check(`it.each([1])("a %i", (n) => { fc.assert(fc.property(fc.nat(), () => true)); });`).findings).toEqual([]);
    expect(check(`it.skipIf(x)("a", () => { if (y) throw new Error("no"); });`).findings).toEqual([]);
  });

  it("a return before the first assertion is found, after one it is not", () => {
    expect(check(`it("a", () => {\n  if (c) return;\n  expect(1).toBe(1);\n});`).findings).toEqual(["return-before-assertion:2"]);
    expect(check(`it.each(["(none)"])("a", (c) => {\n  if (c === "(none)") return;\n  expect(c).toBe(c);\n});`).findings).toEqual(["return-before-assertion:2"]);
    expect(check(`it("a", () => {\n  expect(1).toBe(1);\n  if (c) return;\n});`).findings).toEqual([]);
    // A return inside a callback of the body is the callback's.
    expect(check(`it("a", () => {\n  const f = () => { return 1; };\n  expect(f()).toBe(1);\n});`).findings).toEqual([]);
  });

  it("the clock as a seed is found", () => {
    expect(check(`fc.sample(a, { numRuns: 1, seed: Date.now() % 2 ** 31 });\nit("a", () => expect(1).toBe(1));`).findings).toEqual(["clock-seed:1"]);
    expect(check(`const seed = Math.random();\nit("a", () => expect(1).toBe(1));`).findings).toEqual(["clock-seed:1"]);
    expect(check(`fc.sample(a, { seed: 42 });\nit("a", () => expect(1).toBe(1));`).findings).toEqual([]);
  });

  it("waits by the clock and silences are counted", () => {
    const { counts } = check(`it("a", async () => {\n  await sleep(10);\n  await new Promise((r) => setTimeout(r, 5));\n  expect(await reader.extra(200)).toBeUndefined();\n});`);
    expect(counts).toEqual({ waits: 2, silences: 1 });
  });
});

describe("the test tree", () => {
  const tree = new TestTree();
  const files = testFiles(join(ROOT, "test"));

  it("has no test that passes without an assertion, no return before one, no clock as a seed", () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files.flatMap((f) => tree.findings(f, ROOT))).toEqual([]);
    // Parsing some 150 files takes seconds of CPU; a loaded machine needs more.
  }, 60_000);

  it("waits by the clock and takes silence as proof only where the allow-list says why, exactly as often", () => {
    const counted: Record<string, FileCounts> = {};
    for (const f of files) {
      const c = tree.counts(f);
      if (c.waits > 0 || c.silences > 0) counted[f.slice(ROOT.length + 1)] = c;
    }
    const allowed = Object.fromEntries(Object.entries(ALLOWED).map(([f, { waits, silences }]) => [f, { waits, silences }]));
    expect(counted).toEqual(allowed);
    for (const [f, { why }] of Object.entries(ALLOWED)) expect(why.length, f).toBeGreaterThan(10);
  }, 60_000);
});
