// nats-server in containers: the same servers and clusters as the process backend
// (server.ts, cluster.ts), from the same configuration files, started with testcontainers
// and driven with the docker CLI (kill, stop, start, pause), so a test cannot tell the
// backends apart except by `pid` (undefined) and `storeDir` (a path inside the container).
// Host ports are fixed at creation, so a node killed and started again keeps its URLs.
import { execFile, spawnSync } from "node:child_process";
import { connect as tcpConnect } from "node:net";
import { promisify } from "node:util";
import { GenericContainer, Network, Wait, type StartedNetwork } from "testcontainers";
import { testcontainersDefaults } from "./backend.js";
import { launchCluster, type NatsCluster, type StartClusterOptions } from "./cluster.js";
import { CLUSTER_CONF, SERVER_READY_TIMEOUT_MS, SINGLE_CONF, findServerBinary, freePort, makeTempDir, prepareConfig, removeTempDir, serverFacade, serverFlavor, serverVersion, waitHealthz, type NatsServer, type ServerFlavor, type ServerHandle, type ServerSpecBase, type StartServerOptions } from "./server.js";
import { uniqueNamespace } from "./namespace.js";
import { waitFor } from "./async.js";

const run = promisify(execFile);

/** The images scripts/docker-engine.sh builds from the binaries in .nats/bin. */
export const LOCAL_IMAGE_REPO = "jetloop/nats-server";
/** Official images, pinned, for engines that can pull and have no local image. */
export const OFFICIAL_IMAGES: Readonly<Record<ServerFlavor, string>> = { oldest: "nats:2.10.29-alpine", newest: "nats:2.14.0-alpine" };

const CONF_IN_CONTAINER = "/etc/nats/nats.conf";
const STORE_IN_CONTAINER = "/data/jetstream";
const CLIENT_PORT = 4222;
const CLUSTER_PORT = 6222;
const HTTP_PORT = 8222;

export async function docker(...args: string[]): Promise<string> {
  const { stdout } = await run("docker", args, { encoding: "utf8" });
  return stdout.trim();
}

function dockerSync(...args: string[]): string {
  const r = spawnSync("docker", args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`docker ${args.join(" ")}: ${r.stderr.trim()}`);
  return `${r.stdout}${r.stderr}`;
}

/**
 * The image for a flavor: NATS_IMAGE if set; else the local image built from that flavor's
 * binary (scripts/docker-engine.sh), if the engine has it; else the pinned official one.
 */
export async function imageFor(flavor: ServerFlavor = serverFlavor()): Promise<string> {
  const fromEnv = process.env.NATS_IMAGE?.trim();
  if (fromEnv) return fromEnv;
  let local: string;
  try {
    local = `${LOCAL_IMAGE_REPO}:${serverVersion(findServerBinary(flavor))}`;
  } catch {
    return OFFICIAL_IMAGES[flavor];
  }
  const has = await docker("image", "inspect", "--format", "{{.Id}}", local).then(
    () => true,
    () => false,
  );
  return has ? local : OFFICIAL_IMAGES[flavor];
}

// Containers left at exit (a failed test, a crash) are removed; scripts/docker-engine.sh
// stop also removes every container labelled org.testcontainers=true.
const live = new Map<string, ServerContainer>();
let exitHookInstalled = false;
function track(id: string, c: ServerContainer): void {
  live.set(id, c);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    if (live.size > 0) spawnSync("docker", ["rm", "-f", "-v", ...live.keys()], { stdio: "ignore" });
  });
}

/** Whether a nats-server greets on this host port (docker-proxy accepts before it does). */
function natsGreets(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tcpConnect({ host: "127.0.0.1", port });
    const done = (ok: boolean): void => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(1000, () => done(false));
    s.once("data", (d: Buffer) => done(d.subarray(0, 4).toString() === "INFO"));
    s.once("error", () => done(false));
    s.once("close", () => done(false));
  });
}

