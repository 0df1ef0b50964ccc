// docker-compose.yml brought up for real, by a compose implementation (`docker compose`, or
// the standalone `docker-compose` that scripts/docker-engine.sh installs from Debian),
// through testcontainers' DockerComposeEnvironment. The nodes are the containers compose
// made: their server names, host ports and configuration are read from them, not restated
// here, so the file users run is the file tested.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { DockerComposeEnvironment, Wait } from "testcontainers";
import { testcontainersDefaults } from "./backend.js";
import { launchCluster, type NatsCluster } from "./cluster.js";
import { ServerContainer, docker, imageFor } from "./containers.js";
import { REPO_ROOT } from "./server.js";
import { uniqueNamespace } from "./namespace.js";

export const COMPOSE_FILE = "docker-compose.yml";

/** Whether to run the standalone docker-compose: when the docker CLI has no compose plugin. */
async function standaloneCompose(): Promise<boolean> {
  const ok = (cmd: string, args: string[]): Promise<boolean> =>
    promisify(execFile)(cmd, args).then(
      () => true,
      () => false,
    );
  if (await ok("docker", ["compose", "version"])) return false;
  if (await ok("docker-compose", ["version"])) return true;
  throw new Error("no compose implementation: neither `docker compose` nor `docker-compose` runs (bash scripts/docker-engine.sh start installs one)");
}

interface Inspected {
  Id: string;
  Config: { Env: string[]; Image: string; Cmd: string[] | null };
  Mounts: { Source: string; Destination: string }[];
  NetworkSettings: { Ports: Record<string, { HostIp: string; HostPort: string }[] | null> };
}

function hostPort(c: Inspected, containerPort: number): number {
  const binding = c.NetworkSettings.Ports[`${containerPort}/tcp`]?.[0];
  if (!binding) throw new Error(`container ${c.Id.slice(0, 12)} publishes no port for ${containerPort}`);
  return Number(binding.HostPort);
}

function envValue(c: Inspected, name: string): string {
  const entry = c.Config.Env.find((e) => e.startsWith(`${name}=`));
  if (entry === undefined) throw new Error(`container ${c.Id.slice(0, 12)} has no ${name}`);
  return entry.slice(name.length + 1);
}

/** The host file mounted where the container's command reads its configuration. */
function configSource(c: Inspected): string {
  const cmd = c.Config.Cmd ?? [];
  const at = cmd.findIndex((a) => a === "--config" || a === "-c");
  const inContainer = at >= 0 ? cmd[at + 1] : undefined;
  const mount = c.Mounts.find((m) => m.Destination === inContainer);
  if (!mount) throw new Error(`container ${c.Id.slice(0, 12)}: no mounted configuration file in ${JSON.stringify(cmd)}`);
  return mount.Source;
}

export interface ComposeClusterOptions {
  /** NATS_IMAGE for the compose file; default the harness's image for the newest flavor. */
  readonly image?: string;
  readonly readyTimeoutMs?: number;
}

/**
 * `docker compose up` on the repository's docker-compose.yml, under a project name of its
 * own, waiting for every service's healthcheck, as a NatsCluster: kill() is `docker kill`, restart() `docker start`, close() removes
 * the containers, their volumes and the network (`down -v`).
 */
export async function startComposeCluster(opts: ComposeClusterOptions = {}): Promise<NatsCluster> {
  testcontainersDefaults();
  const image = opts.image ?? (await imageFor("newest"));
  const readyTimeoutMs = opts.readyTimeoutMs ?? 60_000;
  const project = uniqueNamespace("jetloop");
  const env = await new DockerComposeEnvironment(REPO_ROOT, COMPOSE_FILE)
    .withProjectName(project)
    .withEnvironment({ NATS_IMAGE: image })
    .withClientOptions((await standaloneCompose()) ? { executable: { standalone: true } } : {})
    // The file's own healthcheck (wget /healthz): the image must have wget.
    .withDefaultWaitStrategy(Wait.forHealthCheck())
    .withStartupTimeout(readyTimeoutMs)
    .up();
  const ids = (await docker("ps", "-q", "--filter", `label=com.docker.compose.project=${project}`)).split(/\s+/).filter(Boolean);
  const inspected = JSON.parse(await docker("inspect", ...ids)) as Inspected[];
  const nodes = inspected
    .map(
      (c) =>
        new ServerContainer(
          {
            name: envValue(c, "NATS_SERVER_NAME"),
            image: c.Config.Image,
            configFile: configSource(c),
            env: {},
            args: [],
            storeDir: envValue(c, "NATS_STORE_DIR"),
            port: hostPort(c, Number(envValue(c, "NATS_CLIENT_PORT"))),
            httpPort: hostPort(c, Number(envValue(c, "NATS_HTTP_PORT"))),
            waitHealthy: false,
            readyTimeoutMs,
          },
          c.Id,
        ),
    )
    .sort((a, b) => a.spec.name.localeCompare(b.spec.name));
  const clusterPort = Number(envValue(inspected[0] as Inspected, "NATS_CLUSTER_PORT"));
  const close = async (): Promise<void> => {
    await Promise.all(nodes.map((n) => n.close()));
    await env.down({ removeVolumes: true, timeout: 0 });
  };
  try {
    await Promise.all(nodes.map((n) => n.waitStarted()));
  } catch (err) {
    await close();
    throw err;
  }
  return launchCluster(
    nodes,
    nodes.map(() => clusterPort),
    readyTimeoutMs,
    close,
  );
}
