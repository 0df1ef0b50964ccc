#!/usr/bin/env node
/** The `jetloop` command line on this process (the commands: run.ts). */
import { runCli } from "./run.js";

runCli(process.argv.slice(2), {
  out: (s) => void process.stdout.write(`${s}\n`),
  err: (s) => void process.stderr.write(`${s}\n`),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`jetloop: ${String(e)}\n`);
    process.exitCode = 1;
  },
);
