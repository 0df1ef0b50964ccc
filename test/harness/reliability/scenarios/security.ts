// Scenario 7: security. A server running deploy/nats/permissions.example.conf verbatim:
// alice and bob may each follow only their own session. Each follows its session; every
// attempt to read the other's (through jetloop, or through the raw JetStream API) is
// refused, through jetloop promptly with a typed PermissionDeniedError; a follower cannot
// append. Events carrying grant tokens or raw tool arguments are rejected, poison carrying
// them is reported, and neither the stream nor any log line holds them.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { AckPolicy, jetstreamManager } from "@nats-io/jetstream";
import { connect as natsConnect, PermissionViolationError, type NatsConnection } from "@nats-io/transport-node";
import {
  connect,
  createEvent,
  encodeEvent,
  isJetloopError,
  newId,
  PermissionDeniedError,
  type Jetloop,
  type JetloopEvent,
  type SubscriptionReport,
} from "../../../../src/index.js";
import { startGateway } from "../../../../src/gateway/index.js";
import { REPO_ROOT, startServer } from "../../server.js";
import { heldWithin, sleep } from "../../async.js";
import { row, tally, type ScenarioRecord } from "../figures.js";
import { auditStream, captureLogger, collect, enduring, ephemeral, eventIdOf, newCoords, type CapturedLog } from "../workload.js";
import { outOfOrder, record, type ScenarioContext } from "./common.js";
import { groupName, serviceNames, targetsFor, tryCrossings, type CrossingResult } from "./crossings.js";

export const PERMISSIONS_EXAMPLE = join(REPO_ROOT, "deploy/nats/permissions.example.conf");

/** What the example configuration declares. */
export const EXAMPLE = {
  namespace: "acme",
  stream: "acme_journal",
  alice: { user: "alice", pass: "alice-example-password", session: "0190f2a1-0000-7000-8000-00000000a11c", inbox: "_INBOX_alice", readConsumers: { prefix: "alice", size: 4 } },
  bob: { user: "bob", pass: "bob-example-password", session: "0190f2a1-0000-7000-8000-000000000b0b", inbox: "_INBOX_bob", readConsumers: { prefix: "bob", size: 4 } },
  runtime: { user: "runtime", pass: "runtime-example-password", inbox: "_INBOX_runtime" },
  gateway: { user: "gateway", pass: "gateway-example-password", inbox: "_INBOX_gateway" },
  ops: { user: "ops", pass: "ops-example-password" },
} as const;

/** Markers that must never be found in the stream or a log line. */
export const SECRETS = {
  /** In appends that jetloop must reject. */
  rejectedGrant: "gt-REJECTED-4b1d-SECRET",
  rejectedArgument: "curl -H 'Authorization: Bearer REJECTED-ARG-SECRET'",
  /** In poison injected raw (by an operator connection) that followers must report, not yield or log. */
  poisonGrant: "gt-POISON-93e0-SECRET",
  poisonArgument: "POISON-ARG-SECRET --password hunter2",
} as const;

export interface Refusal {
  readonly what: string;
  /** The error's class name, or "accepted". */
  readonly outcome: string;
  readonly typed: boolean;
  /** PermissionDeniedError.subject: the subject the server refused. */
  readonly subject?: string;
  readonly ms: number;
  /** The jetloop error code, when typed. */
  readonly code?: string;
}

