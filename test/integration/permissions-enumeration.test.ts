// A follower learns nothing of another's sessions through any JetStream API subject
// deploy/nats/permissions.example.conf grants her (SECURITY.md "What a follower's grant
// answers"). The grants are read from the file itself (test/harness/permission-grants.ts):
// each follower's every `$JS.` grant is called as an attacker would, with every body and
// subject tail its pattern admits, and with the listing calls an attacker tries first
// (stream info with subjects_filter ">", stream and consumer lists, direct get and message
// get of another's subject or by sequence). Every answer she gets, and every message that
// reaches a subject she may subscribe to, is scanned for another session's ids (session,
// loop, turn, step, event), other than ids she sent herself. A grant of a kind this file
// has no attack for fails it, so a grant added to the example is covered or refused.
// Positive control: her own session's subscriptions (from "new" and from the start),
// replay and live follow work through jetloop with no request refused, so without the
// stream's info.
import { readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { AckPolicy } from "@nats-io/jetstream";
import { type MsgHdrs, nuid } from "@nats-io/nats-core";
import { connect as natsConnect, type Msg, type NatsConnection, PermissionViolationError } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, newId, type Jetloop } from "../../src/index.js";
import { within } from "../harness/async.js";
import { inboxPrefixOf, isFollower, parseUserGrants, sessionsNamed, type UserGrants } from "../harness/permission-grants.js";
import { PERMISSIONS_EXAMPLE } from "../harness/reliability/scenarios/security.js";
import { collect, enduring, eventIdOf, newCoords } from "../harness/reliability/workload.js";
import { REPO_ROOT, startServer, type NatsServer } from "../harness/server.js";
import { filterSelects } from "../../src/subjects/subjects.js";

const NAMESPACE = "acme";
/** The examples, each with its namespace's shard count (permissions-shards.example.conf is S = 3). */
const EXAMPLES = [
  { file: PERMISSIONS_EXAMPLE, shards: 1 },
  { file: join(REPO_ROOT, "deploy/nats/permissions-shards.example.conf"), shards: 3 },
];
/** Sessions of nobody in the file: other users' sessions a follower must learn nothing of either. */
const EXTRA_SESSIONS = [newId(), newId(), newId()];
const LOOPS_PER_SESSION = 2;
const EVENTS_PER_LOOP = 3;
const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

/** A message's headers as text: status, then every key with its values. */
function headerText(h: MsgHdrs | undefined): string {
  if (!h) return "";
  return `${h.code} ${h.description}\n${h.keys().map((k) => `${k}: ${h.values(k).join(", ")}`).join("\n")}\n`;
}

/** NATS subject matching: `*` one token, `>` one or more at the end. */
const matches = filterSelects;

type Kind = "refused" | "api error" | "answered" | "no answer";
interface Outcome {
  readonly kind: Kind;
  readonly code?: number;
  /** What came back: the reply's headers and payload, as text. */
  readonly text: string;
}

/** A request as an attacker sends it on her raw connection. */
async function call(nc: NatsConnection, subject: string, body?: unknown): Promise<Outcome> {
  try {
    const m = await nc.request(subject, body === undefined ? undefined : enc(body), { timeout: 2000 });
    const text = `${headerText(m.headers)}${dec(m.data)}`;
    if (m.headers?.code !== undefined && m.headers.code >= 400) return { kind: "api error", code: m.headers.code, text };
    const parsed = m.data.length > 0 && m.data[0] === 0x7b ? (JSON.parse(dec(m.data)) as { error?: { err_code?: number } }) : undefined;
    return parsed?.error ? { kind: "api error", code: parsed.error.err_code ?? 0, text } : { kind: "answered", text };
  } catch (e) {
    const pv = e instanceof PermissionViolationError || (e instanceof Error && e.cause instanceof PermissionViolationError);
    return { kind: pv ? "refused" : "no answer", text: "" };
  }
}

/**
 * Pulls everything a consumer of hers delivers (no_wait: the server sends what it has,
 * then a status), onto an inbox of her own; each delivery as text with its subject and
 * reply (the ack subject carries counts).
 */
