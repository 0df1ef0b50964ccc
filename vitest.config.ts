import { defineConfig } from "vitest/config";
import type { TestProjectInlineConfiguration } from "vitest/config";

// Unit tests cover pure code; integration tests talk to real nats-server processes
// that the harness starts (see test/harness/README.md). The integration tests run
// twice: against the oldest supported nats-server (2.10) and the newest one. With
// NATS_URL set they run once, against that server.
const integration = (flavor: "oldest" | "newest"): TestProjectInlineConfiguration => ({
  test: {
    name: `integration-${flavor}`,
    include: ["test/integration/**/*.test.ts"],
    // Three-replica journals run against the newest server only: in this harness a fresh
    // 2.10 cluster intermittently refuses placement ("no suitable peers") for over a
    // minute under load. `npm run reliability:soak` runs the leader-kill scenario on 2.10.
    exclude: flavor === "oldest" ? ["test/integration/cluster.test.ts", "test/integration/reliability/leader-kill.test.ts"] : [],
    globalSetup: ["test/harness/global-setup.ts"],
    // Read by the globalSetup (project.config.env) and by servers the tests start.
    env: { JETLOOP_NATS_SERVER: flavor },
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts", "test/conformance/**/*.test.ts"],
        },
      },
      integration("newest"),
      ...(process.env.NATS_URL ? [] : [integration("oldest")]),
    ],
  },
});
