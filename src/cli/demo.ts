/**
 * `jetloop demo`: a simulated loop runs the tool approval sequence twice — one call
 * approved, one denied — while a second process answers the gates over NATS and this
 * one watches as a UI would, then rebuilds the same state from the journal alone.
 */
import { UsageError } from "../errors.js";
import { fork } from "node:child_process";
import { connect, type Jetloop } from "../bus.js";
import { createEvent } from "../events/factories.js";
import { newId } from "../events/ids.js";
import { ToolActivityProjection } from "../projection/index.js";
import { parseArgs } from "node:util";
import { connectionFlags, connectionHelp, connectOptions, ids, parse } from "./args.js";
import { formatLine } from "./format.js";
import { selfCommand, startThrowawayServer, type LocalServer } from "./local-server.js";

export const demoHelp = `jetloop demo [--server URL] [--namespace NS]

Runs a tool approval sequence end to end: a loop asks permission for two tool
calls, a second process answers (approve, then deny), the loop records each
decision, "runs" the approved tool (its output is simulated) and finalizes the
step. Prints what a UI subscriber sees, then the tool states rebuilt from the
journal alone. Prints the namespace and session, so the run can be replayed.

With no --server, NATS_URL or nats context, starts a throwaway local nats-server (from
NATS_SERVER_BIN, a source checkout's .nats/, or PATH) and stops it at the end:
its journal goes with it. Pass --server (a gateway on the same server and
namespace shows the run) to keep it.

${connectionHelp}`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const LEGEND = `
Each line: #N (the event's journal sequence) or "live" (a preview, never stored), the
time, the event type, s= session and l= loop (last 8 characters of their ids), then
tool= / gate= (last 8 characters) and what happened. [answerer] lines come from the
second process just before its answer takes effect. The tool does not really run: its
output is simulated.
`;

export async function demoCommand(argv: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const { values } = parse(() => parseArgs({ args: argv, options: connectionFlags, strict: true, tokens: true }));
  if (values.help) {
    out(demoHelp);
    return 0;
  }
  // Checked before a server is started for it.
  const options = connectOptions(values);
  let local: LocalServer | undefined;
  // Interrupted (Ctrl-C, or killed with SIGTERM), the throwaway server goes too: a signal
  // ends the process without its "exit" handlers.
  const interrupted = (signal: NodeJS.Signals) => {
    void (local?.stop() ?? Promise.resolve()).finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
  };
  if (options.servers === undefined) {
    local = await startThrowawayServer();
    err(`started a throwaway nats-server at ${local.url}`);
    options.servers = local.url;
    process.once("SIGINT", interrupted);
    process.once("SIGTERM", interrupted);
  }
  const bus = await connect(options);
  try {
    await bus.provision();
    return await runDemo(bus, options.servers, local !== undefined, out, err);
  } finally {
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
    await bus.close();
    await local?.stop();
  }
}