async function pullAll(nc: NatsConnection, inbox: string, subject: string): Promise<{ outcome: Outcome; deliveries: string[] }> {
  const to = `${inbox}.pull.${nuid.next()}`;
  const deliveries: string[] = [];
  let status: Msg | undefined;
  let refused = false;
  let sub: ReturnType<NatsConnection["subscribe"]> | undefined;
  const done = new Promise<void>((resolve) => {
    sub = nc.subscribe(to, {
      callback: (err, m) => {
        if (err) {
          refused = true;
          return resolve();
        }
        if (m.headers?.code !== undefined && m.headers.code >= 100 && m.data.length === 0) {
          status = m;
          return resolve();
        }
        deliveries.push(`${m.subject} ${m.reply ?? ""} ${headerText(m.headers)}${dec(m.data)}`);
      },
    });
  });
  nc.publish(subject, enc({ batch: 1000, no_wait: true }), { reply: to });
  // A refused pull gets no answer at all (the server drops it): "no answer" after the bound.
  const r = await within(done, 3000, "late" as const);
  sub?.unsubscribe();
  if (refused) return { outcome: { kind: "refused", text: "" }, deliveries };
  if (r === "late") return { outcome: { kind: "no answer", text: deliveries.join("\n") }, deliveries };
  return { outcome: { kind: deliveries.length > 0 ? "answered" : "api error", code: status?.headers?.code, text: deliveries.join("\n") }, deliveries };
}

interface Attempt {
  readonly follower: string;
  readonly what: string;
  readonly subject: string;
  readonly kind: Kind;
  readonly code?: number;
  /** Another session's ids in what came back, other than ids she sent. */
  readonly leaked: string[];
}

interface Journal {
  /** Every id of a session's events (session, loops, turns, steps, events). */
  readonly ids: Map<string, Set<string>>;
  readonly loops: Map<string, string[]>;
  readonly published: Map<string, string[]>;
}

