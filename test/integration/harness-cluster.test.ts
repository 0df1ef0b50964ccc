// Proves the test harness's three-node cluster from deploy/nats/cluster.conf. Newest server
// only, as cluster.test.ts (vitest.config.ts NEWEST_ONLY: a fresh 2.10 cluster in this
// harness can refuse placement for over a minute under load).
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import { provisionOnCluster, startCluster, type NatsCluster } from "../harness/cluster.js";
import { waitFor } from "../harness/async.js";
import { uniqueNamespace } from "../harness/context.js";

const ns = uniqueNamespace();

describe("the three-node cluster from deploy/nats/cluster.conf", () => {
  let cluster: NatsCluster | undefined;
  afterAll(async () => {
    await cluster?.close();
  });

  it("replicates a stream to three nodes and survives losing its leader", async () => {
    cluster = await startCluster();
    expect(cluster.nodes).toHaveLength(3);
    const stream = `${ns}_r3`;
    const subject = `${ns}.r3`;

    const nc = await connect({ servers: cluster.urls });
    const jsm = await jetstreamManager(nc);
    // A fresh 2.10 cluster may refuse placement for a while (see provisionOnCluster).
    await provisionOnCluster(() => jsm.streams.add({ name: stream, subjects: [subject], num_replicas: 3 }));
    expect((await jsm.streams.info(stream)).config.num_replicas).toBe(3);
    // Created is not yet led: the first publish can find no responder until the stream's
    // raft group has elected its leader (seen on containers).
    await waitFor("the stream's leader", async () => Boolean((await jsm.streams.info(stream)).cluster?.leader));
    await jetstream(nc).publish(subject, "replicated");

    const info = await jsm.streams.info(stream);
    const leader = info.cluster?.leader;
    expect(leader).toBeTruthy();
    expect(info.cluster?.replicas ?? []).toHaveLength(2);

    // Kill the stream leader; a new one is elected and the message is still there.
    await cluster.node(leader ?? "").kill();
    const nc2 = await connect({ servers: cluster.nodes.filter((n) => n.running).map((n) => n.url) });
    const jsm2 = await jetstreamManager(nc2, { timeout: 2_000, checkAPI: false });
    const newLeader = await waitFor(
      "a new stream leader",
      async () => {
        const l = (await jsm2.streams.info(stream)).cluster?.leader;
        return l && l !== leader ? l : false;
      },
      20_000,
      250,
    );
    expect(newLeader).not.toBe(leader);
    expect((await jsm2.streams.getMessage(stream, { seq: 1 }))?.string()).toBe("replicated");
    // No stream delete here: with the killed node possibly the meta leader, it can time
    // out while a new one is elected; the cluster and its store are removed anyway.
    await nc2.close();
    await nc.close();
  }, 120_000); // a cluster, a placement that 2.10 may refuse for a while, an election
});
