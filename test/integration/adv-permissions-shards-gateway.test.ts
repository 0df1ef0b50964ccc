// Adversary: the gateway on a namespace split in 3 shards, as the gateway user of
// deploy/nats/permissions-shards.example.conf (verbatim) confines it. The grant is enough:
// sessions of every shard are served (status, journal page, event stream, the session
// list); and no wider than the gateway's of permissions.example.conf per shard: every NATS
// request or subscription it has no need of is refused by the server, and through the HTTP
// surface a principal that sees one session gets nothing of the others, in any shard.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { connect as natsConnect, type NatsConnection, PermissionViolationError } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, newId, startGateway, type Jetloop } from "../../src/index.js";
import { shardOfSession } from "../../src/streams/shards.js";
import { REPO_ROOT, startServer, type NatsServer } from "../harness/server.js";
import { EXAMPLE } from "../harness/reliability/scenarios/security.js";
import { enduring, eventIdOf, newCoords } from "../harness/reliability/workload.js";
import { SseReader } from "./gateway/http.js";

const S = 3;
const CONFIG = join(REPO_ROOT, "deploy/nats/permissions-shards.example.conf");
const { namespace, alice: A, bob: B, runtime: R, ops: O, gateway: G } = EXAMPLE;
const stream = (k: number) => `acme_journal_${k}_of_${S}`;

let server: NatsServer;
let runtime: Jetloop;
let gatewayBus: Jetloop;
let raw: NatsConnection;
const buses: Jetloop[] = [];
/** A session of each shard (alice's is in 2, bob's in 0), with the ids of what the runtime appended. */
const sessions: { session: string; shard: number; ids: string[] }[] = [];

beforeAll(async () => {
  server = await startServer({ configText: readFileSync(CONFIG, "utf8") });
  const ops = await connect({ servers: server.url, namespace, shards: S, user: O.user, pass: O.pass });
  buses.push(ops);
  await ops.provision();
  runtime = await connect({ servers: server.url, namespace, shards: S, user: R.user, pass: R.pass, natsOptions: { inboxPrefix: R.inbox } });
  buses.push(runtime);
  let middle = newCoords().sessionId;
  while (shardOfSession(middle, S).index !== 1) middle = newCoords().sessionId;
  for (const session of [B.session, middle, A.session]) {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const e = enduring(newCoords(session));
      await runtime.publish(e);
      ids.push(eventIdOf(e));
    }
    sessions.push({ session, shard: shardOfSession(session, S).index, ids });
  }
  gatewayBus = await connect({ servers: server.url, namespace, shards: S, user: G.user, pass: G.pass, natsOptions: { inboxPrefix: G.inbox } });
  buses.push(gatewayBus);
  raw = await natsConnect({ servers: server.url, user: G.user, pass: G.pass, inboxPrefix: G.inbox });
}, 60_000);

afterAll(async () => {
  await raw?.close();
  for (const b of buses) await b.close().catch(() => undefined);
  await server?.close();
});

/** A raw request as the gateway user: refused when the server reports a permissions violation. */
async function refused(subject: string, body: unknown = {}): Promise<string> {
  try {
    const m = await raw.request(subject, JSON.stringify(body), { timeout: 3000 });
    const r = m.json<{ error?: { description?: string } }>();
    return r.error ? `api error: ${r.error.description}` : "answered";
  } catch (e) {
    return e instanceof PermissionViolationError || (e instanceof Error && e.cause instanceof PermissionViolationError) ? "refused" : `error: ${(e as Error).message}`;
  }
}

async function snooped(subject: string): Promise<string> {
  let err: Error | undefined;
  const sub = raw.subscribe(subject, {
    callback: (e) => {
      if (e) err = e;
    },
  });
  // The server answers a refused SUB with a permissions error before the PONG of the
  // flush that follows it; a second round trip has the client hand that error on first.
  await raw.flush();
  await raw.flush();
  sub.unsubscribe();
  return err instanceof PermissionViolationError ? "refused" : "subscribed";
}