describe.each(EXAMPLES.map((e) => [basename(e.file), e] as const))("permissions (%s): a follower learns nothing of another's sessions (the file's grants, enumerated)", (_file, example) => {
  const TEXT = readFileSync(example.file, "utf8");
  const USERS = parseUserGrants(TEXT);
  const FOLLOWERS = USERS.filter(isFollower);
  /** A session's journal: its shard's stream, its subjects, and their root (`{ns}.journal` or `{ns}.journal-{k}-of-{S}`). */
  const loc = (sid: string) => ops.journalOf(sid);
  const root = (sid: string) => loc(sid).subject.slice(0, -(sid.length + 3));
  let server: NatsServer;
  let ops: Jetloop;
  const journal: Journal = { ids: new Map(), loops: new Map(), published: new Map() };
  const open: NatsConnection[] = [];
  const buses: Jetloop[] = [];

  const ownSessions = (f: UserGrants) => sessionsNamed([...f.publish, ...f.subscribe]);
  const foreignIds = (f: UserGrants): string[] => {
    const own = ownSessions(f);
    return [...journal.ids].filter(([sid]) => !own.has(sid)).flatMap(([, ids]) => [...ids]);
  };
  const publishTo = async (sessionId: string, loops: string[], perLoop: number): Promise<string[]> => {
    const ids = journal.ids.get(sessionId) ?? new Set([sessionId]);
    journal.ids.set(sessionId, ids);
    const out: string[] = [];
    for (const loopId of loops) {
      for (let i = 0; i < perLoop; i++) {
        const c = { ...newCoords(sessionId), loopId };
        const e = enduring(c);
        for (const v of [c.loopId, c.turnId, c.stepId, eventIdOf(e), (e as { toolExecutionId: string }).toolExecutionId]) ids.add(v);
        await ops.publish(e);
        out.push(eventIdOf(e));
      }
    }
    journal.published.set(sessionId, [...(journal.published.get(sessionId) ?? []), ...out]);
    return out;
  };

  beforeAll(async () => {
    server = await startServer({ configText: TEXT });
    const o = USERS.find((u) => !u.restricted)!;
    ops = await connect({ servers: server.url, namespace: NAMESPACE, shards: example.shards, user: o.user, pass: o.password });
    await ops.provision();
    const sessions = [...new Set([...FOLLOWERS.flatMap((f) => [...ownSessions(f)]), ...EXTRA_SESSIONS])];
    for (const sid of sessions) {
      const loops = Array.from({ length: LOOPS_PER_SESSION }, () => newId());
      journal.loops.set(sid, loops);
      await publishTo(sid, loops, EVENTS_PER_LOOP);
    }
    // Consumers of others whose names and filters would name their sessions: a service's
    // durable on one session, and each follower's pool consumer on her session (made by the
    // operator under her pool's first name), for the lists and infos an attacker asks for.
    const jsm = await ops.jetstreamManager();
    const svc = loc(EXTRA_SESSIONS[0]!);
    await jsm.consumers.add(svc.stream, { durable_name: `svc_${EXTRA_SESSIONS[0]!.slice(0, 8)}`, ack_policy: AckPolicy.Explicit, filter_subject: svc.subject });
  }, 60_000);

  afterAll(async () => {
    for (const nc of open) await nc.close().catch(() => undefined);
    for (const b of buses) await b.close().catch(() => undefined);
    await ops?.close();
    await server?.stop();
  });

  it("reads two followers from the example, each granted JetStream API subjects", () => {
    expect(FOLLOWERS.length).toBeGreaterThanOrEqual(2);
    for (const f of FOLLOWERS) {
      expect(ownSessions(f).size, f.user).toBeGreaterThan(0);
      expect(f.publish.filter((g) => g.startsWith("$JS.")).length, f.user).toBeGreaterThan(0);
    }
  });

  describe.each(FOLLOWERS.map((f) => [f.user, f] as const))("%s", (_name, f) => {
    let raw: NatsConnection;
    let inbox: string;
    const seen: string[] = [];

    beforeAll(async () => {
      inbox = inboxPrefixOf(f);
      raw = await natsConnect({ servers: server.url, user: f.user, pass: f.password, inboxPrefix: inbox, name: `enumeration-${f.user}` });
      open.push(raw);
      // Everything that reaches a non-inbox subject she may subscribe to (her feed, her
      // previews, the stream's leader elections) during the whole test, scanned at the end.
      for (const g of f.subscribe.filter((s) => !s.startsWith("_INBOX"))) {
        raw.subscribe(g, { callback: (err, m) => void (err ?? seen.push(`${m.subject} ${headerText(m.headers)}${dec(m.data)}`)) });
      }
      await raw.flush();
    });

    it("every JetStream API grant, called as an attacker would, answers nothing of another session; listing calls are refused", async () => {
      const attempts: Attempt[] = [];
      const foreign = foreignIds(f);
      const own = [...ownSessions(f)];
      const other = [...journal.ids.keys()].filter((s) => !own.includes(s));
      const ownLoop = journal.loops.get(own[0]!)![0]!;
      const record = (what: string, subject: string, sent: string, o: Outcome) => {
        attempts.push({ follower: f.user, what, subject, kind: o.kind, ...(o.code === undefined ? {} : { code: o.code }), leaked: foreign.filter((id) => o.text.includes(id) && !sent.includes(id) && !subject.includes(id)) });
      };
      const tryCall = async (what: string, subject: string, body?: unknown) => {
        const o = await call(raw, subject, body);
        record(what, subject, JSON.stringify(body ?? ""), o);
        return o;
      };
      const tryPull = async (what: string, subject: string) => {
        const { outcome } = await pullAll(raw, inbox, subject);
        record(what, subject, "", outcome);
        return outcome;
      };

      const theirs = other[0]!;
      const theirSubject = `${root(theirs)}.${theirs}.${journal.loops.get(theirs)![0]}.tool.PermissionDecided`;
      const STREAM = loc(own[0]!).stream;
      const total = [...journal.published.values()].reduce((n, ids) => n + ids.length, 0);
      // A pattern's subjects an attacker would pick: "*" as the stream, another's session or
      // her own; a trailing ">" as a token of its own or another's journal subject.
      const instances = (pattern: string): string[] => {
        let out = [pattern];
        for (;;) {
          const i = out.findIndex((x) => x.split(".").some((t) => t === "*" || t === ">"));
          if (i < 0) return out;
          const x = out[i]!;
          const tokens = x.split(".");
          const k = tokens.findIndex((t) => t === "*" || t === ">");
          const choices = tokens[k] === "*" ? [STREAM, theirs, own[0]!] : ["x", theirSubject];
          out = [...out.slice(0, i), ...choices.map((c) => [...tokens.slice(0, k), c, ...tokens.slice(k + 1)].join(".")), ...out.slice(i + 1)];
        }
      };
      const apiGrants = [...f.publish.filter((g) => g.startsWith("$JS.")), ...f.subscribe.filter((g) => g.startsWith("$JS."))];
      const unexplored: string[] = [];
      const consumerOp = (op: string, stream: string, name: string) => `$JS.API.CONSUMER.${op}.${stream}.${name}`;
      for (const grant of apiGrants) {
        const create = /^\$JS\.API\.CONSUMER\.CREATE\.([^.*>]+)\.([^.*>]+)\.(.+)$/.exec(grant);
        const byName = /^\$JS\.API\.CONSUMER\.(MSG\.NEXT|INFO|DELETE)\.([^.*>]+)\.([^.*>]+)$/.exec(grant);
        const advisory = /^\$JS\.EVENT\.ADVISORY\.STREAM\.LEADER_ELECTED\.([^.*>]+)$/.exec(grant);
        if (create) {
          const [, stream, name, filter] = create as unknown as [string, string, string, string];
          // Every subject tail the pattern admits that names a journal subject under it.
          const base = filter.endsWith(".>") ? filter.slice(0, -2) : filter;
          const tails = filter.endsWith(".>") ? [`${base}.>`, `${base}.*.>`, `${base}.${ownLoop}.>`, `${base}.${ownLoop}.tool.PermissionDecided`, `${base}._.>`] : [filter];
          const wider = [`${root(own[0]!)}.>`, ">", `${root(own[0]!)}.*.>`, `${NAMESPACE}.journal.>`, ...other.map((s) => loc(s).subject)];
          for (const tail of tails) {
            const subject = `$JS.API.CONSUMER.CREATE.${stream}.${name}.${tail}`;
            const honest = (extra: Record<string, unknown>) => ({ stream_name: stream, config: { name, ack_policy: "none", filter_subject: tail, ...extra }, action: "create" });
            const policies: Record<string, unknown>[] = [
              { deliver_policy: "all" },
              { deliver_policy: "last" },
              { deliver_policy: "last_per_subject" },
              { deliver_policy: "new" },
              { deliver_policy: "by_start_sequence", opt_start_seq: 1 },
              { deliver_policy: "all", headers_only: true },
              { deliver_policy: "all", ack_policy: "explicit", max_ack_pending: 1000 },
            ];
            for (const p of policies) {
              const o = await tryCall(`create ${JSON.stringify(p)}`, subject, honest(p));
              if (o.kind !== "answered") continue;
              // Her consumer's other grants, on a consumer that exists: info, every delivery, delete.
              await tryCall("info of her consumer", consumerOp("INFO", stream, name));
              await tryPull("pull everything from her consumer", consumerOp("MSG.NEXT", stream, name));
              await tryCall("info after the pull", consumerOp("INFO", stream, name));
              await tryCall("delete her consumer", consumerOp("DELETE", stream, name));
            }
            // A body that does not match the subject: another's, a wider, several or no filter; a push consumer onto her inbox.
            const bodies: Record<string, unknown>[] = [
              ...wider.map((w) => ({ stream_name: stream, config: { name, ack_policy: "none", filter_subject: w } })),
              ...wider.map((w) => ({ stream_name: stream, config: { name, ack_policy: "none", filter_subjects: [tail, w] } })),
              { stream_name: stream, config: { name, ack_policy: "none" } },
              { stream_name: stream, config: { name: `${name}x`, ack_policy: "none", filter_subject: tail } },
              { stream_name: stream, config: { name, durable_name: name, ack_policy: "explicit", filter_subject: tail } },
            ];
            for (const b of bodies) {
              const o = await tryCall(`create with a body not its subject's ${JSON.stringify(b.config)}`, subject, b);
              if (o.kind === "answered") await tryCall("delete what it made", consumerOp("DELETE", stream, name));
            }
            const push = await tryCall("create a push consumer onto her inbox", subject, { stream_name: stream, config: { name, ack_policy: "none", filter_subject: tail, deliver_subject: `${inbox}.push.${nuid.next()}` } });
            if (push.kind === "answered") await tryCall("delete it", consumerOp("DELETE", stream, name));
          }
        } else if (byName) {
          const [, op, stream, name] = byName as unknown as [string, string, string, string];
          // On no consumer (deleted above): what the answer says of a name that is not there.
          if (op === "MSG.NEXT") await tryPull("pull a consumer that is not there", grant);
          else await tryCall(`${op} of a consumer that is not there`, grant, op === "INFO" ? undefined : {});
          // And on one of hers that exists, from "all" (what each op answers then).
          const made = await tryCall("create for the op", `$JS.API.CONSUMER.CREATE.${stream}.${name}.${loc(own[0]!).subject}`, {
            stream_name: stream,
            config: { name, ack_policy: "explicit", filter_subject: loc(own[0]!).subject, deliver_policy: "all" },
          });
          if (made.kind === "answered") {
            if (op === "MSG.NEXT") await tryPull("pull it", grant);
            else await tryCall(op, grant, op === "INFO" ? undefined : {});
            await call(raw, consumerOp("DELETE", stream, name));
          }
        } else if (advisory) {
          // Subscribed for the whole test above: what reaches it is scanned at the end.
        } else if (grant.startsWith("$JS.API.")) {
          // Any other API grant: every body an attacker would send to a subject of the
          // JetStream API (a listing, a read by sequence or by another's subject, a page),
          // on every subject the pattern admits.
          const bodies: unknown[] = [undefined, {}, { subjects_filter: ">" }, { subjects_filter: loc(theirs).subject }, { subject: ">" }, { offset: 0 }, { last_by_subj: theirSubject }, { next_by_subj: theirSubject, seq: 1 }];
          for (let seq = 1; seq <= total; seq++) bodies.push({ seq });
          for (const subject of instances(grant)) for (const b of bodies) await tryCall(`${grant} ${JSON.stringify(b ?? "")}`, subject, b);
        } else unexplored.push(grant);
      }
      expect(unexplored, "grants outside the JetStream API this test has no attack for: write one").toEqual([]);

      // The listing calls an attacker tries first, and reads of another's subjects: none granted.
      const theirStream = loc(theirs).stream;
      const listing: [string, string, unknown][] = [
        ["stream list", "$JS.API.STREAM.LIST", {}],
        ["stream names by subject", "$JS.API.STREAM.NAMES", { subject: theirSubject }],
        ["another's consumer's info", `$JS.API.CONSUMER.INFO.${loc(EXTRA_SESSIONS[0]!).stream}.svc_${EXTRA_SESSIONS[0]!.slice(0, 8)}`, undefined],
        ["direct get of another's last", `$JS.API.DIRECT.GET.${theirStream}`, { last_by_subj: theirSubject }],
        ["direct get of another's last, in the subject", `$JS.API.DIRECT.GET.${theirStream}.${theirSubject}`, undefined],
        ["direct get of her own last, in the subject", `$JS.API.DIRECT.GET.${STREAM}.${loc(own[0]!).subject}`, undefined],
        ["message get of another's last", `$JS.API.STREAM.MSG.GET.${theirStream}`, { last_by_subj: theirSubject }],
        ["account info", "$JS.API.INFO", undefined],
        // Every shard's stream, hers included.
        ...ops.journals().flatMap(({ stream, subject }): [string, string, unknown][] => [
          [`${stream}: stream info, every subject`, `$JS.API.STREAM.INFO.${stream}`, { subjects_filter: ">" }],
          [`${stream}: stream info, her subjects`, `$JS.API.STREAM.INFO.${stream}`, { subjects_filter: loc(own[0]!).subject }],
          [`${stream}: stream info`, `$JS.API.STREAM.INFO.${stream}`, undefined],
          [`${stream}: consumer list`, `$JS.API.CONSUMER.LIST.${stream}`, {}],
          [`${stream}: consumer names`, `$JS.API.CONSUMER.NAMES.${stream}`, {}],
          [`${stream}: direct get by sequence`, `$JS.API.DIRECT.GET.${stream}`, { seq: 1 }],
          [`${stream}: message get by sequence`, `$JS.API.STREAM.MSG.GET.${stream}`, { seq: 1 }],
          [`${stream}: a filterless create`, `$JS.API.CONSUMER.CREATE.${stream}`, { stream_name: stream, config: { ack_policy: "none", filter_subject: subject } }],
          [`${stream}: a durable create`, `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.peek`, { stream_name: stream, config: { durable_name: "peek", ack_policy: "none" } }],
        ]),
      ];
      const listed: [string, Kind][] = [];
      for (const [what, subject, body] of listing) listed.push([what, (await tryCall(what, subject, body)).kind]);

      // Every grant was reached (answered at least once): an attack that never got past the
      // permissions proves nothing of what the grant answers.
      const reached = (g: string) => attempts.some((a) => (a.kind === "answered" || a.kind === "api error") && matches(g, a.subject));
      expect(f.publish.filter((g) => g.startsWith("$JS.") && !reached(g))).toEqual([]);
      expect(attempts.length).toBeGreaterThan(50);
      expect(attempts.filter((a) => a.leaked.length > 0)).toEqual([]);
      expect(listed).toEqual(listed.map(([what]) => [what, "refused"]));
      // Her own events did come back (the scan looks at real answers): her session's ids were in some pull.
      const mineSeen = attempts.some((a) => a.what.startsWith("pull") && a.kind === "answered");
      expect(mineSeen).toBe(true);
    }, 120_000);

    it("an attempt on another's session answers the same whether that session exists or not", async () => {
      const own = [...ownSessions(f)];
      const existing = [...journal.ids.keys()].find((s) => !own.includes(s))!;
      const STREAM = loc(own[0]!).stream;
      const createGrant = f.publish.find((g) => g.startsWith(`$JS.API.CONSUMER.CREATE.${STREAM}.`))!;
      const name = createGrant.split(".")[5]!;
      const ownFilter = loc(own[0]!).subject;
      const probes = (target: string): [string, string, unknown][] => {
        // In the existing session's shard (the probe of an unknown id there too).
        const filter = `${root(existing)}.${target}.>`;
        const subject = `${root(existing)}.${target}.${journal.loops.get(existing)![0]}.tool.PermissionDecided`;
        const theirStream = loc(existing).stream;
        return [
          ["create on her name, its filter in the subject", `$JS.API.CONSUMER.CREATE.${theirStream}.${name}.${filter}`, { stream_name: theirStream, config: { name, ack_policy: "none", filter_subject: filter } }],
          ["create on her subject, its filter in the body", `$JS.API.CONSUMER.CREATE.${STREAM}.${name}.${ownFilter}`, { stream_name: STREAM, config: { name, ack_policy: "none", filter_subject: filter } }],
          ["create on her subject, both filters", `$JS.API.CONSUMER.CREATE.${STREAM}.${name}.${ownFilter}`, { stream_name: STREAM, config: { name, ack_policy: "none", filter_subjects: [ownFilter, filter] } }],
          ["stream info of its subjects", `$JS.API.STREAM.INFO.${theirStream}`, { subjects_filter: filter }],
          ["stream names by its subject", "$JS.API.STREAM.NAMES", { subject }],
          ["direct get of its last", `$JS.API.DIRECT.GET.${theirStream}.${subject}`, undefined],
          ["message get of its last", `$JS.API.STREAM.MSG.GET.${theirStream}`, { last_by_subj: subject }],
        ];
      };
      const outcomes = async (target: string) => {
        const out: [string, Kind, number | undefined][] = [];
        for (const [what, subject, body] of probes(target)) {
          const o = await call(raw, subject, body);
          if (o.kind === "answered") await call(raw, `$JS.API.CONSUMER.DELETE.${STREAM}.${name}`);
          out.push([what, o.kind, o.code]);
        }
        return out;
      };
      const onExisting = await outcomes(existing);
      const onUnknown = await outcomes(newId());
      expect(onExisting).toEqual(onUnknown);
      // Not one of them is answered: there is nothing to compare beyond the refusal.
      expect(onExisting.filter(([, kind]) => kind === "answered")).toEqual([]);
    }, 60_000);

    it("her own session: subscriptions from \"new\" and from the start, replay and live follow work through jetloop, no request refused", async () => {
      const names = [...new Set(f.publish.map((g) => /^\$JS\.API\.CONSUMER\.CREATE\.[^.]+\.([^.]+)\./.exec(g)?.[1]).filter((n): n is string => n !== undefined))];
      const prefix = names[0]!.replace(/_\d+$/, "");
      const refused: string[] = [];
      const bus = await connect({ servers: server.url, namespace: NAMESPACE, user: f.user, pass: f.password, shards: example.shards, readConsumers: { prefix, size: names.length }, natsOptions: { inboxPrefix: inboxPrefixOf(f), name: `enumeration-${f.user}-bus` } });
      buses.push(bus);
      void (async () => {
        // Requests (publishes) only: on a namespace split in shards the bus also subscribes to
        // every shard's leader elections, and the other shards' are refused (names no session).
        for await (const s of bus.nc.status()) if (s.type === "error" && s.error instanceof PermissionViolationError && s.error.operation === "publish") refused.push(s.error.subject);
      })();
      const sid = [...ownSessions(f)][0]!;
      const before = journal.published.get(sid)!;
      const fromNew = collect(await bus.session(sid).subscribeEvents({ enduring: "all" }));
      const fromStart = collect(await bus.session(sid).subscribeEvents({ enduring: "all" }, { start: "all" }));
      let replayed = 0;
      for await (const d of bus.session(sid).replay({ enduring: "all" })) {
        expect((d.event as { sessionId: string }).sessionId).toBe(sid);
        replayed++;
      }
      expect(replayed).toBe(before.length);
      // Live: another session and hers write; she gets hers, from "new" only what came after.
      await publishTo(EXTRA_SESSIONS[1]!, journal.loops.get(EXTRA_SESSIONS[1]!)!, 1);
      const after = await publishTo(sid, journal.loops.get(sid)!, 1);
      await fromStart.waitForAll([...before, ...after], 10_000);
      await fromNew.waitForAll(after, 10_000);
      expect(fromNew.ids.filter((id) => before.includes(id))).toEqual([]);
      for (const c of [fromNew, fromStart]) expect(c.deliveries.every((d) => (d.event as { sessionId?: string }).sessionId === sid)).toBe(true);
      // A resume after a position vector (its ends are checked first, on her own subjects):
      // one shard only, as a follower of a namespace split in shards reads no other shard's end.
      if (example.shards === 1) {
        const all = journal.published.get(sid)!;
        const resumed = collect(await bus.session(sid).subscribeEvents({ enduring: "all" }, { start: { after: [0] } }));
        await resumed.waitForAll(all, 10_000);
        let again = 0;
        for await (const _ of bus.session(sid).replay({ enduring: "all" }, { after: [0] })) again++;
        expect(again).toBe(all.length);
      }
      await bus.nc.flush();
      expect(refused).toEqual([]);
    }, 60_000);

    it("nothing of another session reached a subject she subscribes to", () => {
      const foreign = foreignIds(f);
      expect(seen.filter((m) => foreign.some((id) => m.includes(id)))).toEqual([]);
      // Her feed carried her own events (the positive control published some): the scan read real traffic.
      expect(seen.some((m) => m.startsWith(`${NAMESPACE}.feed.`))).toBe(true);
    });
  });
});
