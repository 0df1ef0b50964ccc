/**
 * The gateway's request handler: the runtime's HTTP surface (`pkg/serve`), answered from
 * the journal and the live feed. Stateless: any number of gateways serve the same
 * sessions. Embed it in a Node server with `createGatewayHandler(bus)`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Jetloop } from "../bus.js";
import { isCanonicalUuid } from "../events/ids.js";
import { authenticate, bearerToken, type Authenticate, type GatewayPrincipal } from "./auth.js";
import { sendError, sendJson } from "./envelope.js";
import { commandIdFor, decodeGateRequest, findGate, sendAnswer, toAnswer } from "./gate-answer.js";
import { journalPageJson, readJournalPage } from "./journal-page.js";
import { type GatewayOptions, type GatewaySettings, parseGatewayOptions } from "./options.js";
import { fromSeqParam, INVALID, limitParam, pathId, skipParam } from "./params.js";
import { readBody } from "./body.js";
import { route } from "./routes.js";
import { sendAsset } from "./web-assets.js";
import { journalSessions, readSessionStatus, sessionListJson, sortSessions, statusJson } from "./session-status.js";
import { FrameCache } from "./sse-frames.js";
import { serveEvents, type SharedStreams } from "./sse-stream.js";

/** The runtime's full-surface capabilities: the gateway serves SSE and gate answers too. */
export const CAPABILITIES_JSON = '{"protocol":"looprig.serve","version":1,"features":["journal","live_sse","ephemeral_sse","gate_response"]}';

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
}

export function createGatewayHandler(bus: Jetloop, options: GatewayOptions = {}): GatewayHandler {
  const settings = parseGatewayOptions(options);
  const auth: Authenticate | undefined = settings.authenticate ?? (settings.token === undefined ? undefined : bearerToken(settings.token));
  const streams: SharedStreams = { open: new Set(), counters: { open: 0, previewsDropped: 0, slowDisconnects: 0 }, frames: new FrameCache() };
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    void handle(req, res).catch((e: unknown) => {
      bus.log.error({ err: e }, "gateway: request failed");
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  };
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const principal = await authenticate(auth, req);
    if (principal === undefined) return sendError(res, "unauthorized");
    const ctx: Context = { bus, settings, principal, streams };
    const r = route(req, res);
    if (r === undefined) return;
    switch (r.name) {
      case "page":
      case "script":
        return sendAsset(res, r.name);
      case "capabilities":
        return sendJson(res, 200, CAPABILITIES_JSON);
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
    }
  }
  const close = async () => {
    await Promise.all([...streams.open].map((s) => s.close()));
  };
  return Object.assign(handler, { authenticated: auth !== undefined, counters: streams.counters, close });
}

/** A session id no journal can hold (the nil UUID), or one the caller may not see. */
function hidden(ctx: Context, sid: string): boolean {
  return !isCanonicalUuid(sid) || (ctx.principal.canSee !== undefined && !ctx.principal.canSee(sid));
}

/** The session id from the path: 400 if malformed, 404 if hidden. */
function visibleSession(ctx: Context, res: ServerResponse, raw: string): string | undefined {
  const sid = pathId(raw);
  if (sid === undefined) return void sendError(res, "invalid_session_id");
  if (hidden(ctx, sid)) return void sendError(res, "session_not_found");
  return sid;
}

async function sessionExists(bus: Jetloop, sid: string): Promise<boolean> {
  const jsm = await bus.jetstreamManager();
  const info = await jsm.streams.info(bus.stream, { subjects_filter: `${bus.namespace}.journal.${sid}.>` });
  return Object.keys(info.state.subjects ?? {}).length > 0;
}

async function listSessions(ctx: Context, res: ServerResponse, q: URLSearchParams): Promise<void> {
  const skip = skipParam(q);
  const limit = limitParam(q);
  if (skip === INVALID || limit === INVALID) return sendError(res, "invalid_query");
  try {
    const ids = (await journalSessions(ctx.bus)).filter((s) => ctx.principal.canSee?.(s) ?? true);
    const all = (await Promise.all(ids.map((s) => readSessionStatus(ctx.bus, s)))).filter((s) => s !== undefined);
    sendJson(res, 200, sessionListJson({ sessions: sortSessions(all).slice(skip, skip + limit), skip, limit }));
  } catch (e) {
    ctx.bus.log.warn({ err: e }, "gateway: could not list sessions");
    sendError(res, "list_failed");
  }
}

