/**
 * The simulated loop of `jetloop dev`: sessions that look like a runtime's, one started
 * every `everyMs` while fewer than `maxOpen` wait for an answer. Each runs a tool call,
 * asks permission for another (answered on the gateway's page, denied after five minutes
 * unanswered), every third also asks the user a question, then ends its turn and stops.
 * Nothing runs: tool outputs are made up.
 */
import type { Jetloop } from "../bus.js";
import { isJetloopError } from "../errors.js";
import { createEvent } from "../events/factories.js";
import { newId } from "../events/ids.js";

export interface SimulatedLoopOptions {
  readonly everyMs: number;
  readonly maxOpen: number;
  readonly signal: AbortSignal;
  /** One line per thing worth telling (a session opened, a gate answered). */
  readonly log: (line: string) => void;
}

const GATE_TIMEOUT_MS = 5 * 60_000;

const CALLS = [
  { toolName: "bash", summary: "npm test", match: "./**", output: "Tests  42 passed (42)" },
  { toolName: "write_file", summary: "write src/config.ts", match: "src/**", output: "wrote 1.2 kB" },
  { toolName: "bash", summary: "git push origin HEAD", match: "git:remote", output: "pushed to origin" },
] as const;

/** Resolves when `signal` aborts (at once if it has: an abort event fires only once), or after `ms`. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

/** `p`, or undefined once `signal` aborts (a gate nobody will answer now). */
function unlessAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  return Promise.race([p, pause(2 ** 31 - 1, signal).then(() => undefined)]);
}

export async function runSimulatedLoops(bus: Jetloop, o: SimulatedLoopOptions): Promise<void> {
  const open = new Set<Promise<void>>();
  let full = false;
  let started = 0;
  while (!o.signal.aborted) {
    // Said once each time the loop stops starting sessions: the page shows why none is new.
    if (open.size >= o.maxOpen && !full) o.log(`${open.size} session${open.size === 1 ? " waits" : "s wait"} for an answer: the next starts once one is answered`);
    full = open.size >= o.maxOpen;
    if (!full) {
      const n = ++started;
      const one: Promise<void> = simulateSession(bus, n, o)
        .catch((e: unknown) => {
          if (!o.signal.aborted) o.log(`session ${n}: failed: ${isJetloopError(e) ? `${e.code}: ${e.message}` : String(e)}`);
        })
        .finally(() => open.delete(one));
      open.add(one);
    }
    await pause(o.everyMs, o.signal);
  }
  // Each open session ends at once on the abort and closes its gates: awaited, so the
  // caller closes the bus (and stops the server) only after they are closed.
  await Promise.allSettled(open);
}

async function simulateSession(bus: Jetloop, n: number, o: SimulatedLoopOptions): Promise<void> {
  const sessionId = newId();
  const loopId = newId();
  const turnId = newId();
  const name = `session ${n} (${sessionId.slice(-8)})`;
  const call = CALLS[(n - 1) % CALLS.length]!;
  await bus.publish(createEvent("SessionStarted", { sessionId }));
  await bus.publish(createEvent("LoopStarted", { sessionId, loopId, displayName: `dev loop ${n}` }));
  await bus.publish(createEvent("TurnStarted", { sessionId, loopId, turnId }));
  o.log(`${name}: started`);
  const gates = await bus.serveGates(sessionId, loopId);
  try {
    await runTool(bus, { sessionId, loopId, turnId }, "read_file", "read package.json", '{ "name": "demo" }', o.signal);

    if (o.signal.aborted) return;
    const stepId = newId();
    const toolExecutionId = newId();
    const request = { toolName: call.toolName, summary: call.summary, requirements: [{ kind: "fs.write", match: call.match, description: `write under ${call.match}` }] };
    o.log(`${name}: waiting for approval of ${call.toolName}: ${call.summary}`);
    const decision = await unlessAborted(gates.requestPermission({ turnId, stepId, toolExecutionId, request, timeoutMs: GATE_TIMEOUT_MS }), o.signal);
    if (decision === undefined) return;
    o.log(`${name}: ${decision.effect}${decision.byRule ? " (a workspace rule)" : decision.answered ? "" : " (no answer in time)"}${decision.reason ? `: ${decision.reason}` : ""}`);
    const approved = decision.effect === "approve";
    if (approved) await runTool(bus, { sessionId, loopId, turnId }, call.toolName, call.summary, call.output, o.signal, { stepId, toolExecutionId });
    else await stepDone(bus, { sessionId, loopId, turnId, stepId }, toolExecutionId, call.toolName, `denied: ${decision.reason ?? "no reason"}`, true);

    if (n % 3 === 0) {
      o.log(`${name}: asking a question`);
      const input = await unlessAborted(
        gates.requestInput({ turnId, stepId: newId(), toolExecutionId: newId(), question: "Which branch should the change go to?", choices: ["main", "release"], timeoutMs: GATE_TIMEOUT_MS }),
        o.signal,
      );
      if (input === undefined) return;
      o.log(`${name}: answered ${input.answered ? JSON.stringify(input.answer) : "(no answer in time)"}`);
    }
    await bus.publish(createEvent("TurnDone", { sessionId, loopId, turnId }));
    await bus.publish(createEvent("LoopIdle", { sessionId, loopId }));
    await bus.publish(createEvent("SessionStopped", { sessionId }));
    o.log(`${name}: stopped`);
  } finally {
    await gates.close();
  }
}

type Coords = { sessionId: string; loopId: string; turnId: string };

/** A tool call's previews (started, completed) and its step, as a loop that ran it would write them. */
async function runTool(
  bus: Jetloop,
  c: Coords,
  toolName: string,
  summary: string,
  output: string,
  signal: AbortSignal,
  ids: { stepId: string; toolExecutionId: string } = { stepId: newId(), toolExecutionId: newId() },
): Promise<void> {
  const coords = { ...c, stepId: ids.stepId };
  await bus.publish(createEvent("ToolCallStarted", { ...coords, toolExecutionId: ids.toolExecutionId, toolName, summary }));
  await pause(1500, signal);
  await bus.publish(createEvent("ToolCallCompleted", { ...coords, toolExecutionId: ids.toolExecutionId, resultPreview: output }));
  await stepDone(bus, coords, ids.toolExecutionId, toolName, output, false);
}

async function stepDone(bus: Jetloop, coords: Coords & { stepId: string }, toolExecutionId: string, toolName: string, text: string, isError: boolean): Promise<void> {
  // The model provider's id of the call (a model would have chosen it).
  const toolUseId = `toolu_${toolExecutionId.slice(-12)}`;
  await bus.publish(
    createEvent("StepDone", {
      ...coords,
      messages: [
        { role: "assistant", blocks: [{ type: "tool_use", id: toolUseId, name: toolName, input: {} }] },
        { role: "tool", toolUseId, blocks: [{ type: "text", text }], isError },
      ],
    }),
  );
}
