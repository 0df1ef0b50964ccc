import { defineConfig } from "vitest/config";
import type { TestProjectInlineConfiguration } from "vitest/config";
import { availableParallelism } from "node:os";
import { resolveBackend, type Backend } from "./test/harness/backend.js";
import LongestFirst from "./test/harness/sequencer.js";

/**
 * Integration files that run against the newest server only. The others (the SDK against
 * the server: publishing, every subscription kind, replay, provisioning, parking, the
 * answer path, the reliability scenarios) run on both, since what they prove can differ by
 * server version. These do not: they are the layers above the SDK (the CLI's parsing and
 * output, the HTTP gateway and its page, the packed README, the walkthroughs), which reach
 * the server only through code the files above already run on 2.10. They were 494 s of
 * the 646 s the integration tests took per server (measured per file, see .ci/run).
 */
const NEWEST_ONLY = [
  "test/integration/cli.test.ts",
  // Processes on a terminal and their logs: nothing of the server version in them.
  "test/integration/cli-logs.test.ts",
  "test/integration/bad-input.test.ts",
  "test/integration/readme.test.ts",
  "test/integration/walkthroughs.test.ts",
  "test/integration/gateway/**",
  // Three-replica journals: in this harness a fresh 2.10 cluster intermittently refuses
  // placement ("no suitable peers") for over a minute under load. `npm run
  // reliability:soak` runs the leader-kill scenario on 2.10.
  "test/integration/cluster.test.ts",
  "test/integration/harness-cluster.test.ts",
  "test/integration/read-placement.test.ts",
  "test/integration/read-placement-adversary.test.ts",
  "test/integration/reliability/leader-kill.test.ts",
  "test/integration/reliability/shard-leader-kill.test.ts",
  // No nats-server at all: the benchmark's CPU groups (cgroups of this kernel).
  "test/integration/bench-cpu-budget.test.ts",
  // The Go runtime's store as recorded on nats-server 2.15 (its stream configurations), and
  // the attach's fence on a session's journal subjects, which needs 2.11+.
  "test/integration/attach-go-store.test.ts",
  "test/integration/attach-kill.test.ts",
  "test/integration/attach-permissions.test.ts",
  "test/integration/attach-many.test.ts",
  "test/integration/attach-lease.test.ts",
  "test/integration/attach-http.test.ts",
  "test/integration/go-interop-doc.test.ts",
];

/**
 * How many files run at once. vitest's default, one less than the cores, is one file at a
 * time on a 2-core CI machine. The unit files are CPU-bound (property runs): one per core.
 * The integration files mostly wait on servers, processes and timers: one more than the
 * cores (JETLOOP_TEST_WORKERS overrides it), capped to bound the servers, clusters and
 * Chromiums alive at once on a big machine. Not more: their CPU (about 300 s for both
 * servers) would saturate two cores, and the tests with 200 ms ack waits and backoffs
 * are the first to fail on a saturated machine (seen with four on a loaded one).
 * The two kinds run one after the other (groupOrder), so an integration file's timing
 * never competes with a core-bound property run.
 */
const CORES = availableParallelism();
function serverWorkers(): number {
  const asked = process.env.JETLOOP_TEST_WORKERS;
  if (asked === undefined) return Math.min(8, CORES + 1);
  const n = Number(asked);
  if (!Number.isInteger(n) || n < 1) throw new Error(`JETLOOP_TEST_WORKERS must be a whole number of at least 1, not ${JSON.stringify(asked)}`);
  return n;
}

/**
 * Whether a worker's integration files share one module graph (the default: the package
 * and the harness imported once per worker, not once per file), or each file imports them
 * anew (JETLOOP_TEST_ISOLATE=1, vitest's own default: a process per file). Measured back
 * to back on a loaded machine: 25 files on two workers 205 s wall isolated, 150 s shared;
 * 9 files on one 185 s and 109 s. Sharing is safe because a file leaves nothing running
 * in its worker: each closes its buses, servers and children (a probe of the worker's
 * active handles after every file found none but vitest's own pipes and a few HTTP
 * keep-alive timers), src/ keeps no per-bus state at module level, and the harness's
 * per-file hooks live in setup files (file-hooks.ts; quiet-logs.ts wraps stderr once per
 * process). A file's event-loop lag was the same either way (group-lapsed-settle after
 * the CLI file: p99 51 ms shared, 53 ms isolated).
 */
