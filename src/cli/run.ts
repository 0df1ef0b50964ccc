/**
 * The `jetloop` command line as a function of its arguments: the command table, and how a
 * failure is told. main.ts runs it on the process; tests run it in-process.
 */
import { ConnectionFailedError, isJetloopError, NatsServerMissingError, OptionsError, PermissionDeniedError, UsageError } from "../errors.js";
import { asUsageError } from "./args.js";
import { attachCommand, attachHelp } from "./attach.js";
import { consumersCommand, consumersHelp } from "./consumers.js";
import { demoAnswererCommand, demoCommand, demoHelp } from "./demo.js";
import { devCommand, devHelp } from "./dev.js";
import { gatewayCommand, gatewayHelp } from "./gateway.js";
import { selfCommand } from "./local-server.js";
import { parkedCommand, parkedHelp } from "./parked.js";
import { provisionCommand, provisionHelp } from "./provision.js";
import { replayCommand, replayHelp } from "./replay.js";
import { rulesCommand, rulesHelp } from "./rules.js";
import { catalogCommand, catalogHelp, sessionsCommand, sessionsHelp } from "./sessions.js";
import { tailCommand, tailHelp } from "./tail.js";

export const usage = `jetloop — the event journal for agent runtimes on NATS JetStream

Usage: jetloop <command> [options]

Commands:
  provision   create or update the events stream; print drift
  tail        follow events live, decoded and filterable
  replay      print a bounded range of a session's journal
  sessions    list the sessions (the session catalog, in the Go runtime's order)
  catalog     rebuild the session catalog from the journal
  parked      list, show, replay or drop parked durable deliveries
  consumers   list the durables with their lag and parked counts
  rules       list or remove the workspace rules "Approve always" persisted
  demo        run a tool approval sequence end to end (approve and deny)
  gateway     serve the runtime's HTTP surface (journal, SSE, gate answers) and a web page
  attach      follow a Go runtime's own session store (natsstore) into the journal
  dev         a local nats-server, the gateway and a simulated loop, in one step

Run jetloop <command> --help for a command's options.

Exit codes: 0 done; 1 a failure at run time; 2 bad input (with the command's usage;
provision --verify: drift); 3 demo or dev found no nats-server to start.`;

/** The exit code of a command that was to start a nats-server and found none. */
export const EXIT_NO_NATS_SERVER = 3;

export interface CliIo {
  readonly out: (s: string) => void;
  readonly err: (s: string) => void;
}

type Command = { run: (argv: string[], io: CliIo) => Promise<number>; help: string };

const commands: Record<string, Command> = {
  provision: { run: (a, io) => provisionCommand(a, io.out, io.err), help: provisionHelp },
  tail: { run: (a, io) => tailCommand(a, io.out, io.err), help: tailHelp },
  replay: { run: (a, io) => replayCommand(a, io.out, io.err), help: replayHelp },
  sessions: { run: (a, io) => sessionsCommand(a, io.out), help: sessionsHelp },
  catalog: { run: (a, io) => catalogCommand(a, io.out, io.err), help: catalogHelp },
  parked: { run: (a, io) => parkedCommand(a, io.out, io.err), help: parkedHelp },
  consumers: { run: (a, io) => consumersCommand(a, io.out, io.err), help: consumersHelp },
  rules: { run: (a, io) => rulesCommand(a, io.out, io.err), help: rulesHelp },
  demo: { run: (a, io) => demoCommand(a, io.out, io.err), help: demoHelp },
  gateway: { run: (a, io) => gatewayCommand(a, io.out, io.err), help: gatewayHelp },
  attach: { run: (a, io) => attachCommand(a, io.out, io.err), help: attachHelp },
  dev: { run: (a, io) => devCommand(a, io.out), help: devHelp },
  "demo-answerer": { run: (a, io) => demoAnswererCommand(a, io.out), help: usage },
};

/** What to do next, for failures whose message does not say it already. */
export function hintFor(e: unknown): string | undefined {
  if (e instanceof ConnectionFailedError && e.reason === "unreachable") {
    return `is a nats-server with JetStream running there? Pass --server URL or set NATS_URL; \`${selfCommand()} dev\` starts a local one with the gateway`;
  }
  if (e instanceof PermissionDeniedError) return "the NATS user lacks a permission this command needs: see deploy/nats/permissions.example.conf";
  return undefined;
}

/** The line a failure prints: `jetloop CMD: CODE: message`, then the hint on its own line. */
export function failureText(command: string, e: unknown): string {
  const text = isJetloopError(e) ? `${e.code}: ${e.message}` : `INTERNAL: ${e instanceof Error ? e.message : String(e)}`;
  const hint = hintFor(e);
  return `jetloop ${command}: ${text}${hint ? `\nhint: ${hint}` : ""}`;
}

/**
 * Runs a command. Bad input (a UsageError, or an option the library refused before
 * anything was sent) exits 2 with the command's usage; no nats-server to start exits 3 with
 * one line; a failure at run time exits 1. All print the error's code.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    (name === undefined ? io.err : io.out)(usage);
    return name === undefined ? 2 : 0;
  }
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!command) {
    io.err(`jetloop: OPTIONS_INVALID: unknown command ${JSON.stringify(name)}\n\n${usage}`);
    return 2;
  }
  try {
    return await command.run(rest, io);
  } catch (e) {
    const usageError = e instanceof OptionsError ? asUsageError(e) : e instanceof UsageError ? e : undefined;
    if (usageError) {
      io.err(`jetloop ${name}: ${usageError.code}: ${usageError.message}\n\n${command.help}`);
      return 2;
    }
    io.err(failureText(name, e));
    return e instanceof NatsServerMissingError ? EXIT_NO_NATS_SERVER : 1;
  }
}
