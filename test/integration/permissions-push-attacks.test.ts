// Attacks on the example permissions (deploy/nats/permissions.example.conf, verbatim) through the
// raw JetStream API, as a follower who knows the protocol: the consumer-create subjects she is
// granted name her own pool's consumers (alice_0 … alice_3) and carry her session's filter, and
// she writes the body herself (the server checks only that the body's name and filter are the
// subject's). The crossing table of every path × every consumer not hers is scenario 7's
// (test/harness/reliability/scenarios/crossings.ts).
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { headers as natsHeaders, connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { connect, type Jetloop, type SubscriptionReport } from "../../src/index.js";
import { startServer, type NatsServer } from "../harness/server.js";
import { waitFor } from "../harness/async.js";
import { EXAMPLE, PERMISSIONS_EXAMPLE } from "../harness/reliability/scenarios/security.js";
import { collect, enduring, eventIdOf, newCoords } from "../harness/reliability/workload.js";

const { namespace, stream, alice: A, bob: B } = EXAMPLE;
const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
/** Headers a stream refuses a publish by: a last sequence it does not have. */
const expectLastSeq = (seq: number) => {
  const h = natsHeaders();
  h.set("Nats-Expected-Last-Sequence", String(seq));
  return h;
};
const dec = (b: Uint8Array) => JSON.parse(new TextDecoder().decode(b)) as { error?: { description: string; err_code?: number }; config?: Record<string, unknown> };
const ownFilter = `acme.journal.${A.session}.>`;

describe("example permissions against a follower speaking the JetStream API", () => {
  let server: NatsServer;
  let opsRaw: NatsConnection;
  let aliceRaw: NatsConnection;
  let runtime: Jetloop;
  const buses: Jetloop[] = [];
  beforeAll(async () => {
    server = await startServer({ configText: readFileSync(PERMISSIONS_EXAMPLE, "utf8") });
    const ops = await connect({ servers: server.url, namespace, user: EXAMPLE.ops.user, pass: EXAMPLE.ops.pass });
    buses.push(ops);
    await ops.provision();
    opsRaw = await natsConnect({ servers: server.url, user: EXAMPLE.ops.user, pass: EXAMPLE.ops.pass });
    aliceRaw = await natsConnect({ servers: server.url, user: A.user, pass: A.pass, inboxPrefix: A.inbox });
    runtime = await connect({ servers: server.url, namespace, user: EXAMPLE.runtime.user, pass: EXAMPLE.runtime.pass, natsOptions: { inboxPrefix: EXAMPLE.runtime.inbox } });
    buses.push(runtime);
    for (const s of [A.session, B.session]) for (let i = 0; i < 3; i++) await runtime.publish(enduring(newCoords(s)));
  }, 60_000);
  afterAll(async () => {
    await aliceRaw?.close();
    await opsRaw?.close();
    for (const b of buses) await b.close().catch(() => undefined);
    await server?.close();
  });

  /** Alice's create request on the subject she is granted: her own session's filter, any name, any body. */
  const aliceCreate = async (name: string, config: Record<string, unknown>) => {
    const subject = `$JS.API.CONSUMER.CREATE.${stream}.${name}.${ownFilter}`;
    try {
      return dec((await aliceRaw.request(subject, enc({ stream_name: stream, config: { name, filter_subject: ownFilter, ...config } }), { timeout: 3000 })).data);
    } catch (e) {
      return { error: { description: (e as Error).message } };
    }
  };
  /** Frees a name of her pool (her own grant). */
  const aliceDelete = async (name: string) => {
    await aliceRaw.request(`$JS.API.CONSUMER.DELETE.${stream}.${name}`, enc({}), { timeout: 3000 });
  };
  const consumerConfig = async (name: string) =>
    dec((await opsRaw.request(`$JS.API.CONSUMER.INFO.${stream}.${name}`, enc({}), { timeout: 3000 })).data).config;

  it("a follower's create naming the service's durable neither re-targets it nor shows its state", async () => {
    await opsRaw.request(
      `$JS.API.CONSUMER.CREATE.${stream}.billing`,
      enc({ stream_name: stream, config: { name: "billing", durable_name: "billing", ack_policy: "explicit", filter_subject: "acme.journal.>" } }),
      { timeout: 3000 },
    );
    // Every body a follower may send on that subject: pull, push into her inbox, durable or not.
    const bodies: Record<string, unknown>[] = [
      { durable_name: "billing", ack_policy: "explicit" },
      { ack_policy: "explicit" },
      { durable_name: "billing", ack_policy: "explicit", deliver_subject: `${A.inbox}.billing` },
      { ack_policy: "none", deliver_subject: `${A.inbox}.billing`, max_ack_pending: 1 },
    ];
    for (const body of bodies) {
      const r = await aliceCreate("billing", body);
      expect(r.config, JSON.stringify(body)).toBeUndefined();
      expect((await consumerConfig("billing"))?.filter_subject).toBe("acme.journal.>");
    }
  });

  it("events a follower pushes into another session's feed are never yielded there as that session's", async () => {
    const bob = await connect({ servers: server.url, namespace, user: B.user, pass: B.pass, readConsumers: B.readConsumers, natsOptions: { inboxPrefix: B.inbox } });
    buses.push(bob);
    const reports: SubscriptionReport[] = [];
    const got = collect(await bob.session(B.session).subscribeEvents({ enduring: "all" }, { start: "new", onReport: (r) => reports.push(r) }), { keep: true });
    // Bob's feed subscription is on the server (a flush answers after it processed the
    // connection's earlier SUB) before anything is pushed at it.
    await bob.nc.flush();
    // Alice's journal, delivered by the server to every subject shape of bob's feed.
    for (const [i, family] of ["x.Y", "tool.ToolUse", "gate.GateOpened"].entries()) {
      const deliver = `acme.feed.${B.session}.loop.${family}`;
      // The server tracks a push consumer's interest by the literal deliver subject, which
      // bob's wildcard feed subscription is not; any literal listener there (here the
      // operator) makes it deliver, and bob's subscription then receives each delivery too.
      opsRaw.subscribe(deliver);
      await opsRaw.flush();
      // The server accepts it (permissions cannot confine a deliver subject): the reader must hold.
      expect((await aliceCreate(`alice_${i}`, { deliver_subject: deliver, ack_policy: "none" })).config?.deliver_subject).toBe(deliver);
    }
    // The server did deliver alice's three events to each of those subjects, where bob listens.
    for (let i = 0; i < 3; i++) {
      await waitFor(`alice_${i} delivered all three`, async () => {
        const info = dec((await opsRaw.request(`$JS.API.CONSUMER.INFO.${stream}.alice_${i}`, enc({}), { timeout: 3000 })).data) as { delivered?: { consumer_seq: number } };
        return info.delivered?.consumer_seq === 3;
      }, 10_000, 50);
      await aliceDelete(`alice_${i}`);
    }
    // Then bob's own event, a sentinel: the server sent the pushed copies to bob's connection
    // before it, so whatever bob's feed made of them it made before bob's own event came.
    const own = enduring(newCoords(B.session));
    await runtime.publish(own);
    await got.waitForAll([eventIdOf(own)], 10_000);
    const foreign = got.deliveries.filter((d) => (d.event as { sessionId: string }).sessionId !== B.session);
    expect(foreign.map((d) => eventIdOf(d.event))).toEqual([]);
    expect(got.ids).toContain(eventIdOf(own));
  }, 30_000);
  it("events a follower pushes onto another session's control subjects never reach its handlers", async () => {
    const calls: string[] = [];
    const controls = await runtime.session(B.session).serveControls({
      input: () => (calls.push("input"), { ok: true }),
      interrupt: () => (calls.push("interrupt"), { interrupted: true }),
    });
    try {
      const poolName = (command: string, ack_policy: string) => `alice_${(command === "input" ? 0 : 2) + (ack_policy === "none" ? 0 : 1)}`;
      for (const command of ["input", "interrupt"]) {
        const deliver = `acme.cmd.${B.session}._.${command}`;
        for (const ack_policy of ["none", "explicit"]) {
          // The control server listens in a queue group: naming it is what makes the server deliver.
          const r = await aliceCreate(poolName(command, ack_policy), { deliver_subject: deliver, deliver_group: "controls", ack_policy });
          expect(r.config?.deliver_subject).toBe(deliver);
        }
      }
      for (const command of ["input", "interrupt"]) {
        for (const ack_policy of ["none", "explicit"]) {
          // Delivered (the control server's literal subscription is interest), never obeyed.
          await waitFor(`${command} ${ack_policy} delivered`, async () => {
            const info = dec((await opsRaw.request(`$JS.API.CONSUMER.INFO.${stream}.${poolName(command, ack_policy)}`, enc({}), { timeout: 3000 })).data) as { delivered?: { consumer_seq: number } };
            return (info.delivered?.consumer_seq ?? 0) > 0;
          }, 10_000, 50);
          await aliceDelete(poolName(command, ack_policy));
        }
      }
      // Sentinels: a real input and interrupt on the same subjects, sent after the pushed
      // copies reached the control server's subscriptions, are the only calls it made.
      expect(calls).toEqual([]);
      const sent = await buses[0]!.session(B.session).submitInput([{ type: "text", text: "sentinel" }]);
      expect(sent, JSON.stringify(sent)).toMatchObject({ ok: true });
      expect(await buses[0]!.session(B.session).interrupt()).toMatchObject({ ok: true });
      expect(calls).toEqual(["input", "interrupt"]);
    } finally {
      await controls.close();
    }
  }, 30_000);
  it("every body a follower may send with her create subject yields at most her own session's events", async () => {
    const other = [`acme.journal.${B.session}.>`, "acme.journal.>", ">", "acme.journal.*.>", `acme.journal.${B.session}.loop.x.Y`, `acme.journal.*.*.*.*`];
    const filters: Record<string, unknown>[] = [
      ...other.map((f) => ({ filter_subject: f })),
      ...other.map((f) => ({ filter_subject: undefined, filter_subjects: [f] })),
      ...other.map((f) => ({ filter_subjects: [ownFilter, f] })),
      { filter_subject: "" },
      { filter_subject: undefined },
      { filter_subject: `${ownFilter.slice(0, -1)}*.>` },
      {},
    ];
    const shapes: Record<string, unknown>[] = [{}, { durable_name: "DURABLE" }, { headers_only: true }, { deliver_policy: "last_per_subject" }, { direct: true }];
    let n = 0;
    let accepted = 0;
    let delivered = 0;
    for (const f of filters) {
      for (const shape of shapes) {
        const name = "alice_0";
        const inbox = `${A.inbox}.body${n++}`;
        const seen: string[] = [];
        const sub = aliceRaw.subscribe(inbox, { callback: (_e, m) => void seen.push(new TextDecoder().decode(m.data)) });
        await aliceRaw.flush();
        const body: Record<string, unknown> = { deliver_subject: inbox, ack_policy: "none", ...shape, ...f };
        if (body.durable_name === "DURABLE") body.durable_name = name;
        const r = await aliceCreate(name, body);
        if (r.config) {
          accepted++;
          expect(r.config.filter_subject, JSON.stringify(body)).toBe(ownFilter);
          expect(r.config.filter_subjects, JSON.stringify(body)).toBeUndefined();
        }
        // What the server sends comes before the answer to a flush: an accepted consumer has
        // sent it all once nothing matching is pending; a refused create made no consumer.
        const info = () => opsRaw.request(`$JS.API.CONSUMER.INFO.${stream}.${name}`, enc({}), { timeout: 3000 }).then((m) => m.json<{ num_pending?: number; error?: { err_code?: number } }>());
        if (r.config) await waitFor(`${JSON.stringify(body)}: everything matching sent`, async () => (await info()).num_pending === 0, 10_000, 10);
        else expect((await info()).error?.err_code, `${JSON.stringify(body)}: no consumer`).toBe(10014);
        await aliceRaw.flush();
        sub.unsubscribe();
        // Nothing arrives for a refused create; an accepted one delivers alice's three events
        // (headers_only: empty bodies), never one naming another session.
        if (!r.config) expect(seen, JSON.stringify(body)).toEqual([]);
        else {
          expect(seen.length, JSON.stringify(body)).toBeLessThanOrEqual(3);
          delivered += seen.filter((t) => t !== "").length;
          for (const text of seen) expect(text === "" || (text.includes(A.session) && !text.includes(B.session)), JSON.stringify(body)).toBe(true);
          await aliceDelete(name);
        }
      }
    }
    expect(n).toBe(filters.length * shapes.length);
    expect(accepted).toBeGreaterThan(0);
    expect(delivered).toBeGreaterThan(0);
  }, 60_000);
  it("pool reads through jetloop name only her pool's consumers, filtered on her session, and delete them", async () => {
    const alice = await connect({ servers: server.url, namespace, user: A.user, pass: A.pass, readConsumers: A.readConsumers, natsOptions: { inboxPrefix: A.inbox } });
    buses.push(alice);
    const list = async () => {
      const r = JSON.parse(new TextDecoder().decode((await opsRaw.request(`$JS.API.CONSUMER.LIST.${stream}`, enc({}), { timeout: 3000 })).data)) as { consumers: { name: string; config: Record<string, unknown> }[] };
      return r.consumers;
    };
    const before = new Set((await list()).map((c) => c.name));
    const during: { name: string; config: Record<string, unknown> }[] = [];
    for (let i = 0; i < 5; i++) {
      const ids: string[] = [];
      for await (const d of alice.session(A.session).replay({ enduring: "all" }, { batch: 1 })) {
        if (ids.length === 0) during.push(...(await list()).filter((c) => !before.has(c.name)));
        ids.push(eventIdOf(d.event));
      }
      expect(ids.length).toBe(3);
    }
    expect(during.length).toBe(5);
    for (const { name, config } of during) {
      expect(["alice_0", "alice_1", "alice_2", "alice_3"]).toContain(name);
      expect(config.deliver_subject).toBeUndefined();
      expect(config.durable_name).toBeUndefined();
      expect(String(config.filter_subject).startsWith(`acme.journal.${A.session}.`)).toBe(true);
    }
    // Each read deleted its consumer: nothing left to expire.
    expect((await list()).filter((c) => !before.has(c.name))).toEqual([]);
  }, 60_000);
  it("a follower cannot squat a service's durable name before the service creates it", async () => {
    for (const shape of [{ deliver_subject: `${A.inbox}.squat` }, {}]) {
      const durable = `audit${Object.keys(shape).length}`;
      // Not a name of her pool: the create subject naming it is not in her grant.
      expect((await aliceCreate(durable, { durable_name: durable, ack_policy: "explicit", ...shape })).error?.description).toMatch(/permissions violation/i);
      const service = await connect({ servers: server.url, namespace, user: EXAMPLE.ops.user, pass: EXAMPLE.ops.pass });
      buses.push(service);
      const s = await service.subscribeEvents({ enduring: "all" }, { durable });
      const got = collect(s);
      const state = (JSON.parse(new TextDecoder().decode((await opsRaw.request(`$JS.API.STREAM.INFO.${stream}`, enc({}), { timeout: 3000 })).data)) as { state: { messages: number } }).state;
      await waitFor("every journal event", () => got.ids.length >= state.messages, 10_000);
      await s.close();
      expect(got.ids.length).toBe(state.messages);
      expect((await consumerConfig(durable))?.filter_subject).not.toBe(ownFilter);
    }
  }, 30_000);

  it("events a follower pushes onto the parked store's subjects or onto JetStream API subjects are stored nowhere and change nothing", async () => {
    const ops = buses[0]!;
    await opsRaw.request(
      `$JS.API.CONSUMER.CREATE.${stream}.billing`,
      enc({ stream_name: stream, config: { name: "billing", durable_name: "billing", ack_policy: "explicit", filter_subject: "acme.journal.>" } }),
      { timeout: 3000 },
    );
    // A real parked entry of the service's durable (max_msgs_per_subject 1: a copy onto its
    // subject would replace it).
    await ops.parked.park({ durable: "billing", journalSeq: 1, subject: `acme.journal.${B.session}.l.x.Y`, data: enc({}), deliveryCount: 5, reason: "max_deliver", errorCode: "HANDLER_FAILED", errorMessage: "x" });
    const parkedState = async () => {
      const i = JSON.parse(new TextDecoder().decode((await opsRaw.request(`$JS.API.STREAM.INFO.acme_parked`, enc({ subjects_filter: ">" }), { timeout: 3000 })).data)) as {
        state: { messages: number; last_seq: number; subjects?: Record<string, number> };
      };
      return i.state;
    };
    const before = await parkedState();
    const billing = await consumerConfig("billing");
    const targets = [
      "acme.parked.billing.held.1",
      "acme.parked.billing.held.2",
      "acme.parked.billing.replay.1",
      `$JS.API.CONSUMER.DELETE.${stream}.billing`,
      `$JS.API.CONSUMER.CREATE.${stream}.billing`,
      "$JS.API.STREAM.PURGE.acme_parked",
      `$JS.API.STREAM.DELETE.${stream}`,
    ];
    for (const [i, deliver] of targets.entries()) {
      // The worst case: a literal listener there, so the server does deliver. The server
      // hands a message to every subscription of its subject in one pass, its own (the
      // parked store's, the JetStream API's) before ours is flushed: a copy the listener
      // has is one the server has already given to the store's queue or the API.
      let heard = 0;
      const listener = opsRaw.subscribe(deliver, { callback: () => void heard++ });
      await opsRaw.flush();
      const name = `alice_${i % 4}`;
      expect((await aliceCreate(name, { deliver_subject: deliver, ack_policy: "none" })).config?.deliver_subject, deliver).toBe(deliver);
      await waitFor(`three copies delivered onto ${deliver}`, () => heard >= 3, 5000);
      await aliceDelete(name);
      listener.unsubscribe();
    }
    // The sentinel, by order: a publish the parked store takes from its queue after every
    // copy and refuses (a last sequence it does not have), so its answer means each copy
    // before it was taken too. The API dropped the copies as they came (no client info).
    const sentinel = await opsRaw.request("acme.parked.billing.held.1", enc({}), { timeout: 3000, headers: expectLastSeq(Number.MAX_SAFE_INTEGER) });
    expect(dec(sentinel.data)).toMatchObject({ error: { err_code: 10071 } });
    // jetloop's appends carry Nats-Expected-Stream (the events stream): the parked store
    // refuses each copy; the JetStream API drops a request without client info.
    expect(await parkedState()).toEqual(before);
    expect(await consumerConfig("billing")).toEqual(billing);
    const journal = JSON.parse(new TextDecoder().decode((await opsRaw.request(`$JS.API.STREAM.INFO.${stream}`, enc({}), { timeout: 3000 })).data)) as { state?: { messages: number } };
    expect(journal.state?.messages).toBeGreaterThan(0);
  }, 30_000);
});