async function runDemo(bus: Jetloop, servers: string | string[], throwaway: boolean, out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const sessionId = newId();
  const loopId = newId();
  const turnId = newId();
  out(`namespace ${bus.namespace}\nsession   ${sessionId}\nloop      ${loopId}`);
  out(LEGEND);

  const ui = new ToolActivityProjection();
  const watcher = await bus.session(sessionId).subscribeEvents({ enduring: { loops: [loopId] }, ephemeral: { loops: [loopId] } }, { start: "all" });
  const watching = (async () => {
    for await (const d of watcher) {
      out(formatLine(d));
      ui.apply(d);
      if (d.event.type === "TurnDone") break;
    }
  })();
  // A failed watcher rejects `watching`, awaited below (main prints the code); marked
  // handled now so a failure before that await is not an unhandled rejection.
  watching.catch(() => undefined);

  // The answering side runs in its own process, as a UI or policy service would.
  const answerer = fork(process.argv[1]!, ["demo-answerer", "--session", sessionId, "--loop", loopId, "--namespace", bus.namespace, "--server", [servers].flat().join(",")], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const answererDone = new Promise<number>((resolve) => answerer.once("exit", (code) => resolve(code ?? 1)));

  const gates = await bus.serveGates(sessionId, loopId);
  await bus.publish(createEvent("TurnStarted", { sessionId, loopId, turnId }));
  const calls = [
    // Each asks for what it needs: a listing reads, a removal writes.
    { toolName: "bash", summary: "ls -la /tmp", requirement: { kind: "fs.read", match: "/tmp/**", description: "read under /tmp/**" } },
    { toolName: "bash", summary: "rm -rf /var/cache/app", requirement: { kind: "fs.write", match: "/var/cache/app/**", description: "write under /var/cache/app/**" } },
  ];
  for (const call of calls) {
    const stepId = newId();
    const toolExecutionId = newId();
    // The model provider's id of the call (a model would have chosen it).
    const toolUseId = `toolu_${toolExecutionId.slice(-12)}`;
    const coords = { sessionId, loopId, turnId, stepId };
    const request = { toolName: call.toolName, summary: call.summary, requirements: [call.requirement] };
    const decision = await gates.requestPermission({ turnId, stepId, toolExecutionId, toolUseId, request, timeoutMs: 30_000 });
    let result: { content: string; isError: boolean };
    if (decision.effect === "approve") {
      await bus.publish(createEvent("ToolCallStarted", { ...coords, toolExecutionId, toolName: call.toolName, summary: call.summary }));
      await sleep(200);
      result = { content: "total 0\ndrwxrwxrwt 2 root root 40 .", isError: false };
      await bus.publish(createEvent("ToolCallCompleted", { ...coords, toolExecutionId, resultPreview: result.content.split("\n")[0]! }));
    } else {
      result = { content: `denied: ${decision.reason ?? "no reason"}`, isError: true };
    }
    await bus.publish(
      createEvent("StepDone", {
        ...coords,
        messages: [
          { role: "assistant", blocks: [{ type: "tool_use", id: toolUseId, name: call.toolName, input: { path: "/tmp" } }] },
          { role: "tool", toolUseId, blocks: [{ type: "text", text: result.content }], isError: result.isError },
        ],
      }),
    );
  }
  await bus.publish(createEvent("TurnDone", { sessionId, loopId, turnId }));
  await watching;
  await gates.close();
  const answererCode = await answererDone;

  // A UI that reconnects rebuilds the same state from the journal alone.
  const rebuilt = new ToolActivityProjection();
  for await (const d of bus.session(sessionId).replay({ enduring: { loops: [loopId] } })) rebuilt.apply(d);
  out("\ntool activity (live UI | rebuilt from the journal):");
  for (const a of ui.list({ loopId })) {
    const again = rebuilt.get(loopId, a.toolExecutionId);
    out(`  ${a.toolExecutionId.slice(-8)} ${(a.toolName ?? "?").padEnd(6)} ${a.status.padEnd(10)} | ${again?.status ?? "missing"}`);
  }
  const same = ui.list({ loopId }).every((a) => rebuilt.get(loopId, a.toolExecutionId)?.status === a.status);
  if (!same || answererCode !== 0) {
    err(`demo failed: ${same ? `answerer exited with ${answererCode}` : "rebuilt state differs"}`);
    return 1;
  }
  out("\ndemo complete: approve and deny branches recorded; rebuilt state matches.");
  if (!throwaway) out(`replay it: ${selfCommand()} replay --server ${[servers].flat().join(",")} --namespace ${bus.namespace} --session ${sessionId}`);
  else out("the throwaway server is stopped and its journal with it; to replay a run or watch it in the gateway, run the demo with --server (docs/gateway.md: \"Against the demo\")");
  return 0;
}

/** The second process of the demo: answers the loop's gates, approve first, then deny. */
export async function demoAnswererCommand(argv: string[], out: (s: string) => void): Promise<number> {
  const { values } = parse(() => parseArgs({ args: argv, options: { ...connectionFlags, session: { type: "string" }, loop: { type: "string" } }, strict: true, tokens: true }));
  if (!values.session || !values.loop) throw new UsageError("demo-answerer needs --session and --loop");
  ids("session", [values.session]);
  ids("loop", [values.loop]);
  const bus = await connect(connectOptions(values));
  try {
    const session = bus.session(values.session);
    const sub = await session.subscribeEvents({ enduring: { loops: [values.loop] }, types: ["GateOpened"] }, { start: "all" });
    const effects = ["approve", "deny"] as const;
    let answered = 0;
    const timer = setTimeout(() => void sub.close(), 30_000);
    for await (const d of sub) {
      if (d.event.type !== "GateOpened") continue;
      const effect = effects[answered]!;
      const gateId = d.event.gate.id!;
      const reason = effect === "deny" ? "outside the allowed paths" : "looks safe";
      // Printed before answering: stdout is shared with the loop's process, and the
      // answer's effect (GateResolved, PermissionDecided) must not be printed first.
      out(`        [answerer] answering gate ${gateId.slice(-8)}: ${effect} (${reason})`);
      await session.answer(values.loop, { kind: "permission", gateId, effect, reason });
      if (++answered === effects.length) break;
    }
    clearTimeout(timer);
    await sub.close();
    return answered === effects.length ? 0 : 1;
  } finally {
    await bus.close();
  }
}
