// Adversary review of journal reads placed on the stream leader (src/journal/read-placement.ts):
// every read's consumer now lives on the stream leader, so a leader that dies takes every
// read in flight with it. NATS.js cannot recreate a consumer whose host is gone (its
// consumer info times out while the server still assigns the consumer to the dead peer), so
// the read must notice the missed heartbeats itself and read the rest under a new consumer.
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, describe, it } from "vitest";
import { connect, createEvent, type Jetloop, JetloopError, newId } from "../../src/index.js";
import { provisionOnCluster, startCluster, type NatsCluster } from "../harness/cluster.js";
import { uniqueNamespace } from "../harness/context.js";
import { waitFor } from "../harness/async.js";
import { consumerCount } from "../harness/stream-state.js";

// Each test kills or pauses a stream leader on a cluster of its own, so the tests run side
// by side: most of each is a wait for missed heartbeats, an election or the cluster's return.
interface Own {
  readonly cluster: NatsCluster;
  readonly admin: NatsConnection;
}
const started: Promise<Own>[] = [];

function ownCluster(): Promise<Own> {
  const own = (async () => {
    const cluster = await startCluster();
    await cluster.waitReady();
    return { cluster, admin: await natsConnect({ servers: cluster.urls }) };
  })();
  started.push(own);
  return own;
}

afterAll(async () => {
  for (const own of await Promise.allSettled(started)) {
    if (own.status !== "fulfilled") continue;
    await own.value.admin.close();
    await own.value.cluster.close();
  }
}, 60_000);

type Mode = "pull" | "pool" | "push";

/**
 * A bus reading in `mode`: 300 events of one session published, then replayed with `fault`
 * done to the stream leader after 50; with `metaToo`, the stream's leader is moved to the
 * meta leader first, so the fault takes both (a consumer delete sent then is lost).
 */
async function readThroughFault(
  { admin, cluster }: Own,
  bus: Jetloop,
  fault: (leader: string) => Promise<void> | void,
  metaToo = false,
): Promise<{ seqs: number[]; published: number[] }> {
  await provisionOnCluster(() => bus.provision());
  const jsm = await jetstreamManager(admin);
  const sessionId = newId();
  const published = await bus.publishAll(Array.from({ length: 300 }, () => createEvent("SessionStarted", { sessionId })));
  if (metaToo) await leadOn(admin, jsm, bus.stream, await cluster.metaLeader());
  const seqs: number[] = [];
  for await (const d of bus.replay({ enduring: "all" }, { batch: 10 })) {
    seqs.push(d.journalSeq);
    if (seqs.length === 50) await fault((await jsm.streams.info(bus.stream)).cluster?.leader ?? "");
  }
  return { seqs, published: published.map((p) => p.journalSeq).sort((a, b) => a - b) };
}

/** Moves `stream`'s leadership to `node` (a preferred stepdown, 2.11+) and waits until it is there. */
async function leadOn(admin: NatsConnection, jsm: JetStreamManager, stream: string, node: string): Promise<void> {
  // Asked again each time it is not there yet (an election in progress refuses a stepdown).
  await waitFor(
    `${stream}'s leadership on ${node}`,
    async () => {
      if ((await jsm.streams.info(stream)).cluster?.leader === node) return true;
      await admin.request(`$JS.API.STREAM.LEADER.STEPDOWN.${stream}`, JSON.stringify({ placement: { preferred: node } }), { timeout: 5_000 }).catch(() => undefined);
      return false;
    },
    60_000,
    250,
  );
}

function busIn({ cluster }: Own, mode: Mode): Promise<Jetloop> {
  return connect({ servers: cluster.urls, namespace: uniqueNamespace(), ...(mode === "pool" ? { readConsumers: { prefix: "adv", size: 2 } } : {}), ...(mode === "push" ? { journalReads: "push" as const } : {}) });
}

