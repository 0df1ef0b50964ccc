// One actor a loop, over generated start schedules: successors (closeOrphans) started on a
// fast link and on a slow one (a proxy holding what the client sends for SLOW_MS, below the
// stand-down's 250 ms wait, so every reply is in time). Whatever the order and timing,
// exactly one serves, the others stand down with COMMAND_FAILED, the dead actor's gate is
// closed once, and nothing of the ones that stood down is left on the loop's subject.
// The key that orders them must be taken once the subscription is on the server: a key taken
// before lets a slow successor sort first while a fast one, subscribed earlier, never saw it.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CommandError, connect, ConnectionClosedError, createEvent, type GateServer, type Jetloop, newId } from "../../src/index.js";
import { natsServers } from "../harness/context.js";
import { uniqueNamespace } from "../harness/namespace.js";
import { startProxy, type TcpProxy } from "../harness/proxy.js";
import { waitFor } from "../harness/async.js";

const SLOW_MS = 150;

let proxy: TcpProxy;
let fast: Jetloop;
let slow: Jetloop;
let observer: Jetloop;
let namespace: string;
beforeAll(async () => {
  namespace = uniqueNamespace();
  const target = new URL(natsServers()[0]!);
  proxy = await startProxy(Number(target.port), target.hostname, { upstreamDelayMs: SLOW_MS });
  [fast, slow, observer] = await Promise.all([
    connect({ servers: natsServers(), namespace }),
    connect({ servers: [proxy.url], namespace }),
    connect({ servers: natsServers(), namespace }),
  ]);
  await observer.provision();
});
afterAll(async () => {
  await Promise.all([fast, slow, observer].map((b) => b?.close()));
  await proxy?.close();
});

interface Start {
  readonly slow: boolean;
  readonly atMs: number;
}

const schedule = fc.array(fc.record({ slow: fc.boolean(), atMs: fc.integer({ min: 0, max: 3 * SLOW_MS }) }), { minLength: 2, maxLength: 4 });

/** Runs one schedule on a loop of its own with one orphan; returns what is wrong, or undefined. */
async function run(starts: readonly Start[]): Promise<string | undefined> {
  const sessionId = newId();
  const loopId = newId();
  const orphan = newId();
  await observer.publish(createEvent("GateOpened", { sessionId, loopId, turnId: newId(), stepId: newId(), gate: { id: orphan, kind: "harness.permission", resolver: "loop", subject: { toolExecutionId: newId() } } }));
  const settled = await Promise.allSettled(
    starts.map(async (s) => {
      await new Promise((r) => setTimeout(r, s.atMs));
      return (s.slow ? slow : fast).serveGates(sessionId, loopId, { closeOrphans: true });
    }),
  );
  const serving = settled.filter((x): x is PromiseFulfilledResult<GateServer> => x.status === "fulfilled").map((x) => x.value);
  const refused = settled.filter((x): x is PromiseRejectedResult => x.status === "rejected").map((x) => x.reason as unknown);
  try {
    if (serving.length !== 1) return `${serving.length} serve`;
    const odd = refused.find((e) => !(e instanceof CommandError && e.code === "COMMAND_FAILED"));
    if (odd !== undefined) return `refused with ${odd instanceof Error ? odd.message : JSON.stringify(odd)}`;
    if (serving[0]!.orphansClosed.join() !== orphan) return `the one serving closed [${serving[0]!.orphansClosed.join()}]`;
    let resolutions = 0;
    for await (const d of observer.session(sessionId).replay({ enduring: "all", types: ["GateResolved"] })) if (d.event.type === "GateResolved") resolutions++;
    if (resolutions !== 1) return `${resolutions} GateResolved for the orphan`;
  } finally {
    await Promise.all(serving.map((g) => g.close()));
  }
  // Nothing of the ones that stood down answers any more: a plain actor starts.
  try {
    await (await fast.serveGates(sessionId, loopId)).close();
  } catch (e) {
    return `an actor after them all is refused: ${(e as Error).message}`;
  }
  return undefined;
}

describe("one gate actor a loop, over generated start schedules on a fast and a slow link", () => {
  it("exactly one successor serves, whatever the links and the start times", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(schedule, { minLength: 4, maxLength: 4 }), async (batch) => {
        // The schedules of a batch run at once, each on its own loop.
        const problems = await Promise.all(batch.map(run));
        const wrong = problems.map((p, i) => (p === undefined ? undefined : `${JSON.stringify(batch[i])}: ${p}`)).filter((p) => p !== undefined);
        expect(wrong).toEqual([]);
      }),
      {
        numRuns: 2,
        // The slow successor starts first; the fast one after the slow one's key was taken
        // but before its subscription reached the server.
        examples: [[Array.from({ length: 4 }, () => [{ slow: true, atMs: 0 }, { slow: false, atMs: Math.round(SLOW_MS * 1.3) }])]],
      },
    );
  }, 60_000);
});

