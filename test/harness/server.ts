// Starts real nats-server processes for the integration tests: one JetStream server
// from deploy/nats/single.conf (or a given configuration), on free loopback ports,
// with a temporary store directory. Every process started here is killed, and every
// temporary directory removed, when the Node process exits; a small watchdog shell
// also kills the server if Node dies without running its exit handlers.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync, readFileSync } from "node:fs";
import { createServer, connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { harnessBackend } from "./backend.js";
import { waitFor, within } from "./async.js";
import { uniqueNamespace } from "./namespace.js";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const SINGLE_CONF = join(REPO_ROOT, "deploy/nats/single.conf");
export const CLUSTER_CONF = join(REPO_ROOT, "deploy/nats/cluster.conf");

export type ServerFlavor = "oldest" | "newest";

const HOST = "127.0.0.1";

/** The flavor chosen by JETLOOP_NATS_SERVER (oldest | newest), default newest. */
export function serverFlavor(): ServerFlavor {
  const v = process.env.JETLOOP_NATS_SERVER?.trim() || "newest";
  if (v !== "oldest" && v !== "newest") {
    throw new Error(`JETLOOP_NATS_SERVER must be "oldest" or "newest", not ${JSON.stringify(v)}`);
  }
  return v;
}

/** NATS_SERVER_BIN if set, else .nats/bin/nats-server-<flavor> (see scripts/install-nats-server.sh). */
export function findServerBinary(flavor: ServerFlavor = serverFlavor()): string {
  const fromEnv = process.env.NATS_SERVER_BIN?.trim();
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`NATS_SERVER_BIN=${fromEnv} does not exist`);
    return fromEnv;
  }
  const bin = join(REPO_ROOT, ".nats/bin", `nats-server-${flavor}`);
  if (!existsSync(bin)) {
    throw new Error(
      `nats-server (${flavor}) is not installed at ${bin}. Run "npm run setup" ` +
        `(bash scripts/install-nats-server.sh), or set NATS_SERVER_BIN to a nats-server >= 2.10 ` +
        `binary, or set NATS_URL to use a running server. See test/harness/README.md.`,
    );
  }
  return bin;
}

const versions = new Map<string, string>();

/** The version of a nats-server binary, e.g. "2.10.27". */
export function serverVersion(bin: string = findServerBinary()): string {
  let v = versions.get(bin);
  if (v === undefined) {
    const out = execFileSync(bin, ["--version"], { encoding: "utf8" }).trim();
    const m = /v?(\d+\.\d+\.\d+\S*)/.exec(out);
    if (!m?.[1]) throw new Error(`cannot parse the version of ${bin}: ${out}`);
    v = m[1];
    versions.set(bin, v);
  }
  return v;
}

/** A port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, HOST, () => {
      const addr = srv.address();
      if (addr === null || typeof addr === "string") {
        srv.close();
        reject(new Error("no port"));
        return;
      }
      srv.close(() => resolvePort(addr.port));
    });
  });
}



/** Waits until a server's monitoring endpoint /healthz reports ok (JetStream is current). */
export async function waitHealthz(name: string, httpPort: number, timeoutMs: number): Promise<void> {
  await waitFor(
    `${name} /healthz`,
    async () => {
      const res = await fetch(`http://${HOST}:${httpPort}/healthz`);
      await res.body?.cancel();
      return res.ok;
    },
    timeoutMs,
  );
}

function tcpAccepts(port: number): Promise<boolean> {
  return new Promise((r) => {
    const s = tcpConnect({ host: HOST, port });
    s.once("connect", () => {
      s.destroy();
      r(true);
    });
    s.once("error", () => r(false));
  });
}

/**
 * Spins until /proc says every thread of `pid` is stopped (state T): a few microseconds
 * in practice, synchronous so pause() keeps its signature. Without /proc it returns.
 */
function waitAllThreadsStopped(pid: number, timeoutMs = 2_000): void {
  const deadline = Date.now() + timeoutMs;
  const state = (stat: string) => stat.charAt(stat.lastIndexOf(")") + 2);
  for (;;) {
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      return;
    }
    const running = tasks.filter((t) => {
      try {
        return !/[tT]/.test(state(readFileSync(`/proc/${pid}/task/${t}/stat`, "utf8")));
      } catch {
        return false; // the thread is gone
      }
    });
    if (running.length === 0) return;
    if (Date.now() > deadline) throw new Error(`pid ${pid}: ${running.length} thread(s) still running ${timeoutMs} ms after SIGSTOP`);
  }
}

// ---------------------------------------------------------------------------------------
// Tracking and cleanup

