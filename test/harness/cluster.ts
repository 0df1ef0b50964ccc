// Starts a JetStream cluster from deploy/nats/cluster.conf (the file docker-compose.yml
// uses) with free loopback ports passed in through the config's environment variables:
// processes here, containers in containers.ts (backend.ts chooses).
import { join } from "node:path";
import { CLUSTER_CONF, ServerProcess, findServerBinary, freePort, makeTempDir, prepareConfig, serverFacade, type NatsServer, type ServerFlavor, type ServerHandle } from "./server.js";
import { uniqueNamespace } from "./namespace.js";
import { sleep, waitFor } from "./async.js";
import { harnessBackend } from "./backend.js";

export interface StartClusterOptions {
  /** Number of nodes; default 3. */
  size?: number;
  flavor?: ServerFlavor;
  bin?: string;
  /** Default deploy/nats/cluster.conf. */
  configFile?: string;
  /** Extra configuration appended to the file for every node. */
  configText?: string;
  /** Default 30 s. */
  readyTimeoutMs?: number;
}

export interface ClusterNode extends NatsServer {
  readonly clusterPort: number;
}

export interface NatsCluster {
  readonly nodes: ClusterNode[];
  /** Client URLs of all nodes (pass them all as `servers`). */
  readonly urls: string[];
  readonly version: string;
  /**
   * Waits until every running node reports a JetStream meta leader and /healthz ok.
   * Use after restarting nodes. Returns the meta leader's server name.
   */
  waitReady(timeoutMs?: number): Promise<string>;
  /** The current meta leader's server name, as seen by the running nodes. */
  metaLeader(): Promise<string>;
  /** The node with that server name. */
  node(name: string): ClusterNode;
  /** Stops all nodes (graceful), keeping their data. */
  stop(): Promise<void>;
  /** Kills all nodes and removes their directories. */
  close(): Promise<void>;
}

interface Jsz {
  meta_cluster?: { leader?: string; cluster_size?: number };
}

async function jsz(monitorUrl: string): Promise<Jsz> {
  const res = await fetch(`${monitorUrl}/jsz`);
  if (!res.ok) throw new Error(`/jsz: HTTP ${res.status}`);
  return (await res.json()) as Jsz;
}

/**
 * Starts a JetStream cluster and waits until it has a meta leader. A free port can be
 * taken by another process before a node binds it, and a fresh cluster beside others on a
 * loaded machine has once elected no meta leader in 30 s (a clone-alone run: two nodes
 * answering, neither with a leader), and once a node that said it was ready and accepted no
 * connection; such a start is tried again on new ports and folders.
 */
export async function startCluster(opts: StartClusterOptions = {}): Promise<NatsCluster> {
  if ((await harnessBackend()) === "containers") return (await import("./containers.js")).startContainerCluster(opts);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startClusterOnce(opts);
    } catch (e) {
      if (attempt >= 3 || !/address already in use|meta leader|not accepting connections/.test(String((e as Error).message))) throw e;
    }
  }
}

async function startClusterOnce(opts: StartClusterOptions): Promise<NatsCluster> {
  const size = opts.size ?? 3;
  const bin = opts.bin ?? findServerBinary(opts.flavor);
  const readyTimeoutMs = opts.readyTimeoutMs ?? 30_000;
  const base = uniqueNamespace("c");
  const specs: { name: string; port: number; clusterPort: number; httpPort: number }[] = [];
  for (let i = 1; i <= size; i++) {
    specs.push({ name: `${base}-n${i}`, port: await freePort(), clusterPort: await freePort(), httpPort: await freePort() });
  }
  const routes = `[${specs.map((s) => `nats://127.0.0.1:${s.clusterPort}`).join(", ")}]`;
  const procs = specs.map((s) => {
    const workDir = makeTempDir();
    const storeDir = join(workDir, "store");
    return new ServerProcess({
      bin,
      name: s.name,
      configFile: prepareConfig(workDir, opts.configFile ?? CLUSTER_CONF, opts.configText),
      env: {
        NATS_SERVER_NAME: s.name,
        NATS_HOST: "127.0.0.1",
        NATS_CLIENT_PORT: String(s.port),
        NATS_CLUSTER_PORT: String(s.clusterPort),
        NATS_HTTP_PORT: String(s.httpPort),
        NATS_CLUSTER_ROUTES: routes,
        NATS_STORE_DIR: storeDir,
      },
      args: [],
      port: s.port,
      httpPort: s.httpPort,
      storeDir,
      workDir,
      waitHealthy: false,
      readyTimeoutMs,
    });
  });
  return launchCluster(
    procs,
    specs.map((s) => s.clusterPort),
    readyTimeoutMs,
    async () => {
      await Promise.all(procs.map((p) => p.close()));
    },
  );
}

/**
 * The NatsCluster over started or not yet started servers (processes or containers): starts
 * those not running, waits for the meta leader, and removes everything if that fails.
 */
export async function launchCluster(
  servers: ServerHandle[],
  clusterPorts: number[],
  readyTimeoutMs: number,
  close: () => Promise<void>,
): Promise<NatsCluster> {
  const nodes: ClusterNode[] = servers.map((p, i) => {
    const facade = serverFacade(p) as ClusterNode;
    Object.defineProperty(facade, "clusterPort", { value: clusterPorts[i], enumerable: true });
    return facade;
  });

  const metaLeader = async (): Promise<string> => {
    const running = nodes.filter((n) => n.running);
    const leaders = await Promise.all(running.map(async (n) => (await jsz(n.monitorUrl)).meta_cluster?.leader ?? ""));
    const first = leaders[0];
    if (!first || leaders.some((l) => l !== first)) {
      throw new Error(`no agreed meta leader yet (${leaders.map((l) => l || "-").join(", ")})`);
    }
    return first;
  };

  const waitReady = async (timeoutMs = readyTimeoutMs): Promise<string> => {
    const leader = await waitFor("the cluster's JetStream meta leader", metaLeader, timeoutMs, 200);
    await Promise.all(servers.filter((p) => p.running).map((p) => p.waitHealthy(timeoutMs)));
    return leader;
  };

  try {
    await Promise.all(servers.filter((p) => !p.running).map((p) => p.start()));
    await waitReady();
  } catch (err) {
    await close();
    throw err;
  }

  return {
    nodes,
    urls: nodes.map((n) => n.url),
    version: servers[0]?.version ?? "",
    waitReady,
    metaLeader,
    node(name: string): ClusterNode {
      const n = nodes.find((x) => x.name === name);
      if (!n) throw new Error(`no node named ${name}`);
      return n;
    },
    stop: async () => {
      await Promise.all(servers.map((p) => p.stop()));
    },
    close,
  };
}

/**
 * Provisions once every peer can take a replica: right after the meta leader is elected,
 * a fresh cluster may still answer "no suitable peers for placement", or not answer in
 * time, for a while (2.10 under load: over 20 s). Provisioning is idempotent, so trying
 * again is safe.
 */
export async function provisionOnCluster(provision: () => Promise<unknown>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await provision();
      return;
    } catch (e) {
      if (Date.now() > deadline || !/suitable peers|peer offline|insufficient resources|timeout/i.test(String((e as Error).message) + String((e as { cause?: Error }).cause?.message))) throw e;
      await sleep(250);
    }
  }
}