describe("the gateway user of the sharded permissions example", () => {
  it("places a session in each shard", () => {
    expect(sessions.map((s) => s.shard)).toEqual([0, 1, 2]);
  });

  it("serves sessions of every shard: status, journal page, event stream and the session list", async () => {
    const gw = await startGateway(gatewayBus, { listen: "127.0.0.1:0", authenticate: (req) => req.headers.authorization === "Bearer ops-token" });
    const auth = { authorization: "Bearer ops-token" };
    try {
      for (const { session, ids } of sessions) {
        const status = await fetch(`${gw.url}/v1/sessions/${session}/status`, { headers: auth });
        expect({ session, status: status.status }).toEqual({ session, status: 200 });
        await status.body?.cancel();
        const page = await fetch(`${gw.url}/v1/sessions/${session}/journal`, { headers: auth });
        expect({ session, status: page.status }).toEqual({ session, status: 200 });
        const body = (await page.json()) as { events: { event_id?: string; eventId?: string }[] };
        expect(body.events.length).toBe(ids.length);
        const sse = await SseReader.open(`${gw.url}/v1/sessions/${session}/events?last_event_id=0`, auth);
        try {
          await sse.until((t) => ids.every((id) => t.includes(id)), 10_000).catch((e: unknown) => { throw new Error(`session ${session}: ${JSON.stringify(ids)} ${sse.text}`, { cause: e }); });
          // Only this session's events: a frame of another shard's same sequence is another session's.
          expect(new Set([...sse.text.matchAll(/"session_id":"([^"]+)"/g)].map((m) => m[1]))).toEqual(new Set([session]));
        } finally {
          sse.close();
        }
      }
      const list = await fetch(`${gw.url}/v1/sessions`, { headers: auth });
      const text = await list.text();
      expect(list.status).toBe(200);
      for (const { session } of sessions) expect(text).toContain(session);
    } finally {
      await gw.close();
    }
  }, 60_000);

  it("a principal that sees one session gets nothing of the others, in any shard", async () => {
    const gw = await startGateway(gatewayBus, { listen: "127.0.0.1:0", authenticate: (req) => (req.headers.authorization === "Bearer alice-token" ? { canSee: (sid) => sid === A.session } : false) });
    const auth = { authorization: "Bearer alice-token", "content-type": "application/json" };
    try {
      const got: [string, number][] = [];
      for (const { session } of sessions.filter((s) => s.session !== A.session)) {
        for (const [method, path] of [["GET", "status"], ["GET", "events"], ["POST", `gates/${newId()}`], ["POST", "input"], ["POST", "interrupt"]] as const) {
          const res = await fetch(`${gw.url}/v1/sessions/${session}/${path}`, { method, headers: auth, ...(method === "POST" ? { body: JSON.stringify({ commandId: newId(), effect: "approve", blocks: [{ type: "text", text: "x" }] }) } : {}), signal: AbortSignal.timeout(5000) });
          await res.body?.cancel();
          got.push([`${method} ${path.split("/")[0]} of shard ${shardOfSession(session, S).index}`, res.status]);
        }
        const page = await fetch(`${gw.url}/v1/sessions/${session}/journal`, { headers: auth });
        got.push([`journal events of shard ${shardOfSession(session, S).index}`, ((await page.json()) as { events: unknown[] }).events.length]);
      }
      for (const [what, status] of got) expect({ what, status }).toEqual({ what, status: what.startsWith("journal") ? 0 : 404 });
      const own = await fetch(`${gw.url}/v1/sessions/${A.session}/status`, { headers: auth });
      await own.body?.cancel();
      expect(own.status).toBe(200);
      const list = await (await fetch(`${gw.url}/v1/sessions`, { headers: auth })).text();
      for (const { session } of sessions) expect({ session, listed: list.includes(session) }).toEqual({ session, listed: session === A.session });
    } finally {
      await gw.close();
    }
  }, 60_000);

  it("no wider than needed: what a gateway never does is refused by the server, for every shard", async () => {
    const attempts: [string, string][] = [];
    for (let k = 0; k < S; k++) {
      const s = stream(k);
      attempts.push(
        [`append to shard ${k}`, await refused(`${namespace}.journal-${k}-of-${S}.${sessions[k]!.session}._.step.StepDone`, {})],
        [`get a message by sequence of shard ${k}`, await refused(`$JS.API.STREAM.MSG.GET.${s}`, { seq: 1 })],
        [`direct get of shard ${k}`, await refused(`$JS.API.DIRECT.GET.${s}`, { seq: 1 })],
        [`purge shard ${k}`, await refused(`$JS.API.STREAM.PURGE.${s}`)],
        [`delete shard ${k}`, await refused(`$JS.API.STREAM.DELETE.${s}`)],
        [`update shard ${k}`, await refused(`$JS.API.STREAM.UPDATE.${s}`, { name: s })],
        [`durable create on shard ${k}`, await refused(`$JS.API.CONSUMER.DURABLE.CREATE.${s}.sneaky`, { stream_name: s, config: { durable_name: "sneaky", ack_policy: "explicit" } })],
        [`filterless create on shard ${k}`, await refused(`$JS.API.CONSUMER.CREATE.${s}`, { stream_name: s, config: { ack_policy: "none" } })],
        [`list consumers of shard ${k}`, await refused(`$JS.API.CONSUMER.LIST.${s}`)],
        [`ack on shard ${k}`, await refused(`$JS.ACK.${s}.billing.1.1.1.0.0`)],
        [`publish on shard ${k}'s leader advisory`, await refused(`$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.${s}`)],
      );
    }
    attempts.push(
      ["create a stream", await refused(`$JS.API.STREAM.CREATE.acme_other`, { name: "acme_other", subjects: ["acme.other.>"] })],
      ["the parked store", await refused(`$JS.API.STREAM.INFO.acme_parked`)],
      ["the unsharded journal's name", await refused(`$JS.API.STREAM.INFO.acme_journal`)],
      ["another shard layout's stream", await refused(`$JS.API.STREAM.INFO.acme_journal_0_of_2`)],
      ["publish on the feed", await refused(`${namespace}.feed.${A.session}.x`)],
      ["account info", await refused("$JS.API.INFO")],
    );
    for (const [what, how] of attempts) expect({ what, how }).toEqual({ what, how: "refused" });
    const subs: [string, string][] = [
      ["the journal subjects of every shard", await snooped(`${namespace}.>`)],
      ["shard 1's journal subjects", await snooped(`${namespace}.journal-1-of-${S}.>`)],
      ["every inbox", await snooped("_INBOX.>")],
      ["alice's inbox", await snooped(`${A.inbox}.>`)],
      ["every JetStream advisory", await snooped("$JS.EVENT.>")],
    ];
    for (const [what, how] of subs) expect({ what, how }).toEqual({ what, how: "refused" });
  }, 120_000);
});
