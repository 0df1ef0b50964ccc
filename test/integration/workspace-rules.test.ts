// "Approve always for this workspace" on a real nats-server, from the Go runtime's rule:
// the answer persists the candidates the gate displayed (its unmet requirements') as
// workspace rules in the namespace's KV bucket before the approval is journaled; a later
// request whose every requirement a rule covers (kind and match equal, nothing looser) is
// approved without a gate, journaled as one PermissionDecided `access_evaluated`; a request
// partly covered asks for the rest only. Generated over rule sets and requests; a value
// forged under a rule's key covers nothing; a write that fails journals nothing and leaves
// the gate open; a removed rule asks again.
import fc from "fast-check";
import { Kvm } from "@nats-io/kv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type GateServer, type Jetloop, type JetloopEvent, newId, type PermissionRequirement, ruleId } from "../../src/index.js";
import { natsServers, natsUrl, uniqueNamespace } from "../harness/context.js";
import { jetloopIn } from "../harness/cli.js";
import { settledWithin, waitFor } from "../harness/async.js";

let bus: Jetloop;
let gates: GateServer;
const sid = newId();
const loopId = newId();
const turnId = newId();
const stepId = newId();

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("wr") });
  await bus.provision();
  gates = await bus.serveGates(sid, loopId);
});
afterAll(async () => {
  await gates.close();
  await bus.close();
});

/** Every event of the session about one tool execution, in journal order. */
async function eventsOf(toolExecutionId: string): Promise<JetloopEvent[]> {
  const out: JetloopEvent[] = [];
  for await (const { event: e } of bus.session(sid).replay({ enduring: "all" })) {
    const about = "toolExecutionId" in e ? e.toolExecutionId : e.type === "GateOpened" ? e.gate?.subject?.toolExecutionId : e.type === "GateResolved" ? e.cause?.toolExecutionId : undefined;
    if (about === toolExecutionId) out.push(e);
  }
  return out;
}

/** The PermissionRequested of `toolExecutionId`, once journaled (its gate is then open). */
function requested(toolExecutionId: string) {
  return waitFor("the request to be journaled", async () => {
    const e = (await eventsOf(toolExecutionId)).find((x) => x.type === "PermissionRequested");
    return e?.type === "PermissionRequested" ? e : false;
  }, 10_000, 50);
}

const requirement = (kind: string, match: string): PermissionRequirement => ({ kind, match, description: `${kind} ${match}`, candidates: [{ kind, match, description: "exactly this" }] });

const answer = (toolExecutionId: string, action: string) => bus.session(sid).answer(loopId, { kind: "permission", toolExecutionId, action });