describe.concurrent("a read whose consumer's host, the stream leader, is killed mid-read", () => {
  const cases = [...(["pull", "pool", "push"] as const).map((mode) => ({ mode, metaToo: false })), { mode: "pull" as const, metaToo: true }];
  for (const { mode, metaToo } of cases) {
    it(`ends whole, in order, without duplicates, and leaves no consumer it may delete (${mode}${metaToo ? "; the meta leader killed with it" : ""})`, async ({ expect }) => {
      const own = await ownCluster();
      const { cluster, admin } = own;
      const bus = await busIn(own, mode);
      let killed = "";
      try {
        const { seqs, published } = await readThroughFault(
          own,
          bus,
          async (leader) => {
            killed = leader;
            await cluster.node(leader).kill();
          },
          metaToo,
        );
        expect(seqs).toEqual(published);
        await cluster.node(killed).restart();
        killed = "";
        await cluster.waitReady();
        // The consumers of the read, the one on the dead node included, are deleted (a push
        // read has no DELETE grant to rely on: its consumers are left to expire). The admin
        // connection may still be on its way back from the killed node, so no request is made
        // outside the poll (a CI run timed out on jetstreamManager's account-info check here).
        if (mode !== "push") {
          const jsm = await jetstreamManager(admin, { checkAPI: false });
          await expect.poll(() => consumerCount(jsm, bus.stream), { timeout: 15_000 }).toBe(0);
        }
      } finally {
        if (killed) await cluster.node(killed).restart();
        await bus.close();
      }
    }, 60_000);
  }
});

// Pool reads only: their re-creation is jetloop's (a pull read's is NATS.js's, and held there).
describe.concurrent("a read whose consumer's host, the stream leader, is paused mid-read (SIGSTOP, 8 s)", () => {
  for (const mode of ["pool"] as const) {
    it(`ends whole, in order, without duplicates: the re-creation that fails while no leader answers is tried again (${mode})`, async ({ expect }) => {
      const own = await ownCluster();
      const { cluster } = own;
      const bus = await busIn(own, mode);
      let paused = false;
      try {
        const { seqs, published } = await readThroughFault(own, bus, (leader) => {
          paused = true;
          cluster.node(leader).pause();
          setTimeout(() => cluster.node(leader).resume(), 8_000);
        });
        expect(seqs).toEqual(published);
      } finally {
        if (paused) {
          // Resumed by its timer (at most 8 s after the pause); then the cluster settles.
          await expect.poll(() => cluster.metaLeader().then(() => true, () => false), { timeout: 20_000 }).toBe(true);
          await cluster.waitReady();
        }
        await bus.close();
      }
    }, 60_000);
  }
});

// A read's consumer created while the meta leader cannot answer: the creation times out in
// NATS.js, yet the request waits in the paused node and is carried out when it resumes. The
// read fails typed (nothing yielded yet), and the consumer made after it is deleted, not left
// to its inactivity timeout (5 min; the server limits consumers per stream).
describe.concurrent("a read whose consumer's creation is not answered (the meta leader paused)", () => {
  it("fails typed and leaves no consumer behind once the meta leader answers again (pull)", async ({ expect }) => {
    const own = await ownCluster();
    const { cluster, admin } = own;
    const meta = await cluster.metaLeader();
    const bus = await connect({ servers: cluster.nodes.filter((n) => n.name !== meta).map((n) => n.url), namespace: uniqueNamespace() });
    let paused = false;
    try {
      await provisionOnCluster(() => bus.provision());
      await bus.publishAll(Array.from({ length: 20 }, () => createEvent("SessionStarted", { sessionId: newId() })));
      const jsm = await jetstreamManager(admin, { checkAPI: false });
      // The stream's leader elsewhere, so the read's stream info is answered while the meta leader sleeps.
      await leadOn(admin, jsm, bus.stream, cluster.nodes.find((n) => n.name !== meta)!.name);
      paused = true;
      cluster.node(meta).pause();
      const read = (async () => {
        for await (const _ of bus.replay({ enduring: "all" })) return "read";
        return "empty";
      })();
      await expect(read).rejects.toBeInstanceOf(JetloopError);
      cluster.node(meta).resume();
      paused = false;
      await cluster.waitReady();
      await expect.poll(() => consumerCount(jsm, bus.stream).catch(() => -1), { timeout: 20_000 }).toBe(0);
    } finally {
      if (paused) cluster.node(meta).resume();
      await bus.close();
    }
  }, 60_000);
});
