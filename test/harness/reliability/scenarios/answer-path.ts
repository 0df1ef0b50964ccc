// Scenario 12: the answer path under pressure. On the suite's server: raced answers from
// two connections, repeats of one command id in flight, timeouts racing answers, an
// answer too large to journal, close() with requests pending (and bus.close()), a forged
// GateResolved from another loop, and a loop actor killed with SIGKILL with its gate open,
// closed by its successor. Counted from what each answerer was told, what the loop got,
// and what the journal holds (read back through replay).
import { connect, createEvent, isJetloopError, type Jetloop, type JetloopEvent, newId, ToolActivityProjection } from "../../../../src/index.js";
import type { GateServer } from "../../../../src/index.js";
import { natsServers } from "../../context.js";
import { sleep, waitFor } from "../../async.js";
import { killAll, startChild } from "../child-process.js";
import { row, type ScenarioRecord } from "../figures.js";
import { record, scenarioNamespace, type ScenarioContext } from "./common.js";

const request = { toolName: "bash", summary: "list files", requirements: [{ kind: "fs.read", match: "/tmp/*", description: "read /tmp" }] };
const coords = () => ({ turnId: newId(), stepId: newId(), toolExecutionId: newId() });
/** Generous on a loaded machine: a reply that is late is not what this scenario measures. */
const SLOW = { timeoutMs: 20_000 };
const OPEN_WAIT_MS = 20_000;

export interface AnswerPathOptions {
  readonly gates: number;
  readonly retries: number;
}

/** What one part of the scenario counted: gates, outcomes told, and the journal's records. */
export interface Counted {
  readonly gates: number;
  /** Answers accepted (status ok, not a duplicate). */
  readonly accepted: number;
  /** Answers refused with GATE_RESOLVED. */
  readonly resolvedRefusals: number;
  /** Any other refusal or failure, by code. */
  readonly other: Record<string, number>;
  readonly gateResolved: number;
  readonly permissionDecided: number;
  /** Gates whose loop decision differs from the journal's PermissionDecided. */
  readonly mismatched: number;
}

export interface AnswerPathResult {
  readonly record: ScenarioRecord;
  readonly raced: Counted;
  readonly timeouts: Counted;
  readonly retries: { readonly sent: number; readonly ok: number; readonly sameOutcome: number; readonly firsts: number; readonly gateResolved: number };
  readonly oversized: { readonly code: string; readonly journaledBefore: number; readonly timedOutAfterMs: number; readonly deadlineMs: number; readonly gateResolved: number; readonly permissionDecided: number };
  readonly close: { readonly pending: number; readonly settled: number; readonly typed: number; readonly journaled: number; readonly ownerClosed: number };
  readonly busClose: { readonly pending: number; readonly typed: number; readonly ownerClosed: number };
  readonly crossLoop: { readonly applied: boolean; readonly violations: number; readonly statusAfter: string; readonly actorStillAnswers: boolean };
  readonly orphan: { readonly killedAnswer: string; readonly closed: number; readonly reason: string | undefined; readonly statusAfterClose: string; readonly statusAfterReask: string };
}

type Tally = { accepted: number; resolvedRefusals: number; other: Record<string, number> };
const newTally = (): Tally => ({ accepted: 0, resolvedRefusals: 0, other: {} });

async function tallyAnswer(t: Tally, p: Promise<{ duplicate: boolean }>): Promise<void> {
  try {
    const o = await p;
    if (!o.duplicate) t.accepted++;
  } catch (e) {
    const code = isJetloopError(e) ? e.code : "untyped";
    if (code === "GATE_RESOLVED") t.resolvedRefusals++;
    else t.other[code] = (t.other[code] ?? 0) + 1;
  }
}

async function journalOf(bus: Jetloop, sessionId: string): Promise<JetloopEvent[]> {
  const out: JetloopEvent[] = [];
  for await (const d of bus.session(sessionId).replay({ enduring: "all" })) out.push(d.event);
  return out;
}

const count = (events: JetloopEvent[], type: string, pred: (e: JetloopEvent) => boolean = () => true) => events.filter((e) => e.type === type && pred(e)).length;

/** Resolves `opened(tool)` once the GateOpened guarding that tool execution is in the session's journal. */
async function gateWatcher(bus: Jetloop, sessionId: string) {
  const sub = await bus.session(sessionId).subscribeEvents({ enduring: "all", types: ["GateOpened"] }, { start: "all" });
  const seen = new Set<string>();
  const waiting = new Map<string, () => void>();
  void (async () => {
    for await (const d of sub) {
      const tool = d.event.type === "GateOpened" ? d.event.gate?.subject?.toolExecutionId : undefined;
      if (tool === undefined) continue;
      seen.add(tool);
      waiting.get(tool)?.();
    }
  })();
  return {
    opened: (tool: string) => (seen.has(tool) ? Promise.resolve() : new Promise<void>((r) => waiting.set(tool, r))),
    close: () => sub.close(),
  };
}

