/**
 * A throwaway nats-server for `jetloop demo` and `jetloop dev` when no server is given:
 * loopback only, a temporary store, stopped (and its store removed) when the command
 * ends, even on Ctrl-C.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { NatsServerMissingError } from "../errors.js";

export interface LocalServer {
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * NATS_SERVER_BIN, the binary a source checkout installs into .nats/ (its setup script), or
 * nats-server on PATH.
 */
export function findNatsServer(): string | undefined {
  const candidates = [process.env.NATS_SERVER_BIN, fileURLToPath(new URL("../../.nats/bin/nats-server", import.meta.url))];
  for (const c of candidates) if (c && existsSync(c)) return c;
  const which = spawnSync("sh", ["-c", "command -v nats-server"], { encoding: "utf8" });
  return which.status === 0 ? which.stdout.trim() : undefined;
}

/**
 * How to get nats-server on this platform, in a few words: the package manager the NATS
 * project documents for it, else its release page.
 */
export function natsServerInstallHint(platform: NodeJS.Platform = process.platform): string {
  const releases = "https://github.com/nats-io/nats-server/releases/latest";
  if (platform === "darwin") return "brew install nats-server";
  if (platform === "win32") return `scoop install nats-server (or the zip from ${releases})`;
  return `download it from ${releases} and put nats-server on PATH`;
}

/**
 * A throwaway server from findNatsServer(). None found is NatsServerMissingError, one line
 * that says how to get one here (the command line itself was right: no usage text).
 */
export async function startThrowawayServer(options: LocalServerOptions = {}): Promise<LocalServer> {
  const bin = findNatsServer();
  if (!bin) {
    throw new NatsServerMissingError(`no nats-server found (not NATS_SERVER_BIN, not on PATH): ${natsServerInstallHint()}; or set NATS_SERVER_BIN=/path/to/nats-server, or pass --server URL of a running one`);
  }
  return startLocalServer(bin, options);
}

/**
 * How the user runs this command line, for hints that name a command: `npm run jetloop --`
 * in a source checkout (where `jetloop` is not on PATH), `npx jetloop` when npm's exec ran
 * it (an install in a project: not on PATH either), else `jetloop` (a global install).
 */
export function selfCommand(): string {
  if (process.argv[1]?.endsWith(".ts")) return "npm run jetloop --";
  return process.env.npm_command === "exec" ? "npx jetloop" : "jetloop";
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer().listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no free port"))));
    });
    srv.on("error", reject);
  });
}

export interface LocalServerOptions {
  /**
   * Start the server in a process group of its own (default false), so a terminal's Ctrl-C,
   * which signals the whole foreground group, does not stop it before the command has
   * closed what it holds on it (`dev`'s gates): the command stops it last, in stop(). Only
   * for a command that handles SIGINT, SIGTERM and SIGHUP itself: one that dies of a signal
   * runs no exit hook and would leave the server running.
   */
  readonly ownProcessGroup?: boolean;
}

export async function startLocalServer(bin: string, options: LocalServerOptions = {}): Promise<LocalServer> {
  const port = await freePort();
  const store = mkdtempSync(join(tmpdir(), "jetloop-demo-"));
  const child = spawn(bin, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", store], { stdio: ["ignore", "ignore", "pipe"], detached: options.ownProcessGroup === true });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const cleanup = () => {
    child.kill("SIGKILL");
    rmSync(store, { recursive: true, force: true });
  };
  process.once("exit", cleanup);
  await new Promise<void>((resolve, reject) => {
    let log = "";
    let ready = false;
    const timer = setTimeout(() => reject(new Error(`nats-server did not start: ${log.slice(-500)}`)), 10_000);
    // Keep draining stderr after start-up, or a full pipe would block the server.
    child.stderr.on("data", (chunk: Buffer) => {
      if (ready) return;
      log += chunk.toString();
      if (log.includes("Server is ready")) {
        ready = true;
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`nats-server exited (${code}): ${log.slice(-500)}`));
    });
  });
  return {
    url: `nats://127.0.0.1:${port}`,
    async stop() {
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 3000);
      await exited;
      clearTimeout(t);
      process.off("exit", cleanup);
      rmSync(store, { recursive: true, force: true });
    },
  };
}
