// docker-compose.yml, the cluster users run, brought up for real by a compose
// implementation; then RELIABILITY.md's scenario 2 on it: the stream leader killed with
// `docker kill` mid-load and started again.
import { describe, expect, it } from "vitest";
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

    expect(r.newLeader).not.toBe("");
    expect(r.newLeader).not.toBe(r.oldLeader);
    expect(r.outcomes.filter((o) => o.status === "failed" && !o.typed)).toEqual([]);
    expect(r.republished.every((o) => o.status === "acked")).toBe(true);
    const acked = new Set([...r.outcomes, ...r.republished].filter((o) => o.status === "acked").map((o) => o.eventId));
    expect(acked.size).toBe(300);
    expect(r.journal).toMatchObject({ published: 300, lost: 0, duplicated: 0, unexpected: 0, messages: 300 });
    expect(r.ordered).toMatchObject({ lost: 0, duplicated: 0, unexpected: 0 });
    expect(r.replicasCurrent).toBe(true);
  }, 150_000);
});
