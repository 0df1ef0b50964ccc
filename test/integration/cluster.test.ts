// jetloop on the repository's three-node cluster configuration (deploy/nats/cluster.conf,
// the file docker-compose.yml runs): the journal gets three replicas by default.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, type Jetloop, newId } from "../../src/index.js";
import { provisionOnCluster, startCluster, type NatsCluster } from "../harness/cluster.js";
import { uniqueNamespace } from "../harness/context.js";

let cluster: NatsCluster;
let bus: Jetloop;

beforeAll(async () => {
  cluster = await startCluster();
  await cluster.waitReady();
  bus = await connect({ servers: cluster.urls, namespace: uniqueNamespace() });
}, 60_000);

afterAll(async () => {
  await bus?.close();
  await cluster?.close();
});

describe("on a three-node cluster", () => {
  it("provisions a three-replica journal and carries events through it", async () => {
    await provisionOnCluster(() => bus.provision());
    // created by this test (a timed-out first attempt may have created it already)
    expect((await bus.provision()).action).toBe("unchanged");
    const info = await (await bus.jetstreamManager()).streams.info(bus.stream);
    expect(info.config.num_replicas).toBe(3);
    expect(info.cluster?.replicas?.length).toBe(2);

    const sessionId = newId();
    const loopId = newId();
    const sub = await bus.session(sessionId).subscribeEvents({ enduring: { loops: [loopId] } }, { start: "all" });
    const published = await bus.publishAll(Array.from({ length: 50 }, () => createEvent("LoopIdle", { sessionId, loopId })));
    const seqs: number[] = [];
    for await (const d of sub) {
      seqs.push(d.journalSeq);
      if (seqs.length === published.length) break;
    }
    // A resent append (an ack lost under load) may be stored after a later one: compare sets.
    expect(seqs).toEqual(published.map((p) => p.journalSeq).sort((a, b) => a - b));
  }, 120_000);
});
