/**
 * The gateway's request handler: the runtime's HTTP surface (`pkg/serve`), answered from
 * the journal and the feed. Stateless: any number of gateways serve the same
 * sessions. Embed it in a Node server with `createGatewayHandler(bus)`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Jetloop } from "../bus.js";
import { isCanonicalUuid } from "../events/ids.js";
import { authenticate, bearerToken, type Authenticate, type GatewayPrincipal } from "./auth.js";
import { answerPreflight, checkRequest, isJsonContentType, isPreflight, mayPostUntyped, setCorsHeaders } from "./boundary.js";
import { type GatewayErrorName, sendError, sendJson } from "./envelope.js";
import { NatsHealth } from "./nats-health.js";
import { type ControlAnswer, decodeInputBody, idempotencyKey, sendInput, sendInterrupt } from "./controls.js";
import { commandIdFor, decodeGateRequest, findGate, sendAnswer, toAnswer } from "./gate-answer.js";
import { journalPageJson, pageBatch, type PageSink, streamJournalPage } from "./journal-page.js";
import { type GatewayOptions, type GatewaySettings, parseGatewayOptions } from "./options.js";
import { fromSeqParam, INVALID, lastEventIdParam, limitParam, PAST_THE_JOURNAL, pathId, skipParam } from "./params.js";
import type { QueryParams } from "./query.js";
import { cutUnreadBody, readBody } from "./body.js";
import { createSession } from "./create.js";
import { route, servedTarget, type RouteName } from "./routes.js";
import { sendAsset } from "./web-assets.js";
import { readSessionStatus, servableStatus, sessionListJson, statusJson } from "./session-status.js";
import { openSessionCatalog, type SessionCatalog } from "../catalog/catalog.js";
import { FrameCache } from "./sse-frames.js";
import { serveEvents, type SharedStreams } from "./sse-stream.js";
import { observeGateway, routeOf, tracedHttp } from "../telemetry/index.js";
import { pullBytes, pullSize } from "../journal/pull-size.js";
import { withReadPauses } from "../journal/read-pauses.js";
import { type ReadBudget, readBudgetOf, ReadShare } from "./read-budget.js";

/**
 * What this gateway serves: the runtime's full-surface features, in their order, then
 * jetloop's names for the session controls it carries too (the Go document names no
 * control; session creation and restore are not served, so nothing names them).
 */
/**
 * `GET /v1/capabilities`: exactly the pinned Go handler's full-surface document, byte for
 * byte. A client written for the Go runtime checks the list against the Go contract (its
 * schema admits only these four names, in this order) and refuses a server naming more.
 */
export const CAPABILITIES_JSON = '{"protocol":"looprig.serve","version":1,"features":["journal","live_sse","ephemeral_sse","gate_response"]}';

/**
 * `GET /jetloop/capabilities`: what this gateway serves beyond the Go document, on a route
 * no Go client reads: the session controls (input, interrupt: the Go document names no
 * control) and the workspace rules behind "Approve always for this workspace".
 */
export const JETLOOP_CAPABILITIES_JSON = '{"protocol":"jetloop.gateway","version":1,"features":["input","interrupt","workspace_rules"]}';

/** Routes answered without NATS. */
const STATIC_ROUTES: ReadonlySet<RouteName> = new Set(["page", "script", "capabilities", "jetloop-capabilities", "create"]);

/** The gateway's request handler (`createGatewayHandler`), with its counters and `close()`. */
export type GatewayHandler = ((req: IncomingMessage, res: ServerResponse) => void) & {
  /** Whether every request is authenticated (a public bind requires it). */
  readonly authenticated: boolean;
  readonly counters: Readonly<SharedStreams["counters"]>;
  /** Ends every open SSE stream (their subscriptions closed). */
  close(): Promise<void>;
};