describe("a bus closed while its gate server starts", () => {
  it("rejects serveGates with CONNECTION_CLOSED at every point of the start (the probe, the stand-down, the orphans), never hands out a closed server", async () => {
    // 0 ms: during the first probe; up to 250 ms: the stand-down's wait; later: closing orphans or started.
    for (const closeAfterMs of [0, 2, 20, 120, 240, 255, 262, 270, 285]) {
      const sessionId = newId();
      const loopId = newId();
      await observer.publish(createEvent("GateOpened", { sessionId, loopId, turnId: newId(), stepId: newId(), gate: { id: newId(), kind: "harness.permission", resolver: "loop", subject: { toolExecutionId: newId() } } }));
      const bus = await connect({ servers: natsServers(), namespace });
      const starting = bus.serveGates(sessionId, loopId, { closeOrphans: true }).then(
        (g) => g,
        (e: unknown) => e,
      );
      await new Promise((r) => setTimeout(r, closeAfterMs));
      await bus.close();
      const got = await starting;
      if (got instanceof Error) expect(got, `closed after ${closeAfterMs} ms: ${got.message}`).toBeInstanceOf(ConnectionClosedError);
      // Handed out before the close: closed with the bus.
      else await expect((got as GateServer).requestInput({ turnId: newId(), stepId: newId(), toolExecutionId: newId(), question: "q" })).rejects.toBeInstanceOf(ConnectionClosedError);
    }
  });
});

describe("an actor whose connection was down", () => {
  // While it is down a successor finds no actor, closes its gates as abandoned and serves;
  // NATS.js subscribes the first again when it reconnects. It must not answer then: an answer
  // it applied while the successor replied GATE_UNKNOWN would be two GateResolved for one gate.
  let link: TcpProxy;
  let actor: Jetloop;
  beforeAll(async () => {
    const target = new URL(natsServers()[0]!);
    link = await startProxy(Number(target.port), target.hostname);
    actor = await connect({ servers: [link.url], namespace });
  });
  afterAll(async () => {
    await actor?.close();
    await link?.close();
  });
  const request = { toolName: "bash", summary: "list files" };

  it("stops once reconnected if a successor serves: its pending gate fails closed, one GateResolved, the answer is the successor's", async () => {
    const sessionId = newId();
    const loopId = newId();
    const toolExecutionId = newId();
    const gates = await actor.serveGates(sessionId, loopId);
    const decision = gates.requestPermission({ turnId: newId(), stepId: newId(), toolExecutionId, request }).then(
      (d) => d,
      (e: unknown) => e,
    );
    await until(async () => (await resolutions(sessionId, "GateOpened")).length === 1);
    link.down();
    // Once the server has dropped the first's connection, nobody answers: a successor starts.
    await until(() =>
      observer
        .session(sessionId)
        .answer(loopId, { kind: "permission", toolExecutionId: newId(), effect: "approve" }, { timeoutMs: 200 })
        .then(
          () => false,
          (e: unknown) => e instanceof CommandError && e.code === "COMMAND_NO_LISTENER",
        ),
    );
    const successor = await fast.serveGates(sessionId, loopId, { closeOrphans: true });
    expect(successor.orphansClosed).toHaveLength(1);
    link.up();
    const failed = await decision; // settles once the first has reconnected and found the successor
    expect(failed).toBeInstanceOf(CommandError);
    expect((failed as CommandError).code).toBe("COMMAND_FAILED");
    await expect(observer.session(sessionId).answer(loopId, { kind: "permission", toolExecutionId, effect: "approve" })).rejects.toMatchObject({ code: "GATE_UNKNOWN" });
    expect(await resolutions(sessionId, "GateResolved")).toEqual(["abandoned"]);
    expect(await resolutions(sessionId, "PermissionDecided")).toEqual([]);
    await successor.close();
  }, 15_000);

  it("serves again once reconnected if no other actor answers: an answer retried until then is applied once", async () => {
    const sessionId = newId();
    const loopId = newId();
    const toolExecutionId = newId();
    const gates = await actor.serveGates(sessionId, loopId);
    const commandId = newId();
    const decision = gates.requestPermission({ turnId: newId(), stepId: newId(), toolExecutionId, request });
    decision.catch(() => undefined);
    await until(async () => (await resolutions(sessionId, "GateOpened")).length === 1);
    link.cut();
    let outcome: unknown;
    await until(async () => {
      outcome = await observer
        .session(sessionId)
        .answer(loopId, { kind: "permission", toolExecutionId, effect: "approve", commandId }, { timeoutMs: 500 })
        .catch((e: unknown) => (e instanceof CommandError && (e.code === "COMMAND_NO_LISTENER" || e.code === "COMMAND_FAILED") ? undefined : e));
      return outcome !== undefined;
    });
    expect(outcome).toMatchObject({ status: "ok" });
    expect((await decision).effect).toBe("approve");
    expect(await resolutions(sessionId, "GateResolved")).toEqual(["answered"]);
    await gates.close();
  }, 15_000);
});

/** The reasons of the session's events of `type` in the journal (GateResolved: reason; others: the type). */
async function resolutions(sessionId: string, type: "GateOpened" | "GateResolved" | "PermissionDecided"): Promise<string[]> {
  const got: string[] = [];
  for await (const d of observer.session(sessionId).replay({ enduring: "all", types: [type] })) got.push(d.event.type === "GateResolved" ? String(d.event.reason) : d.event.type);
  return got;
}

/** Polls the journal (the harness's waitFor) until `check` holds. */
async function until(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  await waitFor("the journal state awaited", async () => (await check()) || false, ms, 50);
}
