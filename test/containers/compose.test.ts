// docker-compose.yml, the cluster users run, brought up for real by a compose
// implementation; then RELIABILITY.md's scenario 2 on it: the stream leader killed with
// `docker kill` mid-load and started again.
import { describe, it } from "vitest";
import { expectNothingLost } from "../harness/reliability/expect-leader-kill.js";
import { startComposeCluster } from "../harness/compose.js";
import { imageFor } from "../harness/containers.js";
import { leaderKillScenario } from "../harness/reliability/scenarios/leader-kill.js";

describe("docker-compose.yml brought up for real", () => {
  it("elects a leader, places an R3 journal, and loses nothing when the stream leader is docker-killed", async () => {
    const say = (line: string): void => console.log(`[compose] ${line.trim()}`);
    const r = await leaderKillScenario(
      { run: "compose", log: say },
      {
        events: 300,
        ratePerSec: 200,
        killAfter: 100,
        downMs: 2000,
        cluster: async () => {
          const image = await imageFor("newest");
          const c = await startComposeCluster({ image });
          say(`up and healthy (the file's healthcheck) with NATS_IMAGE=${image}: ${c.nodes.map((n) => `${n.name} (nats-server ${n.version}) at ${n.url}`).join(", ")}; meta leader ${await c.metaLeader()}`);
          return c;
        },
      },
    );
    say(`journal: ${r.journal.published} published, ${r.journal.lost} lost, ${r.journal.duplicated} duplicated; replicas current: ${r.replicasCurrent}`);

    expectNothingLost(r, 300);
  }, 150_000);
});