interface Context {
  readonly bus: Jetloop;
  readonly settings: GatewaySettings;
  readonly principal: GatewayPrincipal;
  readonly streams: SharedStreams;
  readonly health: NatsHealth;
  /** The session catalog the list reads, opened at the first list (again after a failed open). */
  readonly catalog: () => Promise<SessionCatalog>;
  /** The bytes the read routes may owe the connection at once (read-budget.ts). */
  readonly budget: ReadBudget;
}

/** The gateway as a `node:http` request handler over a bus: the Go runtime's HTTP surface served from NATS, for a server of your own. `startGateway` binds one. */
export function createGatewayHandler(bus: Jetloop, options: GatewayOptions = {}): GatewayHandler {
  const settings = parseGatewayOptions(options);
  const auth: Authenticate | undefined = settings.authenticate ?? (settings.token === undefined ? undefined : bearerToken(settings.token));
  const streams: SharedStreams = { open: new Set(), perClient: new Map(), counters: { open: 0, previewsDropped: 0, slowDisconnects: 0 }, frames: new FrameCache() };
  const health = new NatsHealth(bus);
  const budget = readBudgetOf(bus.nc, settings.natsMaxPendingBytes);
  // One catalog for the gateway's life: its index's watch is the one consumer every list shares.
  let opened: Promise<SessionCatalog> | undefined;
  const catalog = () =>
    (opened ??= openSessionCatalog(bus).catch((e: unknown) => {
      opened = undefined;
      throw e;
    }));
  observeGateway(streams.counters);
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    res.once("finish", () => cutUnreadBody(req, settings.bodyTimeoutMs));
    void tracedHttp(req, res, () => handle(req, res)).catch((e: unknown) => {
      bus.log.error({ err: e }, "gateway: request failed");
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  };
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // A target Go's server cannot read is refused before anything else, as Go's is.
    const target = servedTarget(req, res);
    if (target === undefined) return;
    // The browser boundary first: before authentication (a cookie rides along on a forged
    // request) and before routing (a rebinding page learns nothing, not even a 404).
    const verdict = checkRequest(req, settings.boundary);
    if (!verdict.ok) return sendError(res, verdict.error);
    if (verdict.corsOrigin !== undefined) setCorsHeaders(res, verdict.corsOrigin);
    if (isPreflight(req)) return answerPreflight(res);
    const principal = await authenticate(auth, req);
    if (principal === undefined) return sendError(res, "unauthorized");
    const ctx: Context = { bus, settings, principal, streams, health, catalog, budget };
    const r = routeOf(req, route(req, res, target));
    if (r === undefined) return;
    // A body not declared JSON (or none: the Go client's interrupt) only from a caller no other site's page can be (boundary.ts).
    if (req.method === "POST" && !isJsonContentType(req.headers["content-type"]) && !mayPostUntyped(req)) return sendError(res, "unsupported_media_type");
    // While the journal's server is away every route that reads it says so at once.
    if (!STATIC_ROUTES.has(r.name) && health.down) return sendError(res, "nats_unavailable");
    switch (r.name) {
      case "page":
      case "script":
        return sendAsset(res, r.name);
      case "capabilities":
        return sendJson(res, 200, CAPABILITIES_JSON);
      case "jetloop-capabilities":
        return sendJson(res, 200, JETLOOP_CAPABILITIES_JSON);
      case "sessions":
        return listSessions(ctx, res, r.query);
      case "status":
        return status(ctx, res, r.params.sid!);
      case "journal":
        return journal(ctx, res, r.params.sid!, r.query);
      case "events":
        return events(ctx, req, res, r.params.sid!, r.query);
      case "gate":
        return gate(ctx, req, res, r.params.sid!, r.params.gid!);
      case "input":
      case "interrupt":
        return control(ctx, req, res, r.params.sid!, r.name);
      case "create":
        return createSession(req, res);
    }
  }
  const close = async () => {
    health.stop();
    await Promise.all([...streams.open].map((s) => s.close()));
    await opened?.then((c) => c.close()).catch(() => undefined);
  };
  return Object.assign(handler, { authenticated: auth !== undefined, counters: streams.counters, close });
}

