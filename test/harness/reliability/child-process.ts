// Consumer processes the reliability scenarios start, kill and restart: each runs one
// script under tsx, says "ready" on stdout once subscribed, and records what it handled in
// a file, one line per record with space-separated fields (written synchronously, so a
// SIGKILL loses nothing that was recorded).
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../server.js";

export interface Child {
  readonly child: ChildProcess;
  /** Resolves on "ready"; rejects if the process exits first. */
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
}

/** Starts `script` (a path under test/harness/reliability/) with `env` added. */
export function startChild(script: string, env: Record<string, string>): Child {
  const child = spawn(process.execPath, ["--import", "tsx", join(REPO_ROOT, "test/harness/reliability", script)], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (b: Buffer) => {
      if (b.toString().includes("ready")) resolve();
    });
    void exited.then(() => reject(new Error(`the consumer process exited before it was ready: ${stderr}`)));
  });
  return { child, ready, exited };
}

/** The records a child wrote, each split into its fields (none when the file is missing). */
export function readRecordLines(file: string): string[][] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => l.split(" "));
}

/** Kills what is still running (SIGKILL). */
export function killAll(children: readonly ChildProcess[]): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
}