/** N gates, each answered at once by three answerers on two connections (approve, deny, approve), optionally racing a timeout. */
async function race(actor: Jetloop, other: Jetloop, n: number, timeoutMs: number | undefined): Promise<Counted> {
  const sessionId = newId();
  const loopId = newId();
  const gates = await actor.serveGates(sessionId, loopId);
  const watcher = await gateWatcher(actor, sessionId);
  const t = newTally();
  const decisions = new Map<string, string>();
  await Promise.all(
    Array.from({ length: n }, async () => {
      const c = coords();
      const decided = gates.requestPermission({ ...c, request, timeoutMs });
      await watcher.opened(c.toolExecutionId);
      // Racing the timeout: answer at a random point of the gate's time (the gate opened a little before it was seen).
      if (timeoutMs !== undefined) await sleep(Math.random() * timeoutMs);
      const answer = (bus: Jetloop, effect: "approve" | "deny") => bus.session(sessionId).answer(loopId, { kind: "permission", toolExecutionId: c.toolExecutionId, effect }, SLOW);
      await Promise.all([tallyAnswer(t, answer(actor, "approve")), tallyAnswer(t, answer(other, "deny")), tallyAnswer(t, answer(other, "approve"))]);
      decisions.set(c.toolExecutionId, (await decided).effect);
    }),
  );
  await gates.close();
  await watcher.close();
  const journal = await journalOf(actor, sessionId);
  let mismatched = 0;
  for (const [tool, effect] of decisions) {
    const d = journal.filter((e) => e.type === "PermissionDecided" && e.toolExecutionId === tool);
    if (d.length !== 1 || (d[0] as { effect?: string }).effect !== effect) mismatched++;
  }
  return {
    gates: n,
    ...t,
    gateResolved: count(journal, "GateResolved"),
    permissionDecided: count(journal, "PermissionDecided"),
    mismatched,
  };
}