/** A session id no journal can hold (the nil UUID), or one the caller may not see. */
function hidden(ctx: Context, sid: string): boolean {
  return !isCanonicalUuid(sid) || (ctx.principal.canSee !== undefined && !ctx.principal.canSee(sid));
}

/** The most messages a subscription pulls at once by default (the subscribe option `batch`). */
const SSE_HISTORY_BATCH = 256;

/** The most messages a replay pulls at once by default (the replay option `batch`). */
const REPLAY_BATCH = 512;

/** The bytes one pull of `batch` messages may owe the connection. */
function readShareBytes(ctx: Context, batch: number): number {
  const maxPayload = ctx.bus.nc.info?.max_payload;
  return pullBytes(pullSize(batch, maxPayload), maxPayload);
}

/**
 * Runs `read` holding `reads` shares of the connection's read budget, each a pull of
 * `batch` messages (what such a read may owe the connection); undefined, without running
 * it, when the client left while it waited.
 */
async function withReadShare<T>(ctx: Context, res: ServerResponse, batch: number, reads: number, read: () => Promise<T>): Promise<T | undefined> {
  const gone = new AbortController();
  const onClose = () => gone.abort(new Error("the client left"));
  res.once("close", onClose);
  const share = new ReadShare(ctx.budget, reads * readShareBytes(ctx, batch), gone.signal);
  try {
    await share.hold();
    // Given back while the read pauses (a backoff, a poll for a turn's rest): a long claim on one session holds no one else's reads.
    return await withReadPauses(share.pauses, read);
  } catch (e) {
    // The client left while the read waited for a share: nothing to answer.
    if (gone.signal.aborted && !share.held) return undefined;
    throw e;
  } finally {
    res.off("close", onClose);
    share.close();
  }
}

/** The session id from the path: 400 if malformed, 404 if hidden. */
function visibleSession(ctx: Context, res: ServerResponse, raw: string): string | undefined {
  const sid = pathId(raw);
  if (sid === undefined) return void sendError(res, "invalid_session_id");
  if (hidden(ctx, sid)) return void sendError(res, "session_not_found");
  return sid;
}

/** Whether the session has journal messages, and its shard's stream's last sequence (a journal sequence is that stream's). */
async function journalState(bus: Jetloop, sid: string): Promise<{ exists: boolean; lastSeq: number }> {
  const jsm = await bus.jetstreamManager();
  const journal = bus.journalOf(sid);
  const info = await jsm.streams.info(journal.stream, { subjects_filter: journal.subject });
  return { exists: Object.keys(info.state.subjects ?? {}).length > 0, lastSeq: info.state.last_seq };
}

/**
 * 404 when the session has no journal; the outage or 500 when that cannot be read. A
 * resume point past the journal's last sequence is 400: the client's id is from another
 * journal (the stream was recreated since), and resuming after it would skip every event
 * up to it.
 */
async function checkSession(ctx: Context, sid: string, fallback: GatewayErrorName, resumeAfter?: number, seen?: (lastSeq: number) => void): Promise<GatewayErrorName | undefined> {
  try {
    const j = await journalState(ctx.bus, sid);
    seen?.(j.lastSeq);
    if (!j.exists) return "session_not_found";
    return resumeAfter !== undefined && resumeAfter > j.lastSeq ? "invalid_query" : undefined;
  } catch (e) {
    return ctx.health.failure(e, fallback, { sessionId: sid }, "could not check session");
  }
}

/** The body, or undefined after answering: too large is 400 invalid_body; a trickle is 408 and the connection closes. */
async function readRequestBody(ctx: Context, req: IncomingMessage, res: ServerResponse): Promise<string | undefined> {
  const body = await readBody(req, ctx.settings.maxBodyBytes, ctx.settings.bodyTimeoutMs);
  if (body.ok) return body.text;
  if (body.error === "body_timeout") res.setHeader("Connection", "close");
  sendError(res, body.error);
  return undefined;
}

