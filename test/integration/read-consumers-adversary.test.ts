// The read-consumer pool (bus option readConsumers) attacked as a stranger would: a stale
// consumer of the pool's own left behind with exactly the config the next read asks for
// (a release whose delete failed), a name held by another process while this process's
// other names are busy, and a read whose name another process took over after its own
// consumer was lost. Each must leave the read complete (or refused typed, after a bounded
// wait that does not flood the server) and another process's consumer untouched.
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type ConsumerConfig, type JetStreamManager } from "@nats-io/jetstream";
import { nanos } from "@nats-io/nats-core";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busContext } from "../../src/bus.js";
import { connect, createEvent, newId, ReadConsumersBusyError, type Jetloop, type JetloopEvent } from "../../src/index.js";
import { INACTIVE_MS, OWNER_KEY } from "../../src/journal/read-consumers.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";

const SESSION = newId();
const COUNT = 12;
let namespace: string;
let stream: string;
let nc: NatsConnection;
let jsm: JetStreamManager;
const buses: Jetloop[] = [];
let seqs: number[] = [];

const step = (): JetloopEvent => createEvent("StepDone", { sessionId: SESSION, loopId: newId(), turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: "x" }] }] });

async function pooled(prefix: string, size: number, waitMs = 30_000): Promise<Jetloop> {
  const bus = await connect({ servers: natsServers(), namespace, readConsumers: { prefix, size, waitMs } });
  buses.push(bus);
  return bus;
}

async function replayed(bus: Jetloop, each?: () => Promise<void>): Promise<number[]> {
  const got: number[] = [];
  for await (const d of bus.session(SESSION).replay({ enduring: "all" })) {
    got.push(d.journalSeq);
    if (each) await each();
  }
  return got;
}

beforeAll(async () => {
  namespace = uniqueNamespace();
  const plain = await connect({ servers: natsServers(), namespace });
  buses.push(plain);
  await plain.provision();
  stream = busContext(plain).settings.stream;
  seqs = (await plain.publishAll(Array.from({ length: COUNT }, step))).map((r) => r.journalSeq);
  nc = await natsConnect({ servers: natsServers() });
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  for (const b of buses) await b.close();
  await nc.close();
});

describe("readConsumers attacked: stale, busy and taken-over names", () => {
  it("a stale consumer of its own with the very config the read asks for (advanced to the end) is replaced, never reused: the read is complete", async () => {
    const bus = await pooled("same", 1);
    // What a replay's consumer is created with, read as the admin while it runs.
    let seen: ConsumerConfig | undefined;
    expect(
      await replayed(bus, async () => {
        seen ??= (await jsm.consumers.info(stream, "same_0")).config;
      }),
    ).toEqual(seqs);
    // The same read's consumer left behind (its release's delete failed), every event delivered.
    const owner = busContext(bus).shards.all[0]!.journal.pool!.owner;
    const stale: Partial<ConsumerConfig> = {
      name: "same_0",
      ...(seen!.filter_subject ? { filter_subject: seen!.filter_subject } : { filter_subjects: seen!.filter_subjects }),
      deliver_policy: seen!.deliver_policy,
      ...(seen!.opt_start_seq ? { opt_start_seq: seen!.opt_start_seq } : {}),
      ...(seen!.opt_start_time ? { opt_start_time: seen!.opt_start_time } : {}),
      ack_policy: AckPolicy.None,
      inactive_threshold: nanos(INACTIVE_MS),
      num_replicas: 1,
      mem_storage: true,
      metadata: { [OWNER_KEY]: owner },
    };
    expect(seen!.deliver_policy).toBe(DeliverPolicy.StartSequence);
    await jsm.consumers.add(stream, stale);
    const c = await jetstream(nc).consumers.get(stream, "same_0");
    for (let i = 0; i < COUNT; i++) expect((await c.next({ expires: 2000 }))?.seq).toBe(seqs[i]);
    expect((await jsm.consumers.info(stream, "same_0")).num_pending).toBe(0);
    expect(await replayed(bus)).toEqual(seqs);
  }, 30_000);

  it("a name held by another process while its other names are busy is tried again after a pause, not in a loop: typed, bounded, few requests", async () => {
    const bus = await pooled("storm", 2, 1500);
    await jsm.consumers.add(stream, { name: "storm_1", filter_subject: `${namespace}.journal.${SESSION}.>`, ack_policy: AckPolicy.None, metadata: { [OWNER_KEY]: "another-process" } });
    const holder = bus.session(SESSION).replay({ enduring: "all" }, { batch: 1 })[Symbol.asyncIterator]();
    expect((await holder.next()).done).toBe(false);
    const sent = busContext(bus).nc.stats().outMsgs;
    const t = Date.now();
    const e = await replayed(bus).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(ReadConsumersBusyError);
    expect((e as ReadConsumersBusyError).heldElsewhere).toBe(1);
    expect(Date.now() - t).toBeLessThan(3000);
    // A poll every BUSY_POLL_MS (create + info each) and the holder's pulls: a few dozen at most.
    expect(busContext(bus).nc.stats().outMsgs - sent).toBeLessThan(40);
    await holder.return?.(undefined);
    await jsm.consumers.delete(stream, "storm_1");
  }, 30_000);

  it("a read whose name another process took over (its own consumer lost) never deletes the other's consumer", async () => {
    const a = await pooled("taken", 1);
    const b = await pooled("taken", 1, 10_000);
    const poolA = busContext(a).shards.all[0]!.journal.pool!;
    const poolB = busContext(b).shards.all[0]!.journal.pool!;
    const config = { filter_subject: `${namespace}.journal.${SESSION}.>`, deliver_policy: DeliverPolicy.All };
    const { lease: leaseA } = await poolA.lease(config);
    // A's consumer is lost (expired, deleted by an operator); B creates the name for a read of its own.
    await jsm.consumers.delete(stream, "taken_0");
    const { lease: leaseB } = await poolB.lease(config);
    expect((await jsm.consumers.info(stream, "taken_0")).config.metadata?.[OWNER_KEY]).toBe(poolB.owner);
    // A's read tries to create its consumer again (after the loss): refused, the name is B's…
    await expect(leaseA.create({ ...config, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: seqs[3]! })).rejects.toThrow();
    // …and when A's read ends, B's consumer is still there, unchanged.
    await leaseA.release();
    const held = await jsm.consumers.info(stream, "taken_0");
    expect(held.config.metadata?.[OWNER_KEY]).toBe(poolB.owner);
    await leaseB.release();
  }, 30_000);

  it("concurrent reads with one name held elsewhere all complete on the others, each once and in order", async () => {
    const bus = await pooled("mix", 3, 10_000);
    await jsm.consumers.add(stream, { name: "mix_2", filter_subject: `${namespace}.journal.${SESSION}.>`, ack_policy: AckPolicy.None, metadata: { [OWNER_KEY]: "another-process" } });
    const sent = busContext(bus).nc.stats().outMsgs;
    const reads = await Promise.all(Array.from({ length: 8 }, () => replayed(bus)));
    for (const got of reads) expect(got).toEqual(seqs);
    // Per read: a create, its pulls, a delete; the name held elsewhere costs a create and an info per poll.
    expect(busContext(bus).nc.stats().outMsgs - sent).toBeLessThan(8 * 12 + 40);
    expect((await jsm.consumers.info(stream, "mix_2")).config.metadata?.[OWNER_KEY]).toBe("another-process");
    await jsm.consumers.delete(stream, "mix_2");
  }, 30_000);
});
