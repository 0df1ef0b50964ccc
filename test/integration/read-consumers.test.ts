// The bus option readConsumers: every journal read names its consumer from the bus's pool
// ({prefix}_0 …), gives the deliveries an unpooled read gives, deletes its consumer when it
// ends, waits (bounded) for a free name, never takes over a name another process holds,
// replaces a stale one of its own, and survives its consumer being deleted mid-read.
import fc from "fast-check";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busContext } from "../../src/bus.js";
import { connect, createEvent, isJetloopError, newId, ReadConsumersBusyError, type Jetloop, type JetloopEvent } from "../../src/index.js";
import { OWNER_KEY } from "../../src/journal/read-consumers.js";
import { natsServers, uniqueNamespace } from "../harness/context.js";
import { waitFor } from "../harness/async.js";

const SESSION = newId();
const COUNT = 40;
let namespace: string;
let stream: string;
let plain: Jetloop;
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

async function consumerNames(): Promise<string[]> {
  const names: string[] = [];
  for await (const c of jsm.consumers.list(stream)) names.push(c.name);
  return names.sort();
}

async function replayed(bus: Jetloop, o: { fromSeq?: number; toSeq?: number; batch?: number } = {}, each?: () => Promise<void>): Promise<number[]> {
  const got: number[] = [];
  for await (const d of bus.session(SESSION).replay({ enduring: "all" }, o)) {
    got.push(d.journalSeq);
    if (each) await each();
  }
  return got;
}

beforeAll(async () => {
  namespace = uniqueNamespace();
  plain = await connect({ servers: natsServers(), namespace });
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

describe("readConsumers: reads under the bus's own pool names", () => {
  it("replays what an unpooled read replays, for any range and batch, and leaves no consumer", async () => {
    const bus = await pooled("gen", 2);
    const first = seqs[0]!;
    const last = seqs[seqs.length - 1]!;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: first, max: last + 2 }), fc.integer({ min: 0, max: COUNT + 2 }), fc.integer({ min: 1, max: 30 }), async (fromSeq, span, batch) => {
        const want = await replayed(plain, { fromSeq, toSeq: fromSeq + span, batch });
        expect(await replayed(bus, { fromSeq, toSeq: fromSeq + span, batch })).toEqual(want);
        expect((await consumerNames()).filter((n) => n.startsWith("gen_"))).toEqual([]);
      }),
      { numRuns: 6 },
    );
  });

  it("concurrent reads share the pool: never more consumers than names, each read complete", async () => {
    const bus = await pooled("conc", 2);
    let most = 0;
    const reads = Array.from({ length: 5 }, () =>
      replayed(bus, { batch: 4 }, async () => {
        const held = (await consumerNames()).filter((n) => n.startsWith("conc"));
        most = Math.max(most, held.length);
        for (const n of held) expect(["conc_0", "conc_1"]).toContain(n);
      }),
    );
    for (const got of await Promise.all(reads)) expect(got).toEqual(seqs);
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(2);
  }, 30_000);

  it("a read finding every name in use past waitMs fails typed, promptly, reading nothing", async () => {
    const bus = await pooled("busy", 1, 300);
    const holder = bus.session(SESSION).replay({ enduring: "all" }, { batch: 1 })[Symbol.asyncIterator]();
    expect((await holder.next()).done).toBe(false);
    const t = Date.now();
    const e = await replayed(bus).then(() => undefined, (x: unknown) => x);
    expect(e).toBeInstanceOf(ReadConsumersBusyError);
    expect(isJetloopError(e, "READ_CONSUMERS_BUSY")).toBe(true);
    expect((e as ReadConsumersBusyError).heldElsewhere).toBe(0);
    expect(Date.now() - t).toBeLessThan(2000);
    await holder.return?.(undefined);
    // The name is free again.
    expect(await replayed(bus)).toEqual(seqs);
  });

  it("two processes sharing a prefix: the second is refused typed, the first's read is not disturbed", async () => {
    const a = await pooled("shared", 1);
    const b = await pooled("shared", 1, 400);
    const got: number[] = [];
    const it = a.session(SESSION).replay({ enduring: "all" }, { batch: 2 })[Symbol.asyncIterator]();
    const first = await it.next();
    got.push(first.done ? -1 : first.value.journalSeq);
    const before = await jsm.consumers.info(stream, "shared_0");
    const e = await replayed(b).then(() => undefined, (x: unknown) => x);
    expect(e).toBeInstanceOf(ReadConsumersBusyError);
    expect((e as ReadConsumersBusyError).heldElsewhere).toBe(1);
    const after = await jsm.consumers.info(stream, "shared_0");
    expect(after.config).toEqual(before.config);
    expect(after.created).toBe(before.created);
    for (let n = await it.next(); !n.done; n = await it.next()) got.push(n.value.journalSeq);
    expect(got).toEqual(seqs);
    // Once freed, the second process reads.
    expect(await replayed(b)).toEqual(seqs);
  }, 30_000);

  it("waits for a name another process frees; replaces a stale consumer of its own", async () => {
    const bus = await pooled("stale", 1, 10_000);
    const filter = { filter_subject: `${namespace}.journal.${SESSION}.>`, ack_policy: "none" as const };
    await jsm.consumers.add(stream, { ...filter, name: "stale_0", metadata: { [OWNER_KEY]: "another-process" } });
    const reading = replayed(bus);
    await new Promise((r) => setTimeout(r, 700));
    await jsm.consumers.delete(stream, "stale_0");
    expect(await reading).toEqual(seqs);
    // A consumer of its own left behind (a delete that failed): replaced at once.
    const owner = busContext(bus).shards.all[0]!.journal.pool!.owner;
    await jsm.consumers.add(stream, { ...filter, name: "stale_0", metadata: { [OWNER_KEY]: owner } });
    const t = Date.now();
    expect(await replayed(bus)).toEqual(seqs);
    expect(Date.now() - t).toBeLessThan(3000);
    expect((await consumerNames()).filter((n) => n.startsWith("stale"))).toEqual([]);
  }, 30_000);

  it("a read whose consumer is deleted under it creates it again after the last delivery: each event once, in order", async () => {
    const bus = await pooled("lost", 1);
    let n = 0;
    // Deleted once mid-batch (the next pull finds it gone: found by the missed heartbeats, ~2 s).
    const got = await replayed(bus, { batch: 3 }, async () => {
      if (++n === 5) expect(await jsm.consumers.delete(stream, "lost_0")).toBe(true);
    });
    expect(got).toEqual(seqs);
    await waitFor("no consumer left", async () => !(await consumerNames()).includes("lost_0"), 5000);
  }, 30_000);
});