const live = new Set<ServerProcess>();
const tempDirs = new Set<string>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const s of live) s.killNow();
    for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
  });
}

/** A temporary directory removed at process exit (or by removeTempDir). */
export function makeTempDir(prefix = "jetloop-nats-"): string {
  installExitHook();
  const d = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(d);
  return d;
}

export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  tempDirs.delete(dir);
}

/** Stops every server this process started (used by teardown hooks). */
export async function stopAllServers(): Promise<void> {
  await Promise.all([...live].map((s) => s.stop()));
}

// Kills the server (and removes its temp dir) if this Node process dies without running
// exit handlers (SIGKILL, crash, a worker killed at teardown). A server that ended with its
// folder left (stopped, never closed) keeps its watchdog until the folder is gone or this
// process ends, and then the folder goes too; a server ended is not signalled again (its pid
// may be another process's by then). Exits by itself once the server and its folder are gone.
function startWatchdog(serverPid: number, dir: string | undefined): void {
  const script = [
    'while kill -0 "$1" 2>/dev/null; do',
    '  if [ -z "$dead" ] && ! kill -0 "$2" 2>/dev/null; then dead=1; fi',
    '  if [ -n "$dead" ] && { [ -z "$3" ] || [ ! -d "$3" ]; }; then exit 0; fi',
    "  sleep 1",
    "done",
    '[ -z "$dead" ] && kill -9 "$2" 2>/dev/null',
    'if [ -n "$3" ]; then sleep 1; rm -rf "$3"; fi',
  ].join("\n");
  const w = spawn("/bin/sh", ["-c", script, "watchdog", String(process.pid), String(serverPid), dir ?? ""], {
    detached: true,
    stdio: "ignore",
  });
  w.on("error", () => undefined);
  w.unref();
}

// ---------------------------------------------------------------------------------------
// What a test can do with one server, whether a process or a container (containers.ts)

/** Where a server listens and what it runs, on the host. */
export interface ServerSpecBase {
  readonly name: string;
  readonly port: number;
  readonly httpPort: number;
  readonly storeDir: string;
  readonly configFile: string;
}

export interface ServerHandle extends Omit<NatsServer, "url" | "monitorUrl" | keyof ServerSpecBase> {
  readonly spec: ServerSpecBase;
  start(): Promise<void>;
}

// ---------------------------------------------------------------------------------------
// One nats-server process, restartable with the same ports and store directory

export interface ServerProcessSpec extends ServerSpecBase {
  bin: string;
  /** Environment for the config's $VARIABLE references (and anything else). */
  env: Record<string, string>;
  args: string[];
  port: number;
  httpPort: number;
  storeDir: string;
  /** Removed when the server is closed; contains storeDir and generated config files. */
  workDir: string;
  /** Wait for /healthz after start (standalone servers); cluster nodes are waited for by the cluster. */
  waitHealthy: boolean;
  readyTimeoutMs: number;
}

const LOG_LINES = 300;

export class ServerProcess implements ServerHandle {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private readonly logLines: string[] = [];
  private paused = false;
  private closed = false;
  readonly version: string;