async function varzVersion(httpPort: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${httpPort}/varz`);
  return ((await res.json()) as { version?: string }).version ?? "unknown";
}

/**
 * port and httpPort: host ports bound to the container's client and monitoring ports;
 * configFile: the host file the container runs; storeDir: a path inside the container.
 */
export interface ContainerSpec extends ServerSpecBase {
  readonly image: string;
  readonly env: Record<string, string>;
  readonly args: string[];
  readonly network?: StartedNetwork;
  readonly waitHealthy: boolean;
  readonly readyTimeoutMs: number;
  /** Removed when the server is closed (a generated configuration). */
  readonly workDir?: string;
}

/** One nats-server container; also adopts a running one (docker-compose.yml's, compose.ts). */
export class ServerContainer implements ServerHandle {
  private isRunning = false;
  private paused = false;
  private closed = false;
  version = "";

  constructor(
    readonly spec: ContainerSpec,
    private id?: string,
  ) {
    if (id !== undefined) {
      this.isRunning = true;
      track(id, this);
    }
  }

  get running(): boolean {
    return this.isRunning;
  }
  get pid(): undefined {
    return undefined;
  }
  get containerId(): string | undefined {
    return this.id;
  }

  async start(): Promise<void> {
    if (this.closed) throw new Error(`${this.spec.name}: closed`);
    if (this.isRunning) throw new Error(`${this.spec.name}: already running`);
    if (this.id === undefined) {
      this.id = await this.create();
      track(this.id, this);
    } else {
      await docker("start", this.id);
    }
    this.isRunning = true;
    this.paused = false;
    await this.waitStarted();
  }

  /** Waits for the server to greet clients on its host port (and /healthz, if so specified). */
  async waitStarted(): Promise<void> {
    await waitFor(`${this.spec.name} to accept NATS clients`, () => natsGreets(this.spec.port), this.spec.readyTimeoutMs, 100);
    if (!this.version) this.version = await varzVersion(this.spec.httpPort);
    if (this.spec.waitHealthy) await this.waitHealthy();
  }

  private async create(): Promise<string> {
    testcontainersDefaults();
    let c = new GenericContainer(this.spec.image)
      .withName(this.spec.name)
      .withCommand(["-c", CONF_IN_CONTAINER, ...this.spec.args])
      .withEnvironment(this.spec.env)
      .withCopyFilesToContainer([{ source: this.spec.configFile, target: CONF_IN_CONTAINER }])
      .withExposedPorts({ container: CLIENT_PORT, host: this.spec.port }, { container: HTTP_PORT, host: this.spec.httpPort })
      .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
      .withStartupTimeout(this.spec.readyTimeoutMs);
    if (this.spec.network) c = c.withNetwork(this.spec.network).withNetworkAliases(this.spec.name);
    return (await c.start()).getId();
  }

  async waitHealthy(timeoutMs = this.spec.readyTimeoutMs): Promise<void> {
    await waitHealthz(this.spec.name, this.spec.httpPort, timeoutMs);
  }

  /** docker stop: SIGTERM, SIGKILL after 10 s. The container and its store stay. */
  async stop(): Promise<void> {
    if (!this.isRunning || this.id === undefined) return;
    if (this.paused) this.resume();
    await docker("stop", "--time", "10", this.id);
    this.isRunning = false;
  }

  /** docker kill with the signal (default SIGKILL, a crash); waits for the container to end. */
  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    if (!this.isRunning || this.id === undefined) return;
    if (this.paused) this.resume();
    await docker("kill", "--signal", signal, this.id);
    await docker("wait", this.id);
    this.isRunning = false;
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** docker pause (the cgroup freezer): like SIGSTOP, the sockets stay open. */
  pause(): void {
    if (!this.isRunning || this.id === undefined) throw new Error(`${this.spec.name}: not running`);
    dockerSync("pause", this.id);
    this.paused = true;
  }

  resume(): void {
    if (!this.isRunning || this.id === undefined) throw new Error(`${this.spec.name}: not running`);
    dockerSync("unpause", this.id);
    this.paused = false;
  }

  /** Removes the container and its anonymous volumes; the handle cannot be started again. */
  async close(): Promise<void> {
    this.closed = true;
    this.isRunning = false;
    if (this.id !== undefined) {
      await docker("rm", "-f", "-v", this.id).catch(() => undefined);
      live.delete(this.id);
    }
    if (this.spec.workDir !== undefined) removeTempDir(this.spec.workDir);
  }

  logs(): string {
    if (this.id === undefined) return "";
    try {
      return dockerSync("logs", "--tail", "300", this.id);
    } catch (err) {
      return String(err);
    }
  }
}

function portTaken(err: unknown): boolean {
  return /port is already allocated|address already in use/i.test(String(err instanceof Error ? err.message : err));
}

/** startServer() on the container backend. `bin` does not apply; the flavor picks the image. */
export async function startContainerServer(opts: StartServerOptions = {}): Promise<NatsServer> {
  const image = await imageFor(opts.flavor);
  const fixedPorts = opts.port !== undefined || opts.httpPort !== undefined;
  for (let attempt = 1; ; attempt++) {
    const workDir = makeTempDir();
    const name = opts.name ?? uniqueNamespace("s");
    const c = new ServerContainer({
      name,
      image,
      configFile: prepareConfig(workDir, opts.configFile ?? SINGLE_CONF, opts.configText),
      env: {
        NATS_SERVER_NAME: name,
        NATS_HOST: "0.0.0.0",
        NATS_CLIENT_PORT: String(CLIENT_PORT),
        NATS_HTTP_PORT: String(HTTP_PORT),
        NATS_STORE_DIR: STORE_IN_CONTAINER,
        ...opts.env,
      },
      args: opts.args ?? [],
      storeDir: STORE_IN_CONTAINER,
      port: opts.port ?? (await freePort()),
      httpPort: opts.httpPort ?? (await freePort()),
      waitHealthy: true,
      readyTimeoutMs: opts.readyTimeoutMs ?? SERVER_READY_TIMEOUT_MS,
      workDir,
    });
    try {
      await c.start();
      return serverFacade(c);
    } catch (err) {
      await c.close();
      if (!fixedPorts && attempt < 4 && portTaken(err)) continue;
      throw err;
    }
  }
}

/** startCluster() on the container backend: one network, each node reachable by its name. */
export async function startContainerCluster(opts: StartClusterOptions = {}): Promise<NatsCluster> {
  const image = await imageFor(opts.flavor);
  const size = opts.size ?? 3;
  const readyTimeoutMs = opts.readyTimeoutMs ?? 30_000;
  const base = uniqueNamespace("c");
  const names = Array.from({ length: size }, (_, i) => `${base}-n${i + 1}`);
  const routes = `[${names.map((n) => `nats://${n}:${CLUSTER_PORT}`).join(", ")}]`;
  const workDir = makeTempDir();
  const configFile = prepareConfig(workDir, opts.configFile ?? CLUSTER_CONF, opts.configText);
  testcontainersDefaults();
  const network = await new Network().start();
  const nodes: ServerContainer[] = [];
  for (const name of names) {
    nodes.push(
      new ServerContainer({
        name,
        image,
        configFile,
        env: {
          NATS_SERVER_NAME: name,
          NATS_HOST: "0.0.0.0",
          NATS_CLIENT_PORT: String(CLIENT_PORT),
          NATS_CLUSTER_PORT: String(CLUSTER_PORT),
          NATS_HTTP_PORT: String(HTTP_PORT),
          NATS_CLUSTER_ROUTES: routes,
          NATS_STORE_DIR: STORE_IN_CONTAINER,
        },
        args: [],
        storeDir: STORE_IN_CONTAINER,
        port: await freePort(),
        httpPort: await freePort(),
        network,
        waitHealthy: false,
        readyTimeoutMs,
      }),
    );
  }
  return launchCluster(
    nodes,
    nodes.map(() => CLUSTER_PORT),
    readyTimeoutMs,
    async () => {
      await Promise.all(nodes.map((n) => n.close()));
      await network.stop().catch(() => undefined);
      removeTempDir(workDir);
    },
  );
}
