// The jetloop command run as a process, the way a user runs it.
import { execFile, spawn } from "node:child_process";
import { runCli } from "../../src/cli/run.js";

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export function jetloop(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], { env, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

/**
 * Runs a command that does not end by itself (tail) until its stderr shows `text` (or
 * 30 s pass), then stops it with SIGTERM as Ctrl-C would.
 */
export function jetloopUntil(args: string[], text: string): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const stop = () => child.kill("SIGTERM");
    const timer = setTimeout(stop, 30_000);
    child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    child.stderr.on("data", (b: Buffer) => {
      stderr += b.toString();
      if (stderr.includes(text)) stop();
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout, stderr });
    });
  });
}

/**
 * The command line run in this process (src/cli/run.ts, what main.ts runs): the same
 * parsing, output and exit codes without a process start (seconds each under tsx on a
 * loaded machine). For everything but what needs its own process: the demo (it forks its
 * answerer), Ctrl-C, and the entry point itself (cli.test.ts runs that as a process).
 */
export async function jetloopIn(args: string[]): Promise<CliRun> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, { out: (s) => out.push(`${s}\n`), err: (s) => err.push(`${s}\n`) });
  return { code, stdout: out.join(""), stderr: err.join("") };
}