describe("workspace rules", () => {
  it("property: a request is approved without a gate exactly when rules cover every requirement; else the gate displays the rest", async () => {
    const KINDS = ["fs.write", "fs.read"];
    const runs = fc.sample(
      fc.record({
        pool: fc.uniqueArray(fc.tuple(fc.constantFrom(...KINDS), fc.constantFrom("a", "b", "c", "d")), { minLength: 1, maxLength: 5, selector: ([k, m]) => `${k} ${m}` }),
        ruled: fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
        asked: fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
      }),
      { numRuns: 10, seed: 3806 },
    );
    for (const [n, run] of runs.entries()) {
      // Each run its own matches: one run's rules cover no other run's request.
      const reqs = run.pool.map(([k, m]) => requirement(k, `/run${n}/${m}`));
      const ruled = reqs.filter((_, i) => run.ruled[i]);
      const asked = reqs.filter((_, i) => run.asked[i] || i === 0);
      if (ruled.length > 0) {
        // Rules written the one way they are: an "always" answer to a gate displaying them.
        const first = newId();
        const d = gates.requestPermission({ turnId, stepId, toolExecutionId: first, request: { toolName: "edit", requirements: ruled } });
        await requested(first);
        await answer(first, "Approve always for this workspace");
        expect((await d).action).toBe("Approve always for this workspace");
      }
      const covered = (r: PermissionRequirement) => ruled.some((x) => x.kind === r.kind && x.match === r.match);
      const toolExecutionId = newId();
      const decision = gates.requestPermission({ turnId, stepId, toolExecutionId, request: { toolName: "edit", summary: `run ${n}`, requirements: asked } });
      if (asked.every(covered)) {
        const d = await settledWithin("a covered request's decision", decision, 10_000);
        expect(d, JSON.stringify(run)).toMatchObject({ effect: "approve", byRule: true, answered: false, gateId: undefined });
        const events = await eventsOf(toolExecutionId);
        expect(events.map((e) => e.type)).toEqual(["PermissionDecided"]);
        expect(events[0]).toMatchObject({ effect: "approve", reason: "access_evaluated", subject: "edit", audit: `run ${n}` });
      } else {
        const e = await requested(toolExecutionId);
        expect(e.request.requirements?.map((r) => r.match), JSON.stringify(run)).toEqual(asked.filter((r) => !covered(r)).map((r) => r.match));
        await answer(toolExecutionId, "Deny");
        expect((await decision).byRule).toBe(false);
      }
    }
  });

  it("lists what 'always' persisted, with the gate that wrote it; a removed rule asks again", async () => {
    const r = requirement("fs.write", `/list/${newId()}`);
    const first = newId();
    const d = gates.requestPermission({ turnId, stepId, toolExecutionId: first, request: { toolName: "edit", requirements: [r] } });
    const opened = await requested(first);
    await answer(first, "Approve always for this workspace");
    const { gateId } = await d;
    expect(opened).toBeDefined();
    const { rules } = await bus.rules.list();
    const mine = rules.find((x) => x.match === r.match);
    expect(mine).toMatchObject({ id: ruleId(r.kind, r.match), kind: r.kind, match: r.match, description: "exactly this", sessionId: sid, loopId, gateId });
    expect(await bus.rules.remove(mine!.id)).toBe(true);
    expect(await bus.rules.remove(mine!.id)).toBe(false);
    const again = newId();
    const asked = gates.requestPermission({ turnId, stepId, toolExecutionId: again, request: { toolName: "edit", requirements: [r] } });
    await requested(again);
    await answer(again, "Deny");
    expect((await asked).byRule).toBe(false);
  });

  it("jetloop rules lists them and removes one by its id", async () => {
    const r = requirement("fs.write", `/cli/${newId()}`);
    const t = newId();
    const d = gates.requestPermission({ turnId, stepId, toolExecutionId: t, request: { toolName: "edit", requirements: [r] } });
    await requested(t);
    await answer(t, "Approve always for this workspace");
    const { gateId } = await d;
    const base = ["--server", natsUrl(), "--namespace", bus.namespace];
    const list = await jetloopIn(["rules", "list", ...base, "--json"]);
    expect(list.code).toBe(0);
    const rows = list.stdout.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    const id = ruleId(r.kind, r.match);
    expect(rows.find((x) => x.id === id)).toEqual({ id, kind: r.kind, match: r.match, description: "exactly this", approved_at: expect.any(String) as string, session_id: sid, loop_id: loopId, gate_id: gateId });
    const human = await jetloopIn(["rules", "list", ...base]);
    expect(human.stdout).toContain(`${id} `);
    expect((await jetloopIn(["rules", "remove", id, ...base])).code).toBe(0);
    expect(await bus.rules.covers([r])).toEqual([false]);
    const gone = await jetloopIn(["rules", "remove", id, ...base]);
    expect([gone.code, gone.stderr]).toEqual([1, expect.stringContaining(`no rule ${id}`) as string]);
    expect((await jetloopIn(["rules", "remove", "zzz", ...base])).code).toBe(2);
    expect((await jetloopIn(["rules", "drop", ...base])).code).toBe(2);
  });

  it("a value forged under a rule's key (another match, or not a rule) covers nothing", async () => {
    const kv = await new Kvm(bus.nc).create(bus.rules.bucket, { history: 1 });
    const target = requirement("fs.write", `/forged/${newId()}`);
    const junk = requirement("fs.write", `/forged/${newId()}`);
    await kv.put(ruleId(target.kind, target.match), JSON.stringify({ kind: "fs.write", match: "/elsewhere", approved_at: "x", session_id: sid, loop_id: loopId, gate_id: newId() }));
    await kv.put(ruleId(junk.kind, junk.match), "not a rule");
    for (const r of [target, junk]) {
      const t = newId();
      const d = gates.requestPermission({ turnId, stepId, toolExecutionId: t, request: { toolName: "edit", requirements: [r] } });
      await requested(t);
      await answer(t, "Deny");
      expect((await d).byRule).toBe(false);
    }
  });

  it("persists before journaling: a rules write that fails journals nothing, and the gate stays open for another answer", async () => {
    const other = await connect({ servers: natsServers(), namespace: uniqueNamespace("wrs") });
    try {
      await other.provision();
      const og = await other.serveGates(sid, loopId);
      try {
        // The bucket exists but takes no write (sealed): the "always" answer cannot persist.
        await new Kvm(other.nc).create(other.rules.bucket, { history: 1 });
        const jsm = await other.jetstreamManager();
        const info = await jsm.streams.info(`KV_${other.rules.bucket}`);
        // A sealed stream refuses every write; NATS.js's update type leaves the field out.
        await jsm.streams.update(info.config.name, { ...info.config, sealed: true } as Parameters<typeof jsm.streams.update>[1]);
        const t = newId();
        const r = requirement("fs.write", `/sealed/${newId()}`);
        const d = og.requestPermission({ turnId, stepId, toolExecutionId: t, request: { toolName: "edit", requirements: [r] } });
        const seen = async () => {
          const types: string[] = [];
          for await (const { event: e } of other.session(sid).replay({ enduring: "all" })) if ("toolExecutionId" in e && e.toolExecutionId === t) types.push(e.type);
          return types;
        };
        await waitFor("the request", async () => ((await seen()).includes("PermissionRequested") ? true : false), 10_000, 50);
        const failed = await other.session(sid).answer(loopId, { kind: "permission", toolExecutionId: t, action: "Approve always for this workspace" }).then(
          () => "taken",
          (e: unknown) => (e as { code?: string }).code,
        );
        expect(failed).toBe("COMMAND_FAILED");
        // Nothing was journaled for the failed answer; the same gate takes "Approve".
        expect(await seen()).toEqual(["PermissionRequested"]);
        await other.session(sid).answer(loopId, { kind: "permission", toolExecutionId: t, action: "Approve" });
        expect(await d).toMatchObject({ action: "Approve", answered: true, byRule: false });
        expect(await seen()).toEqual(["PermissionRequested", "PermissionDecided"]);
      } finally {
        await og.close();
      }
    } finally {
      await other.close();
    }
  });

  it("a namespace whose bucket was never written has no rules: nothing covered, nothing listed, nothing to remove", async () => {
    const fresh = await connect({ servers: natsServers(), namespace: uniqueNamespace("wrf") });
    try {
      expect(await fresh.rules.covers([{ kind: "fs.write", match: "/x" }])).toEqual([false]);
      expect(await fresh.rules.list()).toEqual({ rules: [], more: false });
      expect(await fresh.rules.remove(ruleId("fs.write", "/x"))).toBe(false);
    } finally {
      await fresh.close();
    }
  });

  it("refuses a batch with a candidate lacking a kind or a match whole: nothing persisted", async () => {
    const good = { kind: "fs.write", match: `/batch/${newId()}` };
    await expect(bus.rules.write([good, { kind: "fs.write", match: "" }], { sessionId: sid, loopId, gateId: newId() })).rejects.toMatchObject({ code: "COMMAND_FAILED" });
    expect(await bus.rules.covers([good])).toEqual([false]);
    await expect(bus.rules.remove("not-an-id")).rejects.toMatchObject({ code: "COMMAND_INVALID" });
  });
});
