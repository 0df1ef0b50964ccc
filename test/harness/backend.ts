// Which kind of nats-server the harness starts: processes (the binaries in .nats/bin) or
// containers (testcontainers, containers.ts). JETLOOP_NATS_BACKEND chooses:
//   auto (default)  containers where a Docker engine answers, processes otherwise
//   containers      containers; fails when no engine answers
//   processes       processes
// vitest.config.ts resolves the setting once per run, says what it chose, and gives the
// concrete choice to every project's env, so workers and the globalSetup do not ask again.

export type Backend = "processes" | "containers";
export type BackendSetting = Backend | "auto";

export interface BackendChoice {
  readonly backend: Backend;
  /** Why, for the one line the run prints: the engine that answered, or why none did. */
  readonly reason: string;
}

/** JETLOOP_NATS_BACKEND, checked. */
export function backendSetting(env: NodeJS.ProcessEnv = process.env): BackendSetting {
  const v = env.JETLOOP_NATS_BACKEND?.trim() || "auto";
  if (v !== "auto" && v !== "containers" && v !== "processes") {
    throw new Error(`JETLOOP_NATS_BACKEND must be "auto", "containers" or "processes", not ${JSON.stringify(v)}`);
  }
  return v;
}

/**
 * Settings testcontainers needs on an engine without a registry (scripts/docker-engine.sh):
 * no reaper (its image cannot be pulled; the harness and the script remove containers by the
 * org.testcontainers=true label), and the engine on localhost (a /.dockerenv file would make
 * it look for a gateway address). Explicit values win.
 */
export function testcontainersDefaults(): void {
  process.env.TESTCONTAINERS_RYUK_DISABLED ??= "true";
  process.env.TESTCONTAINERS_HOST_OVERRIDE ??= "localhost";
}

/** Whether a container engine answers, and which. */
export async function probeEngine(): Promise<{ ok: true; engine: string } | { ok: false; why: string }> {
  testcontainersDefaults();
  try {
    const { getContainerRuntimeClient } = await import("testcontainers");
    const client = await getContainerRuntimeClient();
    const rt = client.info.containerRuntime;
    return { ok: true, engine: `Docker ${rt.serverVersion} at ${process.env.DOCKER_HOST ?? rt.remoteSocketPath}` };
  } catch (err) {
    return { ok: false, why: err instanceof Error ? err.message.split("\n")[0] ?? err.name : String(err) };
  }
}

export async function resolveBackend(setting: BackendSetting = backendSetting()): Promise<BackendChoice> {
  if (setting === "processes") return { backend: "processes", reason: "JETLOOP_NATS_BACKEND=processes" };
  const probe = await probeEngine();
  if (probe.ok) return { backend: "containers", reason: probe.engine };
  if (setting === "containers") {
    throw new Error(
      `JETLOOP_NATS_BACKEND=containers, but no container engine answers (${probe.why}). ` +
        `Start one (bash scripts/docker-engine.sh start) and export DOCKER_HOST, or unset JETLOOP_NATS_BACKEND.`,
    );
  }
  return { backend: "processes", reason: `no container engine answered (${probe.why})` };
}

let resolved: Promise<Backend> | undefined;

/**
 * The backend of this process. In a vitest run the setting is already concrete (see above).
 * Scripts outside vitest (bench, reliability soak) run processes unless JETLOOP_NATS_BACKEND
 * is set, so their figures do not change with whether a Docker engine happens to answer.
 */
export function harnessBackend(): Promise<Backend> {
  resolved ??= process.env.JETLOOP_NATS_BACKEND?.trim()
    ? resolveBackend().then((c) => c.backend)
    : Promise.resolve("processes");
  return resolved;
}
