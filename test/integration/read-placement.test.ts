// Journal reads on a three-replica journal (src/journal/read-placement.ts): the server
// places a read's consumer on any online peer, and one still catching up counts short.
// Every read ends by its consumer's counts only on the stream leader.
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, type Jetloop, type JetloopEvent, newId, SubscriptionError } from "../../src/index.js";
import { REPLACED } from "../../src/journal/read-placement.js";
import { provisionOnCluster, startCluster, type NatsCluster } from "../harness/cluster.js";
import { uniqueNamespace } from "../harness/context.js";
import { captureLogger, type CapturedLog } from "../harness/reliability/workload.js";

let cluster: NatsCluster;
let bus: Jetloop;
let admin: NatsConnection;
let log: CapturedLog;

beforeAll(async () => {
  cluster = await startCluster();
  await cluster.waitReady();
  log = captureLogger("debug");
  bus = await connect({ servers: cluster.urls, namespace: uniqueNamespace(), logger: log.logger });
  await provisionOnCluster(() => bus.provision({ replicas: 3 }));
  admin = await natsConnect({ servers: cluster.urls });
}, 90_000);

afterAll(async () => {
  await admin?.close();
  await bus?.close();
  await cluster?.close();
});

/**
 * A session's replay. A read whose consumer cannot be created while a node restarts fails
 * typed (a request timeout), and is read again: a failure is allowed, a short read is not.
 */
async function replayed(sessionId: string): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      const ids: string[] = [];
      for await (const d of bus.session(sessionId).replay({ enduring: "all" })) ids.push(d.event.eventId);
      return ids;
    } catch (e) {
      if (!(e instanceof SubscriptionError) || attempt === 5) throw e;
    }
  }
}

function loopEvents(sessionId: string, n: number): JetloopEvent[] {
  const loopId = newId();
  return Array.from({ length: n }, () => createEvent("LoopIdle", { sessionId, loopId }));
}

/** The replicas' placement debug lines: which host each refused consumer was on. */
function replacedHosts(): string[] {
  return log.lines.map((l) => JSON.parse(l) as { msg?: string; host?: string }).filter((l) => l.msg === REPLACED).map((l) => l.host!);
}

describe("journal reads on a three-replica journal", () => {
  it("reads each range whole, every consumer placed off the leader created again", async () => {
    const sessionId = newId();
    const events = loopEvents(sessionId, 30);
    await bus.publishAll(events);
    const before = replacedHosts().length;
    // Twelve reads: the chance that none is placed on a replica first is (1/3)^12.
    for (let i = 0; i < 12; i++) expect(await replayed(sessionId)).toEqual(events.map((e) => e.eventId));
    const leader = (await (await jetstreamManager(admin)).streams.info(bus.stream)).cluster?.leader;
    const refused = replacedHosts().slice(before);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused).not.toContain(leader);
  }, 60_000);

  it("reads the whole range, and finds every stored event, while a restarted replica catches up", async () => {
    const jsm = await jetstreamManager(admin);
    const info = await jsm.streams.info(bus.stream);
    const replica = info.cluster!.replicas![0]!.name;
    const sessionId = newId();
    const first = loopEvents(sessionId, 20);
    await bus.publishAll(first);
    await cluster.node(replica).kill();
    // A backlog the replica must fetch when it is back (another session's subjects, so the
    // reads below skip it), then more of the session, stored after the backlog.
    // Filler: its publishes go to the leader's node; one that times out while the cluster
    // notices the kill is only a smaller backlog.
    const direct = await natsConnect({ servers: cluster.node(info.cluster!.leader!).url });
    const js = jetstream(direct);
    const filler = new Uint8Array(4096);
    const subject = `${bus.namespace}.journal.${newId()}.${newId()}.loop_idle`;
    for (let i = 0; i < 12_000; i += 250) await Promise.all(Array.from({ length: 250 }, () => js.publish(subject, filler).catch(() => undefined)));
    await direct.close();
    const second = loopEvents(sessionId, 20);
    await bus.publishAll(second);
    const all = [...first, ...second];
    const since = new Date(Date.now() - 120_000);

    await cluster.node(replica).restart();
    // Read until the replica is current again, at least a dozen times.
    let reads = 0;
    for (const t0 = Date.now(); Date.now() - t0 < 20_000; reads++) {
      expect(await replayed(sessionId)).toEqual(all.map((e) => e.eventId));
      const stored = await bus.storedEvents(all, { since });
      expect(all.filter((e) => !stored.has(e.eventId)).map((e) => e.eventId)).toEqual([]);
      if (reads < 12) continue;
      const now = await jsm.streams.info(bus.stream);
      if (now.cluster?.replicas?.every((r) => r.current && !r.offline)) break;
    }
    expect(reads).toBeGreaterThanOrEqual(12);
  }, 120_000);
});
