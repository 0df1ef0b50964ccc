/**
 * `jetloop dev`: the whole picture in one step for a newcomer — a throwaway nats-server
 * (unless --server is given), the gateway with its page, and a simulated loop that keeps
 * opening sessions that ask for approval (and now and then a question) on the page.
 * Ctrl-C stops all of it.
 */
import { parseArgs } from "node:util";
import { connect } from "../bus.js";
import { startGateway } from "../gateway/listen.js";
import { connectionFlags, connectionHelp, connectOptions, parse, positiveInt } from "./args.js";
import { runSimulatedLoops } from "./dev-loop.js";
import { startThrowawayServer, type LocalServer } from "./local-server.js";
import { commandLogger, logFormat, logFormatFlag } from "./log-format.js";

export const devHelp = `jetloop dev [--listen HOST:PORT] [--every SECONDS] [--log-format pretty|json] [--server URL]

Starts everything a newcomer needs to see the gateway's page with live sessions:
a throwaway local nats-server (or the one --server, NATS_URL or a nats context names), the stream,
the gateway (loopback only), and a simulated loop that starts a session every
--every seconds while fewer than --max-open wait for an answer (it says when it
stops starting them). Each session runs a tool call, then asks for approval of another
(every third one also asks a question); answer them on the page. An unanswered
gate is denied after 5 minutes. Prints the page's URL. Runs until Ctrl-C, which
stops the loop, the gateway and the throwaway server.

  --listen HOST:PORT   the gateway's address, a loopback one (default 127.0.0.1:8080)
  --every SECONDS      seconds between new sessions (default 10)
  --max-open N         sessions waiting for an answer at once, at most (default 3)
  --log-format F       pretty (lines for a person) or json (one object a line, for
                       machines); default pretty when stderr is a terminal, else json

${connectionHelp}`;

export async function devCommand(argv: string[], out: (s: string) => void): Promise<number> {
  const { values } = parse(() =>
    parseArgs({ args: argv, options: { ...connectionFlags, listen: { type: "string" }, every: { type: "string" }, "max-open": { type: "string" }, ...logFormatFlag }, strict: true, tokens: true }),
  );
  if (values.help) {
    out(devHelp);
    return 0;
  }
  const everyMs = (positiveInt("every", values.every) ?? 10) * 1000;
  const maxOpen = positiveInt("max-open", values["max-open"]) ?? 3;
  const listen = values.listen ?? "127.0.0.1:8080";
  const log = commandLogger(logFormat(values["log-format"]), "jetloop-dev");
  const options = connectOptions(values);
  let local: LocalServer | undefined;
  // The first Ctrl-C stops in order: the loop, its gates, the gateway, the bus, and the
  // throwaway server last (it runs in a process group of its own, so the terminal's signal
  // does not stop it first and fail the gates' closing). A second one exits at once; the
  // server's exit hook still stops it. Handled before the server starts: a signal that
  // killed this process would leave that server running. A SIGHUP while stopping is the
  // terminal going away after the Ctrl-C (script(1) closing its pseudo-terminal, a window
  // closed): not a second request to hurry, so the ordered stop goes on and exits 0.
  const stopped = new AbortController();
  const stop = (signal: NodeJS.Signals) => {
    if (!stopped.signal.aborted) stopped.abort();
    else if (signal !== "SIGHUP") process.exit(130);
  };
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
  for (const s of signals) process.on(s, stop);
  try {
    if (options.servers === undefined) {
      local = await startThrowawayServer({ ownProcessGroup: true });
      options.servers = local.url;
    }
    const bus = await connect({ ...options, name: "jetloop-dev", logger: log });
    try {
      log.info({ nats_server: bus.serverVersion, namespace: bus.namespace }, "connected to NATS");
      await bus.provision();
      // No authentication here: the gateway refuses a non-loopback --listen (GATEWAY_BIND).
      const gw = await startGateway(bus, { listen });
      try {
        out(`nats-server  ${local ? `${local.url} (throwaway: stopped, with its journal, on exit)` : [options.servers].flat().join(",")}`);
        out(`namespace    ${bus.namespace}`);
        out(`gateway      ${gw.url}`);
        out(`\nopen ${gw.url}/ — sessions asking for approval start there every ${everyMs / 1000} s (while fewer than ${maxOpen} wait for an answer). Ctrl-C stops all.\n`);
        await runSimulatedLoops(bus, { everyMs, maxOpen, signal: stopped.signal, log: out });
      } finally {
        await gw.close();
      }
    } finally {
      await bus.close();
    }
    out("stopped: simulated loop, gateway" + (local ? ", nats-server" : ""));
    return 0;
  } finally {
    await local?.stop();
    for (const s of signals) process.off(s, stop);
  }
}