async function listSessions(ctx: Context, res: ServerResponse, q: QueryParams): Promise<void> {
  const skip = skipParam(q);
  const limit = limitParam(q);
  if (skip === INVALID || limit === INVALID) return sendError(res, "invalid_query");
  try {
    // A page of the catalog, brought up to the journal first: no journal is folded here beyond what was stored since the last list.
    const catalog = await ctx.catalog();
    const canSee = ctx.principal.canSee;
    // Bringing the catalog up to the journal reads every shard at once, and refolds one session at a time.
    const shares = ctx.bus.journals().length + 1;
    // A skip past what a JavaScript number holds is past every session: the page is empty either way.
    const within = skip > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(skip);
    const page = await withReadShare(ctx, res, REPLAY_BATCH, shares, () => catalog.list({ skip: within, limit, visible: canSee && ((sid) => canSee(sid)) }));
    if (page !== undefined) sendJson(res, 200, sessionListJson(page, skip));
  } catch (e) {
    sendError(res, ctx.health.failure(e, "list_failed", {}, "could not list sessions"));
  }
}

async function status(ctx: Context, res: ServerResponse, raw: string): Promise<void> {
  const sid = visibleSession(ctx, res, raw);
  if (sid === undefined) return;
  try {
    const read = await withReadShare(ctx, res, REPLAY_BATCH, 1, async () => ({ s: await readSessionStatus(ctx.bus, sid) }));
    if (read === undefined) return;
    const { s } = read;
    if (s === undefined) return sendError(res, "session_not_found");
    sendJson(res, 200, statusJson(servableStatus(s)));
  } catch (e) {
    sendError(res, ctx.health.failure(e, "status_failed", { sessionId: sid }, "could not read session status"));
  }
}

async function journal(ctx: Context, res: ServerResponse, raw: string, q: QueryParams): Promise<void> {
  const sid = pathId(raw);
  if (sid === undefined) return sendError(res, "invalid_session_id");
  const from = fromSeqParam(q);
  const limit = limitParam(q);
  if (from === INVALID || limit === INVALID) return sendError(res, "invalid_query");
  // The journal route never answers 404 (reference §4): an unseen session reads as empty, and
  // so does a start past every sequence a stream can hold (Go reads any uint64 there).
  if (hidden(ctx, sid) || from === PAST_THE_JOURNAL) return sendJson(res, 200, journalPageJson({ events: [], nextSeq: 0, done: true }));
  try {
    // The share is held while the page reads the journal and given back while it waits for
    // its client (read-budget.ts): a client that stops reading holds no one else's reads.
    const gone = new AbortController();
    const onClose = () => gone.abort(new Error("the client left"));
    res.once("close", onClose);
    const share = new ReadShare(ctx.budget, readShareBytes(ctx, pageBatch(limit)), gone.signal);
    let empty: string | undefined;
    try {
      empty = await withReadPauses(share.pauses, () =>
        streamJournalPage(ctx.bus, sid, from, limit, ctx.settings.maxPageBytes, responseSink(res, ctx.settings.slowClientMs, () => share.give()), share),
      );
    } catch (e) {
      // The client left while the page waited for a share: nothing to answer.
      if (gone.signal.aborted && !share.held) return;
      throw e;
    } finally {
      res.off("close", onClose);
      share.close();
    }
    if (empty !== undefined) sendJson(res, 200, empty);
  } catch (e) {
    // Once the page has begun its status is sent: cut it short, so that the client sees a
    // broken body and never a well-formed page that lacks events. A client that left is no failure.
    if (res.headersSent) {
      if (!res.destroyed) ctx.health.failure(e, "journal_failed", { sessionId: sid }, "could not read session journal");
      res.destroy();
      return;
    }
    sendError(res, ctx.health.failure(e, "journal_failed", { sessionId: sid }, "could not read session journal"));
  }
}

