// jetloop on the repository's three-node cluster configuration (deploy/nats/cluster.conf,
// the file docker-compose.yml runs): the journal gets three replicas by default.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, type Jetloop, newId } from "../../src/index.js";
import { provisionOnCluster, startCluster, type NatsCluster } from "../harness/cluster.js";
import { uniqueNamespace } from "../harness/context.js";
import { REPO_ROOT } from "../harness/server.js";

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

describe("the strict durability profile (deploy/nats/cluster-strict.conf)", () => {
  let strict: NatsCluster;
  let strictBus: Jetloop;
  beforeAll(async () => {
    strict = await startCluster({ configFile: join(REPO_ROOT, "deploy/nats/cluster-strict.conf") });
    await strict.waitReady();
    strictBus = await connect({ servers: strict.urls, namespace: uniqueNamespace() });
  }, 60_000);
  afterAll(async () => {
    await strictBus?.close();
    await strict?.close();
  });

  it("provisions replicas 3 on file storage with no warning on a strict cluster; verify warns of every node of a default one", async () => {
    const monitor = strict.nodes.map((n) => n.monitorUrl);
    await provisionOnCluster(() => strictBus.provision({ durability: "strict", monitor }));
    const verified = await strictBus.provision({ mode: "verify", durability: "strict", monitor });
    expect(verified).toMatchObject({ action: "unchanged", durability: { profile: "strict", warnings: [] } });
    expect(verified.durability.settings.map((s) => s.syncAlways)).toEqual([true, true, true]);
    const info = await (await strictBus.jetstreamManager()).streams.info(strictBus.stream);
    expect(info.config).toMatchObject({ num_replicas: 3, storage: "file" });
    expect(await strictBus.provision({ mode: "verify", durability: "strict", replicas: 1, monitor }).catch((e: unknown) => e)).toMatchObject({ code: "OPTIONS_INVALID", option: "replicas" });

    // The default cluster (deploy/nats/cluster.conf) acknowledges before syncing: each node is named.
    await provisionOnCluster(() => bus.provision());
    const onDefault = await bus.provision({ mode: "verify", durability: "strict", monitor: cluster.nodes.map((n) => n.monitorUrl) });
    expect(onDefault.durability.warnings.map((w) => w.monitorUrl)).toEqual(cluster.nodes.map((n) => n.monitorUrl));
    expect(onDefault.durability.warnings.every((w) => w.message.includes("acknowledges appends before syncing"))).toBe(true);
    expect((await bus.consumers({ monitor: cluster.nodes.map((n) => n.monitorUrl) })).durabilityWarnings).toHaveLength(3);
    expect((await strictBus.consumers({ monitor })).durabilityWarnings).toEqual([]);
    // And the events go through.
    const sessionId = newId();
    const published = await strictBus.publishAll(Array.from({ length: 20 }, () => createEvent("SessionStarted", { sessionId })));
    expect(published.every((p) => !p.duplicate)).toBe(true);
  }, 180_000);
});