function isolateServerFiles(): boolean {
  const asked = process.env.JETLOOP_TEST_ISOLATE;
  if (asked === undefined || asked === "0") return false;
  if (asked === "1") return true;
  throw new Error(`JETLOOP_TEST_ISOLATE must be 0 or 1, not ${JSON.stringify(asked)}`);
}

// Unit tests cover pure code; integration tests talk to real nats-server processes or
// containers that the harness starts (see test/harness/README.md). The integration tests
// run against the newest nats-server and, but for NEWEST_ONLY, the oldest supported one
// (2.10). With NATS_URL set they run once, against that server.
const integration = (flavor: "oldest" | "newest", backend: Backend): TestProjectInlineConfiguration => ({
  test: {
    name: `integration-${flavor}`,
    include: ["test/integration/**/*.test.ts"],
    exclude: flavor === "oldest" ? NEWEST_ONLY : [],
    globalSetup: ["test/harness/global-setup.ts"],
    // The bus's warnings are shown for failing tests only (quiet-logs.ts); each file's
    // connections closed after it (file-hooks.ts).
    setupFiles: ["test/harness/quiet-logs.ts", "test/harness/file-hooks.ts", "test/harness/property-seed.ts"],
    isolate: isolateServerFiles(),
    // Read by the globalSetup (project.config.env) and by servers the tests start.
    env: { JETLOOP_NATS_SERVER: flavor, JETLOOP_NATS_BACKEND: backend },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    maxWorkers: serverWorkers(),
    sequence: { groupOrder: 1 },
  },
});

// What only containers can do: docker-compose.yml brought up, the stock testcontainers
// NATS module. A project only when the harness runs on containers.
const containers: TestProjectInlineConfiguration = {
  test: {
    name: "containers",
    include: ["test/containers/**/*.test.ts"],
    env: { JETLOOP_NATS_SERVER: "newest", JETLOOP_NATS_BACKEND: "containers" },
    setupFiles: ["test/harness/property-seed.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    maxWorkers: serverWorkers(),
    sequence: { groupOrder: 1 },
  },
};

/** The --project names on the command line (none: all projects). */
function selectedProjects(argv: string[]): string[] {
  const names: string[] = [];
  argv.forEach((a, i) => {
    if (a === "--project" && argv[i + 1]) names.push(argv[i + 1] ?? "");
    else if (a.startsWith("--project=")) names.push(a.slice("--project=".length));
  });
  return names;
}

export default defineConfig(async () => {
  const selected = selectedProjects(process.argv);
  const needsServers = selected.length === 0 || selected.some((p) => p !== "unit");
  // Resolved once per run (JETLOOP_NATS_BACKEND, backend.ts) and said once; the concrete
  // choice goes to the globalSetup and the workers through the environment.
  let backend: Backend = "processes";
  if (needsServers) {
    const choice = await resolveBackend();
    backend = choice.backend;
    process.env.JETLOOP_NATS_BACKEND = backend;
    console.log(
      backend === "containers"
        ? `[jetloop] nats-server in containers: ${choice.reason}`
        : `[jetloop] nats-server as processes: ${choice.reason}; test/containers/ (docker-compose.yml) runs only on containers, not in this run`,
    );
  }
  return {
    test: {
      // Longest first across the projects of a group (test/harness/sequencer.ts).
      sequence: { sequencer: LongestFirst },
      projects: [
        {
          test: {
            name: "unit",
            include: ["test/unit/**/*.test.ts", "test/conformance/**/*.test.ts"],
            maxWorkers: CORES,
            // A guard against a hang, not a measure: the largest properties take 1-2.5 s on an
            // idle 2-core machine and passed 5 s (vitest's default) on a loaded one.
            testTimeout: 20_000,
            // fast-check's seed: JETLOOP_SEED, printed beside a failing test (property.ts).
            setupFiles: ["test/harness/property-seed.ts"],
            sequence: { groupOrder: 0 },
            // Pure code: a worker's files share one module graph (imported once, not per file).
            isolate: false,
          },
        },
        integration("newest", backend),
        ...(process.env.NATS_URL ? [] : [integration("oldest", backend)]),
        ...(backend === "containers" ? [containers] : []),
      ],
    },
  };
});
