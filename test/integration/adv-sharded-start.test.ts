// An adversary's look at a sharded subscription's start: the bus closed while its shards'
// parts are still starting, at generated moments, on a connection the bus does not own (so
// nothing but the parts' own stop ends their pulls): once closed, nothing consumes on.
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { defaultMembersStreamName } from "../../src/streams/declared.js";
import { memberSubject } from "../../src/subjects/subjects.js";
import { connect, createEvent, fromConnection, newId, type Jetloop, type JetloopEvent } from "../../src/index.js";
import { natsServers } from "../harness/context.js";
import { uniqueNamespace } from "../harness/namespace.js";
import { sleep, waitFor } from "../harness/async.js";

const S = 2;
let ops: Jetloop;
let nc: NatsConnection;
let jsm: JetStreamManager;
const namespace = uniqueNamespace("ass");
const quiet = pino({ level: "silent" });

beforeAll(async () => {
  ops = await connect({ servers: natsServers(), namespace, shards: S, logger: quiet });
  await ops.provision({ partitions: 4 });
  nc = await natsConnect({ servers: natsServers() });
  jsm = await jetstreamManager(ops.nc);
});
afterAll(async () => {
  for await (const name of jsm.streams.names()) if (name.startsWith(namespace)) await jsm.streams.delete(name).catch(() => undefined);
  await ops.close();
  await nc.close();
});

/**
 * A consumer once the server has dealt with every pull request it held: none waiting (a
 * request for an inbox nobody listens on is dropped when an event comes for it), or an
 * event handed over. The pull requests were sent before the close (the connection was
 * flushed since), and events stored since are pending for them, so from this state on the
 * closed parts can take nothing: the checks below read it, not a quiet window. A request
 * still waiting after 10 s is read as it is (and reported by the caller). No consumer:
 * undefined.
 */
async function settledConsumer(stream: string, name: string) {
  const read = () => jsm.consumers.info(stream, name).catch(() => undefined);
  const settled = await waitFor(
    `${name} on ${stream} holding no pull request`,
    async () => {
      const info = await read();
      return (info === undefined || info.num_waiting === 0 || info.delivered.consumer_seq > 0) && { info };
    },
    10_000,
    50,
  ).catch(() => undefined);
  return settled === undefined ? read() : settled.info;
}

function step(sessionId: string): JetloopEvent {
  return createEvent("StepDone", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: "x" }] }] });
}

describe("a sharded durable's start, cut by the bus closing", () => {
  it("for generated delays, a durable whose bus closed while it started takes nothing afterwards", async () => {
    const delays = [2000, 0, 1, 2, 3, 5, 8, 12, 20, 40, 80];
    const taken: string[] = [];
    for (const delay of delays) {
      const durable = `d${newId().slice(-8)}`;
      const bus = fromConnection(nc, { namespace, shards: S, logger: quiet });
      const started = bus.subscribeEvents({ enduring: "all" }, { durable, start: "new" }).then(
        (sub) => sub,
        () => undefined,
      );
      await sleep(delay);
      await bus.close();
      const sub = await started;
      await sub?.close();
      // The closed parts' unsubscriptions reach the server before the events do (they are
      // published on another connection): a pull request the server still holds for an
      // inbox nobody listens on is dropped, not handed an event.
      await nc.flush();
      // Events in every shard after the close: no part of the closed subscription may pull them.
      for (let i = 0; i < 6; i++) await ops.publish(step(newId()));
      for (const stream of ops.journals().map((j) => j.stream)) {
        const info = await settledConsumer(stream, durable);
        if (info && (info.delivered.consumer_seq > 0 || info.num_waiting > 0)) taken.push(`${delay}ms ${stream}: delivered ${info.delivered.consumer_seq}, waiting ${info.num_waiting}`);
      }
    }
    expect(taken).toEqual([]);
  }, 60_000);

  it("for generated delays, a group member whose bus closed while it started leaves no lease and takes nothing", async () => {
    const left: string[] = [];
    for (const delay of [2000, 0, 2, 5, 10, 20, 40, 80]) {
      const group = `g${newId().slice(-8)}`;
      const bus = fromConnection(nc, { namespace, shards: S, logger: quiet });
      const started = bus.subscribeEvents({ enduring: "all" }, { durable: group, group: { leaseMs: 1000 }, start: "new" }).then(
        (sub) => sub,
        () => undefined,
      );
      await sleep(delay);
      await bus.close();
      await (await started)?.close();
      await nc.flush();
      for (let i = 0; i < 6; i++) await ops.publish(step(newId()));
      const parts = [];
      for (let p = 0; p < 4; p++) parts.push(await settledConsumer(`${namespace}_partitioned`, `${group}_p${p}`));
      // The close finished before the events, and the parts are settled: a lease it left is there by now.
      const lease = await jsm.streams.getMessage(defaultMembersStreamName(namespace), { last_by_subj: memberSubject(namespace, group) }).catch(() => null);
      if (lease) left.push(`${delay}ms: a lease ${lease.subject}`);
      for (const [p, info] of parts.entries()) {
        if (info && (info.delivered.consumer_seq > 0 || info.num_waiting > 0)) left.push(`${delay}ms p${p}: delivered ${info.delivered.consumer_seq}, waiting ${info.num_waiting}`);
      }
    }
    expect(left).toEqual([]);
  }, 90_000);

  it("one shard's stream missing: a durable and a live reader over all shards are refused with a typed error, and the healthy shard's part takes nothing", async () => {
    const ns = uniqueNamespace("asm");
    const owner = await connect({ servers: natsServers(), namespace: ns, shards: 3, logger: quiet });
    try {
      await owner.provision();
      await jsm.streams.delete(`${ns}_journal_1_of_3`);
      const durable = `d${newId().slice(-8)}`;
      const refusals: unknown[] = [];
      for (const options of [{ durable, start: "new" as const }, {}]) {
        const err = await owner.subscribeEvents({ enduring: "all" }, options).then(
          async (sub) => {
            await sub.close();
            return undefined;
          },
          (e: unknown) => e,
        );
        refusals.push(err);
      }
      for (const e of refusals) {
        expect(e).toBeInstanceOf(Error);
        expect((e as { code?: string }).code).toMatch(/^[A-Z_]+$/);
      }
      for (let i = 0; i < 6; i++) await owner.publish(step(newId())).catch(() => undefined);
      for (const k of [0, 2]) {
        const info = await settledConsumer(`${ns}_journal_${k}_of_3`, durable);
        expect(info === undefined || (info.delivered.consumer_seq === 0 && info.num_waiting === 0), `shard ${k}: ${JSON.stringify(info?.delivered)} waiting ${info?.num_waiting}`).toBe(true);
      }
    } finally {
      for await (const name of jsm.streams.names()) if (name.startsWith(ns)) await jsm.streams.delete(name).catch(() => undefined);
      await owner.close();
    }
  }, 60_000);
});