export async function answerPathScenario(ctx: ScenarioContext, opts: AnswerPathOptions): Promise<AnswerPathResult> {
  const started = Date.now();
  const namespace = scenarioNamespace("ap");
  const servers = natsServers();
  // The actor's bus caps events at 4 KiB so that an answer's reason can outgrow it.
  const actor = await connect({ servers, namespace, maxEventBytes: 4096 });
  const other = await connect({ servers, namespace });
  await actor.provision();
  const children: ReturnType<typeof startChild>[] = [];
  try {
    const raced = await race(actor, other, opts.gates, undefined);
    const timeouts = await race(actor, other, opts.gates, 400);

    // Repeats of one command id, all in flight at once.
    const retrySession = newId();
    const retryLoop = newId();
    const retryGates = await actor.serveGates(retrySession, retryLoop);
    const rc = coords();
    const retried = retryGates.requestPermission({ ...rc, request });
    await waitFor("the gate to open", async () => (await actor.session(retrySession).replay({ enduring: "all", types: ["GateOpened"] }).next()).done === false, OPEN_WAIT_MS);
    const commandId = newId();
    const replies = await Promise.allSettled(
      Array.from({ length: opts.retries }, (_, i) => (i % 2 ? other : actor).session(retrySession).answer(retryLoop, { kind: "permission", toolExecutionId: rc.toolExecutionId, effect: "approve", commandId }, SLOW)),
    );
    await retried;
    const oks = replies.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    const first = oks.find((o) => !o.duplicate);
    const retries = {
      sent: opts.retries,
      ok: oks.length,
      sameOutcome: oks.filter((o) => first && o.journalSeq === first.journalSeq && o.gateId === first.gateId && o.action === first.action).length,
      firsts: oks.filter((o) => !o.duplicate).length,
      gateResolved: count(await journalOf(actor, retrySession), "GateResolved"),
    };
    await retryGates.close();

    // An answer whose decision would exceed the actor's cap: refused before anything is written; the timer still runs.
    const bigSession = newId();
    const bigLoop = newId();
    const bigGates = await actor.serveGates(bigSession, bigLoop);
    const bc = coords();
    const deadlineMs = 1500;
    const openedAt = Date.now();
    const bigDecision = bigGates.requestPermission({ ...bc, request, timeoutMs: deadlineMs });
    await waitFor("the gate to open", async () => (await actor.session(bigSession).replay({ enduring: "all", types: ["GateOpened"] }).next()).done === false, OPEN_WAIT_MS);
    let code = "accepted";
    try {
      await other.session(bigSession).answer(bigLoop, { kind: "permission", toolExecutionId: bc.toolExecutionId, effect: "deny", reason: "x".repeat(5000) }, SLOW);
    } catch (e) {
      code = isJetloopError(e) ? e.code : "untyped";
    }
    const journaledBefore = count(await journalOf(actor, bigSession), "GateResolved") + count(await journalOf(actor, bigSession), "PermissionDecided");
    const bigAnswer = await bigDecision;
    const bigJournal = await journalOf(actor, bigSession);
    const oversized = {
      code,
      journaledBefore,
      timedOutAfterMs: bigAnswer.answered ? -1 : Date.now() - openedAt,
      deadlineMs,
      gateResolved: count(bigJournal, "GateResolved"),
      permissionDecided: count(bigJournal, "PermissionDecided"),
    };
    await bigGates.close();

    // close() with requests pending: each settled, typed, and resolved owner_closed in the journal.
    const closeSession = newId();
    const closeLoop = newId();
    const closing = await actor.serveGates(closeSession, closeLoop);
    const pending = Array.from({ length: opts.gates }, (_, i) =>
      i % 2 ? closing.requestInput({ ...coords(), question: "Which branch?", choices: ["main", "dev"] }) : closing.requestPermission({ ...coords(), request }),
    );
    await waitFor("the gates to open", async () => {
      const j = await journalOf(actor, closeSession);
      return count(j, "GateOpened") === opts.gates;
    }, OPEN_WAIT_MS);
    const settling = Promise.allSettled(pending);
    await closing.close();
    const settledClose = await settling;
    const closeJournal = await journalOf(actor, closeSession);
    const close = {
      pending: opts.gates,
      settled: settledClose.length,
      typed: settledClose.filter((s) => s.status === "rejected" && isJetloopError(s.reason, "GATE_CLOSED")).length,
      journaled: settledClose.filter((s) => s.status === "rejected" && (s.reason as { journaled?: boolean }).journaled === true).length,
      ownerClosed: count(closeJournal, "GateResolved", (e) => (e as { reason?: string }).reason === "owner_closed"),
    };

    // bus.close() does the same for the gate servers of the bus.
    const ownBus = await connect({ servers, namespace });
    const busSession = newId();
    const busLoop = newId();
    const busGates = await ownBus.serveGates(busSession, busLoop);
    const busPending = Array.from({ length: 3 }, () => busGates.requestPermission({ ...coords(), request }));
    await waitFor("the gates to open", async () => count(await journalOf(actor, busSession), "GateOpened") === 3, OPEN_WAIT_MS);
    const busSettling = Promise.allSettled(busPending);
    await ownBus.close();
    const busSettled = await busSettling;
    const busClose = {
      pending: 3,
      typed: busSettled.filter((s) => s.status === "rejected" && isJetloopError(s.reason, "GATE_CLOSED")).length,
      ownerClosed: count(await journalOf(actor, busSession), "GateResolved", (e) => (e as { reason?: string }).reason === "owner_closed"),
    };

    // A GateResolved forged on another loop's subjects, naming loop 1's gate.
    const xSession = newId();
    const loop1 = newId();
    const loop2 = newId();
    const x1 = await actor.serveGates(xSession, loop1);
    const xc = coords();
    const xDecision = x1.requestPermission({ ...xc, request });
    await waitFor("the gate to open", async () => (await actor.session(xSession).replay({ enduring: "all", types: ["GateOpened"] }).next()).done === false, OPEN_WAIT_MS);
    const opened = (await journalOf(actor, xSession)).find((e) => e.type === "GateOpened") as Extract<JetloopEvent, { type: "GateOpened" }>;
    await other.publish(
      createEvent("GateResolved", { sessionId: xSession, loopId: loop2, turnId: xc.turnId, stepId: xc.stepId, gateId: opened.gate.id, resolver: "loop", reason: "answered", action: "Approve" }),
    );
    const projection = new ToolActivityProjection();
    let violations = 0;
    for await (const d of actor.session(xSession).replay({ enduring: "all" })) violations += projection.apply(d).violations?.length ?? 0;
    const statusAfter = projection.get(loop1, xc.toolExecutionId)?.status ?? "missing";
    const xOutcome = await other.session(xSession).answer(loop1, { kind: "permission", toolExecutionId: xc.toolExecutionId, effect: "deny" }, SLOW).catch(() => undefined);
    const crossLoop = { applied: statusAfter !== "awaiting_approval", violations, statusAfter, actorStillAnswers: xOutcome !== undefined && (await xDecision).effect === "deny" };
    await x1.close();

    // A loop actor killed with its gate open; its successor closes the orphan.
    const oSession = newId();
    const oLoop = newId();
    const oc = coords();
    const child = startChild("gate-actor-child.ts", {
      JETLOOP_SERVERS: servers.join(","),
      JETLOOP_NS: namespace,
      JETLOOP_SESSION: oSession,
      JETLOOP_LOOP: oLoop,
      JETLOOP_TURN: oc.turnId,
      JETLOOP_STEP: oc.stepId,
      JETLOOP_TOOL: oc.toolExecutionId,
    });
    children.push(child);
    await child.ready;
    child.child.kill("SIGKILL");
    await child.exited;
    // The server drops the dead client's interest once it sees the socket close; until then a request only times out.
    let killedAnswer = "accepted";
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        await other.session(oSession).answer(oLoop, { kind: "permission", toolExecutionId: oc.toolExecutionId, effect: "approve" }, { timeoutMs: 500 });
        killedAnswer = "accepted";
      } catch (e) {
        killedAnswer = isJetloopError(e) ? e.code : "untyped";
      }
      if (killedAnswer !== "COMMAND_FAILED") break;
    }
    const successor: GateServer = await actor.serveGates(oSession, oLoop, { closeOrphans: true });
    const statusOf = async () => (await new ToolActivityProjection().applyAll(actor.session(oSession).replay({ enduring: "all" }))).get(oLoop, oc.toolExecutionId);
    const afterClose = await statusOf();
    const reasked = successor.requestPermission({ ...oc, request });
    await waitFor("the new gate", async () => (await statusOf())?.permissionGate?.resolution === undefined && (await statusOf())?.status === "awaiting_approval", OPEN_WAIT_MS);
    await other.session(oSession).answer(oLoop, { kind: "permission", toolExecutionId: oc.toolExecutionId, effect: "approve" }, SLOW);
    await reasked;
    const orphan = {
      killedAnswer,
      closed: count(await journalOf(actor, oSession), "GateResolved", (e) => (e as { reason?: string }).reason === "abandoned"),
      reason: afterClose?.permissionGate?.resolution?.reason,
      statusAfterClose: afterClose?.status ?? "missing",
      statusAfterReask: (await statusOf())?.status ?? "missing",
    };
    await successor.close();

    const outcomes = (c: Counted) => ({ published: c.gates, delivered: c.accepted, lost: c.gates - c.accepted, duplicated: Math.max(0, c.accepted - c.gates) });
    const rows = [
      row("raced gates: accepted answers", outcomes(raced), { "GATE_RESOLVED to losers": raced.resolvedRefusals, GateResolved: raced.gateResolved, PermissionDecided: raced.permissionDecided, "loop ≠ journal": raced.mismatched }),
      row("timeouts racing answers: one outcome each", { published: timeouts.gates, delivered: timeouts.gateResolved, lost: timeouts.gates - timeouts.gateResolved, duplicated: 0 }, {
        "answers accepted": timeouts.accepted,
        "GATE_RESOLVED to losers": timeouts.resolvedRefusals,
        PermissionDecided: timeouts.permissionDecided,
        "loop ≠ journal": timeouts.mismatched,
      }),
      row("concurrent repeats of one command id", { published: retries.sent, delivered: retries.sameOutcome, lost: retries.sent - retries.sameOutcome, duplicated: 0 }, { "first outcomes": retries.firsts, GateResolved: retries.gateResolved }),
      row("close(): pending requests settled", { published: close.pending, delivered: close.typed, lost: close.pending - close.typed, duplicated: 0 }, { "owner_closed journaled": close.ownerClosed, "bus.close() settled": `${busClose.typed}/${busClose.pending}` }),
    ];
    const rec = record(ctx, "13-answer-path", "13. The answer path under pressure", actor.serverVersion, started, rows, {
      "oversized answer: code": oversized.code,
      "oversized answer: records journaled": oversized.journaledBefore,
      "oversized answer: timer fired after (ms)": oversized.timedOutAfterMs,
      "cross-loop GateResolved applied": crossLoop.applied,
      "cross-loop violations reported": crossLoop.violations,
      "killed actor: answer told": orphan.killedAnswer,
      "killed actor: orphans closed by successor": orphan.closed,
      "killed actor: status after re-ask and approve": orphan.statusAfterReask,
    });
    return { record: rec, raced, timeouts, retries, oversized, close, busClose, crossLoop, orphan };
  } finally {
    killAll(children.map((c) => c.child));
    await other.close();
    await actor.close();
  }
}
