/**
 * Shards on a three-node cluster (issue 26): appends/s of a namespace whose journal is one
 * R3 stream (S = 1) and of one split in three (S = 3, the leaders spread over the three
 * servers by `provision`), from PRODUCERS producers (each its own connection), the events
 * spread over SESSIONS sessions. Contenders, all in one run on the same cluster:
 *   - jetloop S = 1 / S = 3: `bus.publish(event)` on PRODUCERS buses;
 *   - raw S = 1 / S = 3: stock `js.publish(subject, bytes, { msgID })` on PRODUCERS raw
 *     connections, pre-encoded, on the same subjects (one stream, or the session's shard).
 * Both namespaces live on the cluster at once; every run starts from purged streams. The
 * cluster is this benchmark's own: three nats-server processes and the Node process share
 * the machine's cores. Beside them, jetloop S = 1 and S = 3 (R1) on the run's one server
 * (`ctx.server`): what the sharded path costs the client, with no cluster in the way.
 */
import { jetstream, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { connect, type Jetloop, type JetloopEvent } from "../src/index.js";
import { provisionOnCluster, startCluster } from "../test/harness/cluster.js";
import { uniqueNamespace } from "../test/harness/namespace.js";
import { type BenchContext, compareRow, type Row } from "./lib/context.js";
import { enduringBatch, toWire, type WireEvent } from "./lib/events.js";
import { nowMs, rotatedRounds, windowed } from "./lib/stats.js";

const PRODUCERS = 4;
const SESSIONS = 64;
/** In flight per producer: PRODUCERS × this = jetloop's default maxInFlight (1024). */
const WINDOW = 256;

interface Side {
  readonly ns: string;
  readonly shards: number;
  readonly buses: Jetloop[];
  readonly streams: string[];
  readonly jsm: JetStreamManager;
}

export async function runShards(ctx: BenchContext): Promise<Row[]> {
  const n = ctx.options.quick ? 4_000 : 20_000;
  const cluster = await startCluster({ flavor: process.env.JETLOOP_NATS_SERVER === "oldest" ? "oldest" : "newest" });
  const raws: NatsConnection[] = [];
  const sides: Side[] = [];
  try {
    await cluster.waitReady();
    // The two namespaces on the cluster, and the same two on the run's one server (R1):
    // whether the sharded path costs the client anything, with no cluster in the way.
    for (const [servers, shards] of [[cluster.urls, 1], [cluster.urls, 3], [[ctx.server.url], 1], [[ctx.server.url], 3]] as const) {
      const ns = uniqueNamespace(`benchshards${shards}`);
      const buses = await Promise.all(Array.from({ length: PRODUCERS }, (_, i) => connect({ servers: [...servers], namespace: ns, shards, name: `jetloop-shards-${shards}-${i}` })));
      let leaders = "";
      await provisionOnCluster(async () => {
        const r = await buses[0]!.provision({ replicas: servers.length === 1 ? 1 : 3 });
        leaders = (r.shards ?? [r]).map((s) => ("leader" in s ? s.leader : "")).join(", ");
      });
      const streams = shards === 1 ? [buses[0]!.stream] : Array.from({ length: shards }, (_, k) => `${buses[0]!.stream}_${k}_of_${shards}`);
      ctx.log(`shards: S = ${shards} provisioned ${servers.length === 1 ? "R1 on one server" : `R3, leaders ${leaders}`}`);
      sides.push({ ns, shards, buses, streams, jsm: await buses[0]!.jetstreamManager() });
    }
    for (let i = 0; i < PRODUCERS; i++) raws.push(await natsConnect({ servers: cluster.urls, name: `raw-shards-${i}` }));
    const js: JetStreamClient[] = raws.map((nc) => jetstream(nc));

    // The events of one run, split over the producers (each producer its share of every session).
    const split = <T>(xs: T[]): T[][] => Array.from({ length: PRODUCERS }, (_, p) => xs.filter((_, i) => i % PRODUCERS === p));
    const jetloopRun = (side: Side) => async () => {
      const parts = split(enduringBatch(n, SESSIONS));
      const t0 = nowMs();
      await Promise.all(parts.map((evs: JetloopEvent[], p) => windowed(evs.length, WINDOW, (i) => side.buses[p]!.publish(evs[i]!))));
      return (n / (nowMs() - t0)) * 1000;
    };
    const rawRun = (side: Side) => async () => {
      const parts = split(enduringBatch(n, SESSIONS).map((e) => toWire(side.ns, e, side.shards)));
      const t0 = nowMs();
      await Promise.all(parts.map((wire: WireEvent[], p) => windowed(wire.length, WINDOW, (i) => js[p]!.publish(wire[i]!.subject, wire[i]!.data, { msgID: wire[i]!.eventId }))));
      return (n / (nowMs() - t0)) * 1000;
    };
    const [one, three, single1, single3] = sides as [Side, Side, Side, Side];
    const contenders = { jetloop1: jetloopRun(one), jetloop3: jetloopRun(three), raw1: rawRun(one), raw3: rawRun(three), single1: jetloopRun(single1), single3: jetloopRun(single3) };
    const purge = () => Promise.all(sides.flatMap((side) => side.streams.map((s) => side.jsm.streams.purge(s))));
    for (const run of Object.values(contenders)) {
      await purge();
      await run();
    }
    const samples = await rotatedRounds("shards", ctx.options.reps, (m) => ctx.log(m), contenders, purge);
    const label = (metric: string, raw: string, target?: string) => ({ bench: `shards (3-node cluster, ${PRODUCERS} producers)`, metric, unit: "appends/s", raw, ...(target ? { target } : {}) });
    return [
      compareRow(label("S = 1: one R3 stream", "js.publish, 1 stream"), samples.jetloop1, samples.raw1),
      compareRow(label("S = 3: three R3 streams, leaders spread", "js.publish, 3 streams"), samples.jetloop3, samples.raw3),
      compareRow(label("jetloop S = 3 / S = 1", "jetloop S = 1, same cluster", ">= 1.5"), samples.jetloop3, samples.jetloop1),
      compareRow(label("raw S = 3 / S = 1", "js.publish, 1 stream"), samples.raw3, samples.raw1),
      compareRow({ ...label("one server (R1), jetloop S = 3 / S = 1", "jetloop S = 1, same server"), bench: `shards (one server, ${PRODUCERS} producers)` }, samples.single3, samples.single1),
    ];
  } finally {
    for (const side of sides) for (const b of side.buses) await b.close().catch(() => undefined);
    for (const nc of raws) await nc.close().catch(() => undefined);
    await cluster.close();
  }
}
