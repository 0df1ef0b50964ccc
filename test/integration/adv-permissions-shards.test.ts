// An adversary's table over deploy/nats/permissions-shards.example.conf (verbatim): a follower
// of one session, speaking NATS and the JetStream API herself, against every shard's stream
// and every other session's subjects; the runtime user against everything outside its grants.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { connect, type Jetloop } from "../../src/index.js";
import { shardOfSession } from "../../src/streams/shards.js";
import { REPO_ROOT, startServer, type NatsServer } from "../harness/server.js";
import { heldWithin } from "../harness/async.js";
import { enduring, newCoords } from "../harness/reliability/workload.js";

const CONF = join(REPO_ROOT, "deploy/nats/permissions-shards.example.conf");
const ALICE = { user: "alice", pass: "alice-example-password", inbox: "_INBOX_alice", session: "0190f2a1-0000-7000-8000-00000000a11c" };
const BOB = { user: "bob", pass: "bob-example-password", inbox: "_INBOX_bob", session: "0190f2a1-0000-7000-8000-000000000b0b" };
const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const streamOf = (k: number) => `acme_journal_${k}_of_3`;

describe("permissions-shards.example.conf against a follower and the runtime", () => {
  let server: NatsServer;
  let alice: NatsConnection;
  let runtimeRaw: NatsConnection;
  const buses: Jetloop[] = [];
  const denials: string[] = [];
  beforeAll(async () => {
    server = await startServer({ configText: readFileSync(CONF, "utf8") });
    const ops = await connect({ servers: server.url, namespace: "acme", shards: 3, user: "ops", pass: "ops-example-password" });
    buses.push(ops);
    await ops.provision();
    const runtime = await connect({ servers: server.url, namespace: "acme", shards: 3, user: "runtime", pass: "runtime-example-password", natsOptions: { inboxPrefix: "_INBOX_runtime" } });
    buses.push(runtime);
    for (const s of [ALICE.session, BOB.session]) for (let i = 0; i < 2; i++) await runtime.publish(enduring(newCoords(s)));
    alice = await natsConnect({ servers: server.url, user: ALICE.user, pass: ALICE.pass, inboxPrefix: ALICE.inbox });
    runtimeRaw = await natsConnect({ servers: server.url, user: "runtime", pass: "runtime-example-password", inboxPrefix: "_INBOX_runtime" });
    for (const nc of [alice, runtimeRaw]) {
      void (async () => {
        for await (const s of nc.status()) if (s.type === "error") denials.push(JSON.stringify(s));
      })();
    }
  }, 60_000);
  afterAll(async () => {
    await alice?.close();
    await runtimeRaw?.close();
    for (const b of buses) await b.close().catch(() => undefined);
    await server?.close();
  });

  it("the example's sessions are in the shards it says", () => {
    expect(shardOfSession(ALICE.session, 3).index).toBe(2);
    expect(shardOfSession(BOB.session, 3).index).toBe(0);
  });

  /**
   * Which of `subjects` the server refused: each refusal is its own permission error, so
   * this waits until every one has come (the claim is that all are refused), and after 10 s
   * says which did not, rather than counting what came within a quiet window.
   */
  const refusedOf = async (subjects: readonly string[]) => {
    const refused = () => subjects.filter((s) => denials.some((d) => d.includes(`"${s}"`)));
    await heldWithin(() => refused().length === subjects.length, 10_000);
    return refused();
  };

  /** A request answered with data is a grant; a timeout or "no responders" is a refusal. */
  const answered = async (nc: NatsConnection, subject: string, body: unknown = {}) => {
    try {
      const r = await nc.request(subject, enc(body), { timeout: 1500 });
      return new TextDecoder().decode(r.data);
    } catch {
      return undefined;
    }
  };

  it("alice reads nothing of bob's session nor of another shard through the JetStream API", async () => {
    const bobFilter = `acme.journal-0-of-3.${BOB.session}.>`;
    const attempts: [string, unknown][] = [];
    for (const k of [0, 1, 2]) {
      // Her own shard's info too: its subjects_filter would list every session of the shard.
      attempts.push([`$JS.API.STREAM.INFO.${streamOf(k)}`, { subjects_filter: ">" }]);
      attempts.push(
        [`$JS.API.STREAM.MSG.GET.${streamOf(k)}`, { seq: 1 }],
        [`$JS.API.DIRECT.GET.${streamOf(k)}`, { seq: 1 }],
        [`$JS.API.DIRECT.GET.${streamOf(k)}.${bobFilter.slice(0, -2)}.>`, {}],
        [`$JS.API.CONSUMER.LIST.${streamOf(k)}`, {}],
        [`$JS.API.CONSUMER.NAMES.${streamOf(k)}`, {}],
        [`$JS.API.CONSUMER.CREATE.${streamOf(k)}`, { stream_name: streamOf(k), config: { ack_policy: "none", filter_subject: bobFilter, deliver_subject: `${ALICE.inbox}.x` } }],
        [`$JS.API.CONSUMER.CREATE.${streamOf(k)}.alice_0`, { stream_name: streamOf(k), config: { name: "alice_0", ack_policy: "none", filter_subject: bobFilter } }],
        [`$JS.API.CONSUMER.CREATE.${streamOf(k)}.alice_0.${bobFilter}`, { stream_name: streamOf(k), config: { name: "alice_0", ack_policy: "none", filter_subject: bobFilter } }],
        [`$JS.API.CONSUMER.DURABLE.CREATE.${streamOf(k)}.alice_0`, { stream_name: streamOf(k), config: { durable_name: "alice_0", ack_policy: "none", filter_subject: bobFilter } }],
      );
    }
    for (const s of ["acme_parked", "acme_partitioned", "acme_members"]) attempts.push([`$JS.API.STREAM.INFO.${s}`, {}], [`$JS.API.DIRECT.GET.${s}`, { seq: 1 }]);
    attempts.push([`$JS.API.STREAM.NAMES`, {}], [`$JS.API.STREAM.LIST`, {}], [`$JS.API.INFO`, {}]);
    const granted: string[] = [];
    for (const [subject, body] of attempts) if ((await answered(alice, subject, body)) !== undefined) granted.push(subject);
    expect(granted).toEqual([]);
  }, 120_000);

  it("her own create subject cannot carry a body that widens the filter (filter_subjects, another shard's session, the shard's root)", async () => {
    const own = `acme.journal-2-of-3.${ALICE.session}.>`;
    const subject = `$JS.API.CONSUMER.CREATE.${streamOf(2)}.alice_1.${own}`;
    const wider = [`acme.journal-2-of-3.>`, `acme.journal-2-of-3.*.>`, `acme.journal-0-of-3.${BOB.session}.>`, ">"];
    const bodies: Record<string, unknown>[] = [
      ...wider.map((w) => ({ name: "alice_1", ack_policy: "none", filter_subjects: [own, w] })),
      ...wider.map((w) => ({ name: "alice_1", ack_policy: "none", filter_subjects: [w] })),
      ...wider.map((w) => ({ name: "alice_1", ack_policy: "none", filter_subject: w })),
      { name: "alice_1", ack_policy: "none" },
    ];
    // Her own body on it is taken (so a refusal below is the server's check, not a missing grant).
    const mine = await answered(alice, subject, { stream_name: streamOf(2), config: { name: "alice_1", ack_policy: "none", filter_subject: own } });
    expect(mine).toContain('"config"');
    await answered(alice, `$JS.API.CONSUMER.DELETE.${streamOf(2)}.alice_1`);
    const widened: string[] = [];
    for (const config of bodies) {
      const r = await answered(alice, subject, { stream_name: streamOf(2), config });
      if (r !== undefined && !r.includes('"error"')) widened.push(JSON.stringify(config));
      await answered(alice, `$JS.API.CONSUMER.DELETE.${streamOf(2)}.alice_1`);
    }
    expect(widened).toEqual([]);
  }, 120_000);

  it("alice subscribes to nothing of bob's, the journal or other shards' advisories", async () => {
    denials.length = 0;
    const subjects = [
      `acme.feed.${BOB.session}.>`, `acme.live.${BOB.session}.>`, "acme.feed.>", "acme.live.>", "acme.journal-0-of-3.>", "acme.journal-2-of-3.>",
      `acme.journal-2-of-3.${ALICE.session}.>`, `acme.cmd.${BOB.session}.>`, `acme.cmd.${ALICE.session}.>`, "_INBOX_bob.>", "_INBOX_runtime.>", ">",
      "$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.acme_journal_0_of_3", "$JS.EVENT.ADVISORY.>", "acme.partition.>", "acme.parked.>",
    ];
    for (const s of subjects) alice.subscribe(s);
    await alice.flush();
    expect(await refusedOf(subjects)).toEqual(subjects);
  });

  it("the runtime writes nothing outside its namespace's journal shards and previews", async () => {
    denials.length = 0;
    const subjects = [
      "acme.feed.x.y", "acme.parked.d.held.1", "acme.partition.0.s.x", "acme.members.g.m", `acme.cmd.${ALICE.session}._.input`, "acme.journal.s.x",
      "acme.journal-3-of-3.s.x", "acme.journal-0-of-2.s.x", "other.journal-0-of-3.s.x", "other.live.s.x", "$JS.API.STREAM.CREATE.x",
      `$JS.API.CONSUMER.CREATE.${streamOf(0)}`, `$JS.API.STREAM.PURGE.${streamOf(0)}`, `$JS.API.STREAM.MSG.DELETE.${streamOf(0)}`, "$JS.API.STREAM.INFO.acme_parked",
    ];
    for (const s of subjects) runtimeRaw.publish(s, enc({}));
    await runtimeRaw.flush();
    expect(await refusedOf(subjects)).toEqual(subjects);
  });
});
