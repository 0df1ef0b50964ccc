#!/usr/bin/env node
/** The `jetloop` command line: provision, tail, replay, parked, consumers, demo, gateway. */
import { isJetloopError, OptionsError } from "../errors.js";
import { asUsageError, UsageError } from "./args.js";
import { consumersCommand, consumersHelp } from "./consumers.js";
import { demoAnswererCommand, demoCommand, demoHelp } from "./demo.js";
import { gatewayCommand, gatewayHelp } from "./gateway.js";
import { parkedCommand, parkedHelp } from "./parked.js";
import { provisionCommand, provisionHelp } from "./provision.js";
import { replayCommand, replayHelp } from "./replay.js";
import { tailCommand, tailHelp } from "./tail.js";

const usage = `jetloop — the event journal for agent runtimes on NATS JetStream

Usage: jetloop <command> [options]

Commands:
  provision   create or update the events stream; print drift
  tail        follow events live, decoded and filterable
  replay      print a bounded range of a session's journal
  parked      list, show, replay or drop parked durable deliveries
  consumers   list the durables with their lag and parked counts
  demo        run a tool approval sequence end to end (approve and deny)
  gateway     serve the runtime's HTTP surface (journal, SSE, gate answers) and a web page

Run jetloop <command> --help for a command's options.`;

const out = (s: string) => void process.stdout.write(`${s}\n`);
const err = (s: string) => void process.stderr.write(`${s}\n`);

const commands: Record<string, { run: (argv: string[]) => Promise<number>; help: string }> = {
  provision: { run: (a) => provisionCommand(a, out, err), help: provisionHelp },
  tail: { run: (a) => tailCommand(a, out, err), help: tailHelp },
  replay: { run: (a) => replayCommand(a, out, err), help: replayHelp },
  parked: { run: (a) => parkedCommand(a, out, err), help: parkedHelp },
  consumers: { run: (a) => consumersCommand(a, out, err), help: consumersHelp },
  demo: { run: (a) => demoCommand(a, out, err), help: demoHelp },
  gateway: { run: (a) => gatewayCommand(a, out), help: gatewayHelp },
  "demo-answerer": { run: (a) => demoAnswererCommand(a, out), help: usage },
};

/**
 * Runs a command. Bad input (a UsageError, or an option the library refused before
 * anything was sent) exits 2 with the command's usage; a failure at run time exits 1.
 * Both print the error's code.
 */
async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    out(usage);
    return name === undefined ? 2 : 0;
  }
  const command = commands[name];
  if (!command) {
    err(`jetloop: OPTIONS_INVALID: unknown command ${JSON.stringify(name)}\n\n${usage}`);
    return 2;
  }
  try {
    return await command.run(rest);
  } catch (e) {
    const usageError = e instanceof OptionsError ? asUsageError(e) : e instanceof UsageError ? e : undefined;
    if (usageError) {
      err(`jetloop ${name}: ${usageError.code}: ${usageError.message}\n\n${command.help}`);
      return 2;
    }
    err(`jetloop ${name}: ${isJetloopError(e) ? `${e.code}: ${e.message}` : e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    err(`jetloop: ${String(e)}`);
    process.exitCode = 1;
  },
);