/**
 * Go's net/http buffers the first 2 KiB of an answer: one that ends within them goes out
 * with its Content-Length, a longer one chunked. The page sink does the same, so a short
 * page's bytes and headers are the Go handler's.
 */
const GO_CHUNKING_BYTES = 2048;

/**
 * A streamed JSON answer: past its first 2 KiB, writes wait while the client has not taken
 * the last ones, so a page is never held whole; a client that takes none for `slowMs`, or
 * is gone, fails the write (the page's read stops).
 */
function responseSink(res: ServerResponse, slowMs: number, waiting?: () => void): PageSink {
  let held: string[] | undefined = [];
  let heldBytes = 0;
  const send = (chunk: string): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (res.destroyed) return reject(new Error("the client is gone"));
      if (res.write(chunk)) return resolve();
      // Waiting for the client, not the connection: the read-budget share goes back meanwhile.
      waiting?.();
      const timer = setTimeout(() => done(new Error(`the client took nothing for ${slowMs} ms`)), slowMs);
      const done = (e?: Error) => {
        clearTimeout(timer);
        res.off("drain", onDrain).off("close", onClose);
        if (e === undefined) resolve();
        else reject(e);
      };
      const onDrain = () => done();
      const onClose = () => done(new Error("the client is gone"));
      res.once("drain", onDrain).once("close", onClose);
    });
  return {
    write: (chunk) => {
      if (held === undefined) return send(chunk);
      held.push(chunk);
      heldBytes += Buffer.byteLength(chunk);
      if (heldBytes <= GO_CHUNKING_BYTES) return Promise.resolve();
      const all = held.join("");
      held = undefined;
      res.writeHead(200, { "Content-Type": "application/json" });
      return send(all);
    },
    end: (chunk) => {
      if (held === undefined) return void res.end(chunk);
      const body = Buffer.from(held.join("") + chunk, "utf8");
      res.writeHead(200, body.length <= GO_CHUNKING_BYTES ? { "Content-Type": "application/json", "Content-Length": body.length } : { "Content-Type": "application/json" });
      res.end(body);
    },
  };
}

/** `Last-Event-ID` from the header, else the `last_event_id` query parameter (EventSource cannot set headers on a first connect). */
function lastEventId(req: IncomingMessage, q: QueryParams): number | undefined | typeof INVALID {
  const h = req.headers["last-event-id"];
  return lastEventIdParam((typeof h === "string" && h !== "" ? h : undefined) ?? q.get("last_event_id") ?? undefined);
}

async function events(ctx: Context, req: IncomingMessage, res: ServerResponse, raw: string, q: QueryParams): Promise<void> {
  const sid = visibleSession(ctx, res, raw);
  if (sid === undefined) return;
  const last = lastEventId(req, q);
  const loopRaw = q.get("loop");
  const loopId = loopRaw === null ? undefined : pathId(loopRaw);
  if (last === INVALID || (loopRaw !== null && (loopId === undefined || !isCanonicalUuid(loopId)))) return sendError(res, "invalid_query");
  let endSeq = 0;
  const missing = await checkSession(ctx, sid, "subscribe_failed", last, (seq) => (endSeq = seq));
  if (missing !== undefined) return sendError(res, missing);
  // A resume reads the journal's history first, under the read budget (read-budget.ts):
  // many streams resuming a large session at once must not owe the connection more than
  // the server lets it.
  const gone = new AbortController();
  const onClose = () => gone.abort(new Error("the client left"));
  res.once("close", onClose);
  // The history read pulls as a subscription does by default (256 messages, bounded in bytes).
  const history = last === undefined ? undefined : { share: new ReadShare(ctx.budget, readShareBytes(ctx, SSE_HISTORY_BATCH), gone.signal), endSeq };
  try {
    await serveEvents(ctx.bus, req, res, { sessionId: sid, loopId, lastEventId: last, ...(history && { history }) }, ctx.settings, ctx.streams, (e) =>
      ctx.health.failure(e, "subscribe_failed", { sessionId: sid }, "could not subscribe to session events"),
    );
  } finally {
    res.off("close", onClose);
    history?.share.give();
  }
}