export interface SecurityResult {
  readonly record: ScenarioRecord;
  readonly alice: ReturnType<typeof tally> & { foreign: number };
  readonly bob: ReturnType<typeof tally> & { foreign: number };
  /** The gateway user on the namespace feed: every session's enduring events, in journal order. */
  readonly gateway: ReturnType<typeof tally> & { outOfOrder: number };
  /** The durable "billing", read after alice's attacks on it: every enduring event once. */
  readonly billing: ReturnType<typeof tally>;
  readonly refusals: Refusal[];
  /** Events alice replayed from her own session (its enduring events). */
  readonly ownReplay: number;
  readonly ownEnduring: number;
  readonly attacks: { what: string; refused: boolean; how: string }[];
  /** The crossing table (crossings.ts): every consumer path × every consumer not hers. */
  readonly crossings: CrossingResult;
  /** The gateway with a per-user principal (alice's token sees her session): bob's paths by HTTP status. */
  readonly gatewayAttempts: { what: string; status: number; ms: number; events: number }[];
  /** Her pool's consumers left on the server after her reads ended. */
  readonly poolLeft: string[];
  readonly secretAppends: { what: string; outcome: string; typed: boolean; leaksInMessage: boolean }[];
  readonly poisonInjected: number;
  readonly poisonReported: number;
  readonly logLines: number;
  readonly logHits: string[];
  readonly streamHits: number;
  readonly deliveredHits: number;
}

async function timed(what: string, f: () => Promise<unknown>): Promise<Refusal> {
  const t = Date.now();
  try {
    const v = await f();
    if (v && typeof v === "object" && "close" in v) await (v as { close: () => Promise<void> }).close();
    return { what, outcome: "accepted", typed: false, ms: Date.now() - t };
  } catch (e) {
    const typed = e instanceof PermissionDeniedError;
    // Answer commands and controls refuse with a CommandError of code PERMISSION_DENIED.
    const outcome = typed || isJetloopError(e, "PERMISSION_DENIED") ? "PermissionDeniedError" : e instanceof Error ? e.name : String(e);
    return { what, outcome, typed: isJetloopError(e, "PERMISSION_DENIED"), ...(typed ? { subject: e.subject } : isJetloopError(e, "PERMISSION_DENIED") ? { subject: e.message.replace(/^.* on /, "") } : {}), ms: Date.now() - t, ...(isJetloopError(e) ? { code: e.code } : {}) };
  }
}

/** Sends a raw request; "refused" when the server's permissions or the JetStream API say no. */
async function attack(nc: NatsConnection, what: string, subject: string, body: unknown): Promise<{ what: string; refused: boolean; how: string }> {
  try {
    const m = await nc.request(subject, JSON.stringify(body), { timeout: 3000 });
    const r = m.json<{ error?: { description?: string } }>();
    return r.error ? { what, refused: true, how: `JetStream API error: ${r.error.description ?? "?"}` } : { what, refused: false, how: "answered" };
  } catch (e) {
    const pv = e instanceof PermissionViolationError || (e instanceof Error && e.cause instanceof PermissionViolationError);
    return { what, refused: pv, how: pv ? "permissions violation" : `error: ${e instanceof Error ? e.message : String(e)}` };
  }
}

/** Subscribes raw; "refused" when the server reports a subscription violation. */
async function snoop(nc: NatsConnection, what: string, subject: string): Promise<{ what: string; refused: boolean; how: string }> {
  let err: Error | undefined;
  let got = 0;
  const sub = nc.subscribe(subject, {
    callback: (e) => {
      if (e) err = e;
      else got++;
    },
  });
  await nc.flush();
  await sleep(100);
  sub.unsubscribe();
  return { what, refused: err instanceof PermissionViolationError && got === 0, how: err ? "permissions violation" : `subscribed (${got} messages)` };
}