async function status(ctx: Context, res: ServerResponse, raw: string): Promise<void> {
  const sid = visibleSession(ctx, res, raw);
  if (sid === undefined) return;
  try {
    const s = await readSessionStatus(ctx.bus, sid);
    if (s === undefined) return sendError(res, "session_not_found");
    sendJson(res, 200, statusJson(s));
  } catch (e) {
    ctx.bus.log.warn({ err: e, sessionId: sid }, "gateway: could not read session status");
    sendError(res, "status_failed");
  }
}

async function journal(ctx: Context, res: ServerResponse, raw: string, q: URLSearchParams): Promise<void> {
  const sid = pathId(raw);
  if (sid === undefined) return sendError(res, "invalid_session_id");
  const from = fromSeqParam(q);
  const limit = limitParam(q);
  if (from === INVALID || limit === INVALID) return sendError(res, "invalid_query");
  // The journal route never answers 404 (reference §4): an unseen session reads as empty.
  if (hidden(ctx, sid)) return sendJson(res, 200, journalPageJson({ events: [], nextSeq: 0, done: true }));
  try {
    sendJson(res, 200, journalPageJson(await readJournalPage(ctx.bus, sid, from, limit)));
  } catch (e) {
    ctx.bus.log.warn({ err: e, sessionId: sid }, "gateway: could not read session journal");
    sendError(res, "journal_failed");
  }
}

/** `Last-Event-ID` from the header, else the `last_event_id` query parameter (EventSource cannot set headers on a first connect). */
function lastEventId(req: IncomingMessage, q: URLSearchParams): number | undefined | typeof INVALID {
  const h = req.headers["last-event-id"];
  const raw = (typeof h === "string" && h !== "" ? h : undefined) ?? q.get("last_event_id") ?? undefined;
  if (raw === undefined || raw === "") return undefined;
  return /^[0-9]+$/.test(raw) && Number.isSafeInteger(Number(raw)) ? Number(raw) : INVALID;
}

async function events(ctx: Context, req: IncomingMessage, res: ServerResponse, raw: string, q: URLSearchParams): Promise<void> {
  const sid = visibleSession(ctx, res, raw);
  if (sid === undefined) return;
  const last = lastEventId(req, q);
  const loopRaw = q.get("loop");
  const loopId = loopRaw === null ? undefined : pathId(loopRaw);
  if (last === INVALID || (loopRaw !== null && (loopId === undefined || !isCanonicalUuid(loopId)))) return sendError(res, "invalid_query");
  try {
    if (!(await sessionExists(ctx.bus, sid))) return sendError(res, "session_not_found");
  } catch (e) {
    ctx.bus.log.warn({ err: e, sessionId: sid }, "gateway: could not check session");
    return sendError(res, "subscribe_failed");
  }
  await serveEvents(ctx.bus, req, res, { sessionId: sid, loopId, lastEventId: last }, ctx.settings, ctx.streams);
}

async function gate(ctx: Context, req: IncomingMessage, res: ServerResponse, rawSid: string, rawGid: string): Promise<void> {
  const sid = pathId(rawSid);
  if (sid === undefined) return sendError(res, "invalid_session_id");
  const gid = pathId(rawGid);
  if (gid === undefined) return sendError(res, "invalid_gate_id");
  if (hidden(ctx, sid)) return sendError(res, "session_not_found");
  try {
    if (!(await sessionExists(ctx.bus, sid))) return sendError(res, "session_not_found");
  } catch (e) {
    ctx.bus.log.warn({ err: e, sessionId: sid }, "gateway: could not check session");
    return sendError(res, "gate_failed");
  }
  const body = await readBody(req, ctx.settings.maxBodyBytes);
  const request = body === undefined ? undefined : decodeGateRequest(body);
  if (request === undefined) return sendError(res, "invalid_body");
  try {
    const opened = isCanonicalUuid(gid) ? await findGate(ctx.bus, sid, gid) : undefined;
    if (opened === undefined) return sendError(res, "gate_not_found");
    const answer = toAnswer(gid, opened, request);
    if (typeof answer === "string") return sendError(res, answer);
    // A gate the session resolves (no loop) has no jetloop loop actor to answer it.
    if (opened.loopId === undefined) return sendError(res, "gate_action_invalid");
    const key = req.headers["idempotency-key"];
    const commandId = commandIdFor(sid, answer, typeof key === "string" && key !== "" ? key : undefined);
    const failed = await sendAnswer(ctx.bus, sid, opened.loopId, { ...answer, commandId }, ctx.settings.answerTimeoutMs);
    if (failed !== undefined) return sendError(res, failed);
    sendJson(res, 202, "{}");
  } catch (e) {
    ctx.bus.log.warn({ err: e, sessionId: sid, gateId: gid }, "gateway: could not respond to gate");
    sendError(res, "gate_failed");
  }
}