async function gate(ctx: Context, req: IncomingMessage, res: ServerResponse, rawSid: string, rawGid: string): Promise<void> {
  const sid = pathId(rawSid);
  if (sid === undefined) return sendError(res, "invalid_session_id");
  const gid = pathId(rawGid);
  if (gid === undefined) return sendError(res, "invalid_gate_id");
  if (hidden(ctx, sid)) return sendError(res, "session_not_found");
  const missing = await checkSession(ctx, sid, "gate_failed");
  if (missing !== undefined) return sendError(res, missing);
  const body = await readRequestBody(ctx, req, res);
  if (body === undefined) return;
  const request = decodeGateRequest(body);
  if (request === undefined) return sendError(res, "invalid_body");
  try {
    const found = isCanonicalUuid(gid) ? await withReadShare(ctx, res, REPLAY_BATCH, 1, async () => ({ opened: await findGate(ctx.bus, sid, gid) })) : { opened: undefined };
    if (found === undefined) return;
    const { opened } = found;
    if (opened === undefined) return sendError(res, "gate_not_found");
    const answer = toAnswer(gid, opened, request);
    if (typeof answer === "string") return sendError(res, answer);
    // A gate the session resolves (no loop) has no jetloop loop actor to answer it.
    if (opened.loopId === undefined) return sendError(res, "gate_action_invalid");
    const key = req.headers["idempotency-key"];
    const commandId = commandIdFor(sid, answer, typeof key === "string" && key !== "" ? key : undefined);
    const failed = await sendAnswer(ctx.bus, sid, opened.loopId, { ...answer, commandId }, ctx.settings.answerTimeoutMs);
    // The session's journal exists (checked above), so not found here means no loop actor listens.
    if (failed !== undefined) return sendError(res, failed === "session_not_found" ? "session_unreachable" : failed);
    sendJson(res, 202, "{}");
  } catch (e) {
    sendError(res, ctx.health.failure(e, "gate_failed", { sessionId: sid, gateId: gid }, "could not respond to gate"));
  }
}

/** `POST …/input` and `…/interrupt`: to the session's actor over NATS (controls.ts). */
async function control(ctx: Context, req: IncomingMessage, res: ServerResponse, rawSid: string, route: "input" | "interrupt"): Promise<void> {
  const sid = visibleSession(ctx, res, rawSid);
  if (sid === undefined) return;
  const header = idempotencyKey(req.headers["idempotency-key"]);
  if (header === "too_long") return sendError(res, "idempotency_key_too_long");
  const { key } = header;
  // Read for interrupt too (and ignored, as Go ignores it): the body cap and timeout hold on every POST.
  const body = await readRequestBody(ctx, req, res);
  if (body === undefined) return;
  const session = ctx.bus.session(sid);
  const timeoutMs = ctx.settings.answerTimeoutMs;
  let answer: ControlAnswer;
  if (route === "input") {
    const blocks = decodeInputBody(body);
    if (blocks === undefined) return sendError(res, "invalid_body");
    answer = await sendInput(session, blocks, body, key, timeoutMs);
  } else {
    answer = await sendInterrupt(session, key, timeoutMs);
  }
  if ("body" in answer) return sendJson(res, 200, answer.body);
  if (answer.error !== "session_not_found") return sendError(res, answer.error);
  // Nobody serves the session: one with a journal may come back (retryable), an unknown one is not found.
  const missing = await checkSession(ctx, sid, route === "input" ? "submit_failed" : "interrupt_failed");
  sendError(res, missing ?? "session_unreachable");
}