  constructor(readonly spec: ServerProcessSpec) {
    this.version = serverVersion(spec.bin);
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The last lines the server logged. */
  logs(): string {
    return this.logLines.join("\n");
  }

  async start(): Promise<void> {
    if (this.closed) throw new Error(`${this.spec.name}: closed`);
    if (this.child) throw new Error(`${this.spec.name}: already running`);
    installExitHook();
    const echo = process.env.JETLOOP_NATS_LOG === "1";
    const child = spawn(this.spec.bin, ["-c", this.spec.configFile, ...this.spec.args], {
      env: { ...process.env, ...this.spec.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child = child;
    this.paused = false;
    live.add(this);

    let ready = false;
    let onReady: () => void = () => undefined;
    const readySeen = new Promise<void>((r) => (onReady = r));
    let partial = "";
    const onData = (chunk: Buffer): void => {
      const text = partial + chunk.toString("utf8");
      const lines = text.split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        this.logLines.push(line);
        if (echo) process.stderr.write(`[${this.spec.name}] ${line}\n`);
        if (!ready && line.includes("Server is ready")) {
          ready = true;
          onReady();
        }
      }
      if (this.logLines.length > LOG_LINES) this.logLines.splice(0, this.logLines.length - LOG_LINES);
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);

    let spawnError: Error | undefined;
    this.exited = new Promise<void>((r) => {
      child.once("error", (err) => {
        spawnError = err;
        if (this.child === child) this.child = undefined;
        live.delete(this);
        r();
      });
      child.once("exit", () => {
        if (this.child === child) this.child = undefined;
        live.delete(this);
        r();
      });
    });
    if (child.pid !== undefined) startWatchdog(child.pid, this.spec.workDir);

    const outcome = await within(
      Promise.race([readySeen.then(() => "ready" as const), this.exited.then(() => "exited" as const)]),
      this.spec.readyTimeoutMs,
      "timeout" as const,
    );
    if (outcome !== "ready") {
      this.killNow();
      await this.exited;
      const why = spawnError ? spawnError.message : outcome === "timeout" ? "not ready in time" : "exited";
      throw new ServerStartError(`${this.spec.name}: nats-server ${why}\n${this.logs()}`, this.logs());
    }
    // Ready in its log but gone, or not listening: a start that failed, with the server's
    // own words (a loaded machine once saw a cluster node say ready and refuse every
    // connection for 30 s), so that a caller can tell it from a product's failure.
    const accepting = await Promise.race([
      waitFor(`${this.spec.name} to accept connections`, () => tcpAccepts(this.spec.port), this.spec.readyTimeoutMs).then(
        () => "accepting" as const,
        (e: unknown) => (e as Error).message,
      ),
      this.exited.then(() => "exited after saying it was ready"),
    ]);
    if (accepting !== "accepting") {
      this.killNow();
      await this.exited;
      throw new ServerStartError(`${this.spec.name}: nats-server not accepting connections: ${accepting}\n${this.logs()}`, this.logs());
    }
    if (this.spec.waitHealthy) await this.waitHealthy();
  }

  /** Waits until the monitoring endpoint /healthz reports ok (JetStream is current). */
  async waitHealthy(timeoutMs = this.spec.readyTimeoutMs): Promise<void> {
    await waitHealthz(this.spec.name, this.spec.httpPort, timeoutMs);
  }

  /** Graceful stop (SIGTERM, then SIGKILL after 10 s). Keeps the store directory. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    if (this.paused) this.resume();
    child.kill("SIGTERM");
    const done = await within(this.exited.then(() => true), 10_000, false);
    if (!done) {
      child.kill("SIGKILL");
      await this.exited;
    }
  }

  /** Sends a signal (default SIGKILL, a crash) and waits for the process to end. */
  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    const child = this.child;
    if (!child) return;
    if (this.paused && signal !== "SIGKILL") this.resume();
    child.kill(signal);
    await this.exited;
  }

  killNow(): void {
    try {
      this.child?.kill("SIGKILL");
    } catch {
      // already gone
    }
  }

  /** Stops (gracefully) if running and starts again with the same ports and store directory. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /**
   * SIGSTOP: the server stops responding but keeps its sockets open. Returns once every
   * thread is stopped: the signal reaches the threads asynchronously, and a request sent
   * right after kill() could still be answered.
   */
  pause(): void {
    if (!this.child) throw new Error(`${this.spec.name}: not running`);
    this.child.kill("SIGSTOP");
    if (this.child.pid !== undefined) waitAllThreadsStopped(this.child.pid);
    this.paused = true;
  }

  /** SIGCONT after pause(). */
  resume(): void {
    if (!this.child) throw new Error(`${this.spec.name}: not running`);
    this.child.kill("SIGCONT");
    this.paused = false;
  }

  /** Stops the server and removes its directory; the handle cannot be restarted. */
  async close(): Promise<void> {
    await this.kill("SIGKILL");
    this.closed = true;
    removeTempDir(this.spec.workDir);
  }
}

export class ServerStartError extends Error {
  constructor(
    message: string,
    readonly log: string,
  ) {
    super(message);
    this.name = "ServerStartError";
  }
}

// ---------------------------------------------------------------------------------------
// Public API for a standalone server

export interface StartServerOptions {
  /** Which installed server to run; default from JETLOOP_NATS_SERVER (newest). */
  flavor?: ServerFlavor;
  /** Explicit binary; default NATS_SERVER_BIN or .nats/bin/nats-server-<flavor>. */
  bin?: string;
  /**
   * Base configuration file; default deploy/nats/single.conf. It may reference
   * $NATS_SERVER_NAME, $NATS_HOST, $NATS_CLIENT_PORT, $NATS_HTTP_PORT, $NATS_STORE_DIR.
   */
  configFile?: string;
  /**
   * Extra configuration appended to the base file (later keys win; use it for
   * authorization, accounts, limits ...). Written to a temp file.
   */
  configText?: string;
  /** Extra command-line arguments for nats-server. */
  args?: string[];
  /** Extra environment variables for the server process. */
  env?: Record<string, string>;
  /** Server name; default a unique "s…" name (uniqueNamespace). */
  name?: string;
  /** Fixed ports (default: free ones). */
  port?: number;
  httpPort?: number;
  /** Default 20 s. */
  readyTimeoutMs?: number;
}

export interface NatsServer {
  /** nats://127.0.0.1:<port> */
  readonly url: string;
  readonly port: number;
  /** Monitoring base URL, http://127.0.0.1:<httpPort> */
  readonly monitorUrl: string;
  readonly httpPort: number;
  readonly storeDir: string;
  /** The configuration file the server runs (generated when configText was given). */
  readonly configFile: string;
  readonly name: string;
  /** e.g. "2.10.27" */
  readonly version: string;
  readonly running: boolean;
  readonly pid: number | undefined;
  /** Graceful stop (SIGTERM); the store directory stays, so restart() recovers it. */
  stop(): Promise<void>;
  /** Signal (default SIGKILL) and wait for the process to end. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** stop() if running, then start on the same ports and store directory. */
  restart(): Promise<void>;
  /** SIGSTOP / SIGCONT. */
  pause(): void;
  resume(): void;
  /** Kill and remove the temp directory. Also done automatically at process exit. */
  close(): Promise<void>;
  /** Last log lines of the server. */
  logs(): string;
  /** Wait for /healthz to report ok. */
  waitHealthy(timeoutMs?: number): Promise<void>;
}

function isAddrInUse(err: unknown): boolean {
  return err instanceof ServerStartError && /address already in use/i.test(err.log);
}

/** Default ready timeout of a standalone server. */
export const SERVER_READY_TIMEOUT_MS = 20_000;

/** Writes configFile + configText into dir/nats.conf when there is extra text. */
export function prepareConfig(dir: string, configFile: string, configText: string | undefined): string {
  if (configText === undefined) return configFile;
  const out = join(dir, "nats.conf");
  writeFileSync(out, `${readFileSync(configFile, "utf8")}\n# --- added by the test\n${configText}\n`);
  return out;
}

/** The NatsServer view of a server process or container. */
export function serverFacade(p: ServerHandle): NatsServer {
  const s = p.spec;
  return {
    url: `nats://${HOST}:${s.port}`,
    port: s.port,
    monitorUrl: `http://${HOST}:${s.httpPort}`,
    httpPort: s.httpPort,
    storeDir: s.storeDir,
    configFile: s.configFile,
    name: s.name,
    get version() {
      return p.version;
    },
    get running() {
      return p.running;
    },
    get pid() {
      return p.pid;
    },
    stop: () => p.stop(),
    kill: (signal?: NodeJS.Signals) => p.kill(signal),
    restart: () => p.restart(),
    pause: () => p.pause(),
    resume: () => p.resume(),
    close: () => p.close(),
    logs: () => p.logs(),
    waitHealthy: (timeoutMs?: number) => p.waitHealthy(timeoutMs),
  };
}

/**
 * Starts one JetStream nats-server on free loopback ports and waits until it is healthy:
 * a process, or a container where the harness runs on containers (backend.ts).
 */
export async function startServer(opts: StartServerOptions = {}): Promise<NatsServer> {
  if ((await harnessBackend()) === "containers") return (await import("./containers.js")).startContainerServer(opts);
  const bin = opts.bin ?? findServerBinary(opts.flavor);
  const fixedPorts = opts.port !== undefined || opts.httpPort !== undefined;
  for (let attempt = 1; ; attempt++) {
    const workDir = makeTempDir();
    const name = opts.name ?? uniqueNamespace("s");
    const port = opts.port ?? (await freePort());
    const httpPort = opts.httpPort ?? (await freePort());
    const storeDir = join(workDir, "store");
    const configFile = prepareConfig(workDir, opts.configFile ?? SINGLE_CONF, opts.configText);
    const p = new ServerProcess({
      bin,
      name,
      configFile,
      env: {
        NATS_SERVER_NAME: name,
        NATS_HOST: HOST,
        NATS_CLIENT_PORT: String(port),
        NATS_HTTP_PORT: String(httpPort),
        NATS_STORE_DIR: storeDir,
        ...opts.env,
      },
      args: opts.args ?? [],
      port,
      httpPort,
      storeDir,
      workDir,
      waitHealthy: true,
      readyTimeoutMs: opts.readyTimeoutMs ?? SERVER_READY_TIMEOUT_MS,
    });
    try {
      await p.start();
      return serverFacade(p);
    } catch (err) {
      removeTempDir(workDir);
      if (!fixedPorts && attempt < 4 && isAddrInUse(err)) continue;
      throw err;
    }
  }
}
