#!/usr/bin/env node
/** The `jetloop` command line: provision, tail, replay, parked, consumers, demo, gateway. */
import { isJetloopError } from "../errors.js";
import { UsageError } from "./args.js";
import { consumersCommand } from "./consumers.js";
import { demoAnswererCommand, demoCommand } from "./demo.js";
import { gatewayCommand } from "./gateway.js";
import { parkedCommand } from "./parked.js";
import { provisionCommand } from "./provision.js";
import { replayCommand } from "./replay.js";
import { tailCommand } from "./tail.js";

const usage = `jetloop — the event journal for agent runtimes on NATS JetStream

Usage: jetloop <command> [options]

Commands:
  provision   create or update the events stream; print drift
  tail        follow events live, decoded and filterable
  replay      print a bounded range of a session's journal
  parked      list, show, replay or drop parked durable deliveries
  consumers   list the durables with their lag and parked counts
  demo        run the seed's approval sequence end to end
  gateway     serve the runtime's HTTP surface (journal, SSE, gate answers)

Run jetloop <command> --help for a command's options.`;

const out = (s: string) => void process.stdout.write(`${s}\n`);
const err = (s: string) => void process.stderr.write(`${s}\n`);

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "provision":
      return provisionCommand(rest, out, err);
    case "tail":
      return tailCommand(rest, out, err);
    case "replay":
      return replayCommand(rest, out, err);
    case "parked":
      return parkedCommand(rest, out, err);
    case "consumers":
      return consumersCommand(rest, out, err);
    case "demo":
      return demoCommand(rest, out, err);
    case "gateway":
      return gatewayCommand(rest, out);
    case "demo-answerer":
      return demoAnswererCommand(rest, out);
    case undefined:
    case "help":
    case "--help":
    case "-h":
      out(usage);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    if (e instanceof UsageError) {
      err(`jetloop: ${e.message}\n\n${usage}`);
      process.exitCode = 2;
    } else {
      err(`jetloop: ${isJetloopError(e) ? `${e.code}: ${e.message}` : e instanceof Error ? e.message : String(e)}`);
      process.exitCode = 1;
    }
  },
);