export async function securityScenario(ctx: ScenarioContext, o: { events: number }): Promise<SecurityResult> {
  const t0 = Date.now();
  const server = await startServer({ configText: readFileSync(PERMISSIONS_EXAMPLE, "utf8") });
  const { namespace, alice: A, bob: B } = EXAMPLE;
  const logs: Record<string, CapturedLog> = { runtime: captureLogger("debug"), alice: captureLogger("debug"), bob: captureLogger("debug"), gateway: captureLogger("debug") };
  const buses: Jetloop[] = [];
  const conns: NatsConnection[] = [];
  const open = async (who: "runtime" | "alice" | "bob" | "gateway") => {
    const u = EXAMPLE[who];
    // Followers name their reads' consumers from their own pool (the example grants them those names only).
    const pool = who === "alice" || who === "bob" ? { readConsumers: EXAMPLE[who].readConsumers } : {};
    const bus = await connect({ servers: server.url, namespace, user: u.user, pass: u.pass, ...pool, logger: logs[who]!.logger, natsOptions: { inboxPrefix: u.inbox, name: `reliability-${who}` } });
    buses.push(bus);
    return bus;
  };
  try {
    const ops = await connect({ servers: server.url, namespace, user: EXAMPLE.ops.user, pass: EXAMPLE.ops.pass, logger: captureLogger("debug").logger });
    buses.push(ops);
    await ops.provision({ partitions: 2 });
    // A service's durable with the README's guessable name, holding an undelivered event.
    const billing = await ops.subscribeEvents({ enduring: "all" }, { durable: "billing" });
    const runtime = await open("runtime");
    const alice = await open("alice");
    const bob = await open("bob");
    const gateway = await open("gateway");

    // --- each follows its own session --------------------------------------------------
    const poison: SubscriptionReport[] = [];
    const aSub = await alice.session(A.session).subscribeEvents({ enduring: "all", ephemeral: "all" }, { start: "all", onReport: (r) => r.kind === "poison" && poison.push(r) });
    const bSub = await bob.session(B.session).subscribeEvents({ enduring: "all", ephemeral: "all" }, { start: "all" });
    const gGot = collect(await gateway.subscribeEvents({ enduring: "all" }, { start: "all", feed: "namespace" }));
    const aGot = collect(aSub, { keep: true });
    const bGot = collect(bSub, { keep: true });
    const ca = newCoords(A.session);
    const cb = newCoords(B.session);
    const published: Record<string, string[]> = { [A.session]: [], [B.session]: [] };
    const journaled: string[] = [];
    for (let i = 0; i < o.events; i++) {
      for (const c of [ca, cb]) {
        const e = i % 2 === 0 ? enduring(c) : ephemeral(c);
        await runtime.publish(e);
        published[c.sessionId]!.push(eventIdOf(e));
        if (i % 2 === 0) journaled.push(eventIdOf(e));
      }
    }
    await Promise.allSettled([aGot.waitForAll(published[A.session]!, 15_000), bGot.waitForAll(published[B.session]!, 15_000), gGot.waitForAll(journaled, 15_000)]);
    await sleep(200);
    const foreign = (got: ReturnType<typeof collect>, own: string) => got.deliveries.filter((d) => (d.event as { sessionId: string }).sessionId !== own).length;
    const aliceT = { ...tally(published[A.session]!, aGot.ids), foreign: foreign(aGot, A.session) };
    const bobT = { ...tally(published[B.session]!, bGot.ids), foreign: foreign(bGot, B.session) };
    const gatewayT = { ...tally(journaled, gGot.ids), outOfOrder: outOfOrder(gGot.seqs) };

    // --- refusals through jetloop ------------------------------------------------------
    const refusals: Refusal[] = [];
    refusals.push(await timed("alice follows bob's session (journal)", () => alice.session(B.session).subscribeEvents({ enduring: "all" })));
    refusals.push(await timed("alice follows every session", () => alice.subscribeEvents({ enduring: "all" })));
    refusals.push(await timed("alice follows her and bob's session", () => alice.subscribeEvents({ enduring: "all", sessions: [A.session, B.session] })));
    refusals.push(
      await timed("alice follows bob's previews", async () => {
        // The server refuses the subscription after it is opened: its iteration rejects with that.
        const s = await alice.session(B.session).subscribeEvents({ ephemeral: "all" });
        const timer = setTimeout(() => void s.close(), 3000); // not refused: a quiet end, counted as a failure
        try {
          for await (const _ of s) break; // a preview of bob's would be a leak
        } finally {
          clearTimeout(timer);
          await s.close();
        }
        return undefined;
      }),
    );
    refusals.push(
      await timed("alice replays bob's session", async () => {
        for await (const _ of alice.session(B.session).replay({ enduring: "all" })) break;
      }),
    );
    refusals.push(await timed("alice follows her own session on the namespace feed", () => alice.session(A.session).subscribeEvents({ enduring: "all" }, { feed: "namespace" })));
    refusals.push(await timed("bob follows alice's session", () => bob.session(A.session).subscribeEvents({ enduring: "all" }, { start: "all" })));
    refusals.push(await timed("alice appends to her own session's journal", () => alice.publish(enduring(ca))));
    refusals.push(await timed("alice appends to bob's journal", () => alice.publish(enduring(cb))));
    // Answer commands and the session controls of bob's session (request/reply on acme.cmd.<bob>).
    refusals.push(await timed("alice answers a gate of bob's session", () => alice.session(B.session).answer(cb.loopId, { kind: "permission", gateId: newId(), effect: "approve" })));
    // The controls answer with result values: a refusal is { ok: false, error } (thrown here to be timed alike).
    const control = async (r: Promise<{ ok: boolean; error?: unknown }>) => {
      const v = await r;
      if (!v.ok) throw v.error;
    };
    refusals.push(await timed("alice sends input to bob's session", () => control(alice.session(B.session).submitInput([{ type: "text", text: "hi" }]))));
    refusals.push(await timed("alice interrupts bob's session", () => control(alice.session(B.session).interrupt())));
    refusals.push(await timed("bob appends to his own session's journal", () => bob.publish(createEvent("SessionStopped", { sessionId: B.session }))));
    // Her own session still replays (the filter-carrying create subject).
    let ownReplay = 0; // the smaller of her replays before and after the crossing table
    for await (const _ of alice.session(A.session).replay({ enduring: "all" })) ownReplay++;

    // --- raw JetStream API attempts as alice ---------------------------------------------
    const raw = await natsConnect({ servers: server.url, user: A.user, pass: A.pass, inboxPrefix: A.inbox, name: "reliability-alice-raw" });
    conns.push(raw);
    const create = (filter: Record<string, unknown>) => ({
      stream_name: EXAMPLE.stream,
      config: { name: "sneaky", ack_policy: "none", deliver_policy: "all", mem_storage: true, num_replicas: 1, ...filter },
    });
    const ownFilterSubject = `$JS.API.CONSUMER.CREATE.${EXAMPLE.stream}.sneaky.${namespace}.journal.${A.session}.>`;
    const attacks = [
      await attack(raw, "create on her subject, bob's filter in the config", ownFilterSubject, create({ filter_subject: `${namespace}.journal.${B.session}.>` })),
      await attack(raw, "create on her subject, a wider filter in the config", ownFilterSubject, create({ filter_subject: `${namespace}.journal.>` })),
      await attack(raw, "create on her subject, bob's filter as filter_subjects", ownFilterSubject, create({ filter_subjects: [`${namespace}.journal.${B.session}.>`] })),
      await attack(raw, "create on her subject, no filter in the config", ownFilterSubject, create({})),
      await attack(raw, "create without a filter in the subject", `$JS.API.CONSUMER.CREATE.${EXAMPLE.stream}`, create({ filter_subject: `${namespace}.journal.${B.session}.>` })),
      await attack(raw, "durable create", `$JS.API.CONSUMER.DURABLE.CREATE.${EXAMPLE.stream}.sneaky`, { stream_name: EXAMPLE.stream, config: { durable_name: "sneaky", ack_policy: "explicit" } }),
      await attack(raw, "get a message by sequence", `$JS.API.STREAM.MSG.GET.${EXAMPLE.stream}`, { seq: 2 }),
      await attack(raw, "direct get", `$JS.API.DIRECT.GET.${EXAMPLE.stream}`, { seq: 2 }),
      await attack(raw, "list consumers", `$JS.API.CONSUMER.LIST.${EXAMPLE.stream}`, {}),
      await attack(raw, "purge the stream", `$JS.API.STREAM.PURGE.${EXAMPLE.stream}`, {}),
      await attack(raw, "pull from the durable billing", `$JS.API.CONSUMER.MSG.NEXT.${EXAMPLE.stream}.billing`, { batch: 10, expires: 1_000_000_000 }),
      await attack(raw, "delete the durable billing", `$JS.API.CONSUMER.DELETE.${EXAMPLE.stream}.billing`, {}),
      await attack(raw, "read the durable billing's state", `$JS.API.CONSUMER.INFO.${EXAMPLE.stream}.billing`, {}),
      // Her create subject leaves the name free; the server updates an existing consumer of that name.
      await attack(raw, "re-target the durable billing (a create naming it, her filter)", `$JS.API.CONSUMER.CREATE.${EXAMPLE.stream}.billing.${namespace}.journal.${A.session}.>`, {
        stream_name: EXAMPLE.stream,
        config: { name: "billing", durable_name: "billing", ack_policy: "explicit", filter_subject: `${namespace}.journal.${A.session}.>` },
      }),
      await snoop(raw, "subscribe to the journal subjects", `${namespace}.journal.>`),
      await snoop(raw, "subscribe to bob's previews", `${namespace}.live.${B.session}.>`),
      await snoop(raw, "subscribe to bob's feed", `${namespace}.feed.${B.session}.>`),
      await snoop(raw, "subscribe to every session's feed", `${namespace}.feed.>`),
      await snoop(raw, "subscribe to every inbox", "_INBOX.>"),
      await snoop(raw, "subscribe to bob's inbox", `${B.inbox}.>`),
    ];

    // --- the crossing table ---------------------------------------------------------------
    const services = serviceNames(2, 7);
    for (const name of services) await (await ops.subscribeEvents({ enduring: "all" }, { durable: name })).close();
    const opsJsm = await ops.jetstreamManager();
    const group = groupName(7);
    const partitionedStream = `${namespace.replaceAll(".", "_")}_partitioned`;
    for (let p = 0; p < 2; p++) {
      await opsJsm.consumers.add(partitionedStream, { durable_name: `${group}_p${p}`, ack_policy: AckPolicy.Explicit, filter_subject: `${namespace}.partition.${p}.>` });
    }
    // Bob's pool, as his reads would create it (his own grant).
    const bobRaw = await natsConnect({ servers: server.url, user: B.user, pass: B.pass, inboxPrefix: B.inbox, name: "reliability-bob-raw" });
    conns.push(bobRaw);
    const bobJsm = await jetstreamManager(bobRaw, { checkAPI: false });
    for (const name of ["bob_0", "bob_1", "bob_2", "bob_3"]) await bobJsm.consumers.add(EXAMPLE.stream, { name, ack_policy: AckPolicy.None, filter_subject: `${namespace}.journal.${B.session}.>` });
    const targets = targetsFor({
      stream: EXAMPLE.stream,
      partitionedStream,
      namespace,
      services: ["billing", ...services],
      group,
      partitions: 2,
      otherPrefix: "bob",
      otherSession: B.session,
      ownPrefix: "alice",
      poolSize: 4,
    });
    // The gateway, with a per-user principal: alice's token sees her session only.
    const gw = await startGateway(gateway, {
      listen: "127.0.0.1:0",
      authenticate: (req) => (req.headers.authorization === "Bearer alice-token" ? { canSee: (sid) => sid === A.session } : false),
    });
    const gatewayPaths: [string, string, string][] = [
      ["GET", `/v1/sessions/${B.session}/status`, "status"],
      ["GET", `/v1/sessions/${B.session}/journal`, "journal page"],
      ["GET", `/v1/sessions/${B.session}/events`, "event stream"],
      ["POST", `/v1/sessions/${B.session}/gates/${newId()}`, "gate answer"],
      ["POST", `/v1/sessions/${B.session}/input`, "input"],
      ["POST", `/v1/sessions/${B.session}/interrupt`, "interrupt"],
    ];
    const gatewayAttempts: SecurityResult["gatewayAttempts"] = [];
    try {
      for (const [method, path, what] of gatewayPaths) {
        const t = Date.now();
        const res = await fetch(`${gw.url}${path}`, {
          method,
          headers: { authorization: "Bearer alice-token", "content-type": "application/json" },
          ...(method === "POST" ? { body: JSON.stringify({ commandId: newId(), effect: "approve", blocks: [{ type: "text", text: "x" }] }) } : {}),
          signal: AbortSignal.timeout(3000),
        });
        // The journal route never answers 404 (the Go runtime's reference §4): a hidden session reads as an empty page.
        const events = what === "journal page" ? ((await res.json()) as { events: unknown[] }).events.length : (await res.body?.cancel(), 0);
        gatewayAttempts.push({ what: `bob's ${what} with alice's token`, status: res.status, ms: Date.now() - t, events });
      }
      const own = await fetch(`${gw.url}/v1/sessions/${A.session}/status`, { headers: { authorization: "Bearer alice-token" }, signal: AbortSignal.timeout(3000) });
      await own.body?.cancel();
      gatewayAttempts.push({ what: "her own status with her token", status: own.status, ms: 0, events: 0 });
    } finally {
      await gw.close();
    }

    const crossings = await tryCrossings({ follower: raw, bus: alice, ops: opsJsm, targets, ownFilter: `${namespace}.journal.${A.session}.>`, ownSession: A.session });
    for (const name of ["bob_0", "bob_1", "bob_2", "bob_3"]) await opsJsm.consumers.delete(EXAMPLE.stream, name);
    // Her own reads still work after the table, and leave none of her pool's consumers.
    let ownAfter = 0;
    for await (const _ of alice.session(A.session).replay({ enduring: "all" })) ownAfter++;
    const poolLeft: string[] = [];
    for await (const c of opsJsm.consumers.list(EXAMPLE.stream)) if (c.name.startsWith("alice_")) poolLeft.push(c.name);
    ownReplay = Math.min(ownReplay, ownAfter);

    // The durable kept every delivery: none pulled away, it was not deleted.
    const billingGot = collect(billing);
    await billingGot.waitForAll(journaled, 15_000).catch(() => undefined);
    const billingT = tally(journaled, billingGot.ids);
    await billing.close();

    // --- secrets: rejected appends, reported poison ------------------------------------
    const request = { toolName: "bash", command: "deploy", requirements: [{ kind: "fs.write", match: "/srv", description: "write /srv" }] };
    const step = { ...ca, toolExecutionId: newId() };
    const secretAppends: SecurityResult["secretAppends"] = [];
    const trySecret = async (what: string, build: () => JetloopEvent) => {
      try {
        await runtime.publish(build());
        secretAppends.push({ what, outcome: "accepted", typed: false, leaksInMessage: false });
      } catch (e) {
        const msg = e instanceof Error ? `${e.message} ${String((e.cause as Error | undefined)?.message ?? "")}` : String(e);
        const leaks = Object.values(SECRETS).some((s) => msg.includes(s));
        secretAppends.push({ what, outcome: isJetloopError(e) ? e.code : e instanceof Error ? e.name : "?", typed: isJetloopError(e), leaksInMessage: leaks });
      }
    };
    await trySecret("request with a grant token", () => ({ ...createEvent("PermissionRequested", { ...step, request }), request: { ...request, grantToken: SECRETS.rejectedGrant } }) as JetloopEvent);
    await trySecret("request with raw arguments", () => ({ ...createEvent("PermissionRequested", { ...step, request }), request: { ...request, arguments: { cmd: SECRETS.rejectedArgument } } }) as JetloopEvent);
    await trySecret("requirement with raw arguments", () =>
      ({ ...createEvent("PermissionRequested", { ...step, request }), request: { ...request, requirements: [{ ...request.requirements[0], rawArguments: SECRETS.rejectedArgument }] } }) as unknown as JetloopEvent,
    );
    await trySecret("requirement with a grant token", () =>
      ({ ...createEvent("PermissionRequested", { ...step, request }), request: { ...request, requirements: [{ ...request.requirements[0], grantToken: SECRETS.rejectedGrant }] } }) as unknown as JetloopEvent,
    );
    await trySecret("request encoded as a string", () => ({ ...createEvent("PermissionRequested", { ...step, request }), request: JSON.stringify({ ...request, grant_token: SECRETS.rejectedGrant }) }) as unknown as JetloopEvent);
    await trySecret("decision carrying a grant token", () => ({ ...createEvent("PermissionDecided", { ...step, effect: "approve" }), grantToken: SECRETS.rejectedGrant }) as JetloopEvent);
    await trySecret("preview carrying raw arguments", () => ({ ...createEvent("ToolCallStarted", { ...step, toolName: "bash" }), arguments: SECRETS.rejectedArgument }) as JetloopEvent);

    // Poison with secrets, injected raw by an operator connection into alice's session.
    const opsRaw = await natsConnect({ servers: server.url, user: EXAMPLE.ops.user, pass: EXAMPLE.ops.pass });
    conns.push(opsRaw);
    const good = createEvent("PermissionRequested", { ...ca, toolExecutionId: newId(), request });
    const goodWire = JSON.parse(new TextDecoder().decode(encodeEvent(good))) as Record<string, unknown>;
    const journalSubject = `${namespace}.journal.${A.session}.${ca.loopId}.tool.PermissionRequested`;
    const poisonPayloads: [string, string][] = [
      [journalSubject, JSON.stringify({ ...goodWire, request: { ...(goodWire.request as object), grant_token: SECRETS.poisonGrant } })],
      [journalSubject, JSON.stringify({ ...goodWire, request: { ...(goodWire.request as object), arguments: [SECRETS.poisonArgument] } })],
      [journalSubject, `{"type":"PermissionRequested","v":1,"request":{"grant_token":"${SECRETS.poisonGrant}"`], // truncated JSON
      [journalSubject, `{"type":"PermissionRequested","grant_token":"${SECRETS.poisonGrant}","grant_token":"x"}`], // duplicate key
      [`${namespace}.live.${A.session}.${ca.loopId}.tool.ToolCallStarted`, `{"type":"ToolCallStarted","summary":"${SECRETS.poisonArgument}" oops}`],
      [`${namespace}.live.${A.session}.${ca.loopId}.tool.ToolCallStarted`, JSON.stringify({ type: "ToolCallStarted", v: 1, session_id: A.session, tool_name: SECRETS.poisonArgument })],
    ];
    for (const [subject, data] of poisonPayloads) {
      if (subject.includes(".journal.")) await opsRaw.request(subject, data, { timeout: 3000 });
      else opsRaw.publish(subject, data);
    }
    await opsRaw.flush();
    await heldWithin(() => poison.length >= poisonPayloads.length, 5000);
    await sleep(200);

    // --- scan ----------------------------------------------------------------------------
    const audit = await auditStream(opsRaw, EXAMPLE.stream, { payloads: true });
    const streamText = audit.payloads.map((p) => new TextDecoder().decode(p));
    const rejectedMarkers = [SECRETS.rejectedGrant, SECRETS.rejectedArgument];
    const streamHits = streamText.filter((t) => rejectedMarkers.some((m) => t.includes(m))).length;
    const allLines = Object.values(logs).flatMap((l) => l.lines);
    const logHits = allLines.filter((l) => Object.values(SECRETS).some((m) => l.includes(m)));
    const delivered = [...aGot.deliveries, ...bGot.deliveries].map((d) => JSON.stringify(d.event));
    const deliveredHits = delivered.filter((t) => Object.values(SECRETS).some((m) => t.includes(m))).length;

    await aSub.close();
    await bSub.close();
    const slowest = Math.max(...refusals.map((r) => r.ms));
    const r = record(
      ctx,
      "7-security",
      "Per-session permissions; no secrets in payloads or logs",
      server.version,
      t0,
      [
        row("alice follows her session (journal + previews)", aliceT, { "bob's events delivered": aliceT.foreign }),
        row("bob follows his session (journal + previews)", bobT, { "alice's events delivered": bobT.foreign }),
        row("the gateway follows every session (namespace feed, journal)", gatewayT, { "out of order": gatewayT.outOfOrder }),
        row("the durable billing, after alice tried to pull from it and delete it", billingT, {}),
        row("appends carrying a grant token or raw arguments", { published: secretAppends.length, delivered: secretAppends.filter((s) => s.outcome === "accepted").length, lost: null, duplicated: 0 }, {
          "refused with a typed error": secretAppends.filter((s) => s.typed).length,
          "stored with the extra envelope key dropped": secretAppends.filter((s) => s.outcome === "accepted").length,
          "secret found in the stream": streamHits,
        }),
        row("poison carrying secrets (injected raw)", { published: poisonPayloads.length, delivered: deliveredHits, lost: null, duplicated: 0 }, { "reported (typed)": poison.length }),
      ],
      {
        "refused through jetloop": `${refusals.filter((x) => x.typed).length} of ${refusals.length} with PermissionDeniedError`,
        "slowest refusal (ms)": slowest,
        "own session replayed": ownReplay,
        "raw API / subscribe attempts refused": `${attacks.filter((a) => a.refused).length} of ${attacks.length}`,
        "crossing table: targets": crossings.targets.map((t) => `${t.kind} ${t.stream}/${t.name}`).join("; "),
        ...crossingFacts(crossings),
        "crossing table: attempts not refused (crossings)": crossings.attempts.filter((a) => !a.refused).length,
        "crossing table: slowest refusal (ms)": Math.max(...crossings.attempts.map((a) => a.ms)),
        "crossing table: consumers whose config changed": crossings.changed.length,
        "her pool's consumers left after her reads": poolLeft.length,
        ...Object.fromEntries(gatewayAttempts.map((g) => [`gateway (per-user principal): ${g.what}`, `HTTP ${g.status}${g.what.includes("journal") ? `, ${g.events} events` : ""}`])),
        "log lines scanned (debug level)": allLines.length,
        "secrets found in logs": logHits.length,
        "rejected secrets found in the stream": streamHits,
        "secrets in delivered events": deliveredHits,
      },
    );
    return {
      record: r,
      alice: aliceT,
      gateway: gatewayT,
      billing: billingT,
      bob: bobT,
      refusals,
      ownReplay,
      ownEnduring: Math.ceil(o.events / 2),
      attacks,
      crossings,
      gatewayAttempts,
      poolLeft,
      secretAppends,
      poisonInjected: poisonPayloads.length,
      poisonReported: poison.length,
      logLines: allLines.length,
      logHits,
      streamHits,
      deliveredHits,
    };
  } finally {
    for (const b of buses) await b.close().catch(() => undefined);
    for (const c of conns) await c.close().catch(() => undefined);
    await server.close();
  }
}

/** One fact per path of the crossing table: how many of its targets refused it, and how. */
function crossingFacts(c: CrossingResult): Record<string, string> {
  const facts: Record<string, string> = {};
  const paths = [...new Set(c.attempts.map((a) => `${a.via}: ${a.path}`))];
  for (const p of paths) {
    const of = c.attempts.filter((a) => `${a.via}: ${a.path}` === p);
    const hows = [...new Set(of.filter((a) => a.refused).map((a) => a.how.replace(/: .*$/, "")))].join(", ");
    facts[`crossing table, ${p}`] = `refused for ${of.filter((a) => a.refused).length} of ${of.length} targets (${hows})`;
  }
  return facts;
}
