/**
 * `GET /v1/sessions/{sid}/events`: one session's frames over Server-Sent Events, from a
 * feed subscription (the journal from `Last-Event-ID`, then the republished feed; no
 * JetStream consumer per client while it follows).
 *
 * Slow clients: what the socket has not taken yet is bounded in bytes. Past
 * `previewDropBytes` previews are dropped; past `maxBufferedBytes` the pump waits for the
 * socket to drain, at most `slowClientMs`, and meanwhile the subscription's own bounded
 * queue holds the rest (the feed reads its overflow back from the journal; old previews
 * are dropped). A client that has not drained by then is disconnected, and resumes with
 * `Last-Event-ID`. Nothing here slows another client: each has its own pump.
 *
 * A resume reads the journal's history under the gateway's read budget (read-budget.ts):
 * many streams resuming a large session at once would otherwise owe the shared connection
 * more than the server's max_pending, and the server would cut it for every viewer.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Jetloop } from "../bus.js";
import type { JetloopEvent } from "../events/catalogue.js";
import type { LoopScope } from "../sources/filter.js";
import type { FeedMode, StartPosition } from "../sources/options.js";
import type { Delivery } from "../sources/delivery.js";
import type { Subscription } from "../subscribe/subscription.js";
import { type GatewayErrorName, sendError } from "./envelope.js";
import type { ReadShare } from "./read-budget.js";
import { type FrameCache, PING_FRAME } from "./sse-frames.js";
import { sseFrame } from "../telemetry/index.js";

export interface SseSettings {
  readonly feed: FeedMode;
  readonly heartbeatMs: number;
  readonly maxBufferedBytes: number;
  readonly previewDropBytes: number;
  readonly slowClientMs: number;
  readonly maxStreamsPerClient: number;
}

/** Whether the socket drained within `ms`. */
function drained(res: ServerResponse, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      res.off("drain", onDrain);
      res.off("close", onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    const timer = setTimeout(() => done(false), ms);
    res.on("drain", onDrain);
    res.on("close", onClose);
  });
}

export interface SseRequest {
  readonly sessionId: string;
  readonly loopId: string | undefined;
  /** The last journal sequence the client has; the stream resumes after it. */
  readonly lastEventId: number | undefined;
  /**
   * A resume's read of the journal's history: the read-budget share it holds while it
   * reads (read-budget.ts) and the journal's last sequence when the stream was asked for
   * (past it the stream follows the feed, which the budget does not cover).
   */
  readonly history?: { readonly share: ReadShare; readonly endSeq: number };
}

/**
 * A history read that has had nothing to deliver for this long has caught up with the
 * journal (or reads a loop whose events ended before `endSeq`): its share goes back, so
 * that a stream following an idle session holds no one else's reads.
 */
const HISTORY_IDLE_MS = 500;

/** What the gateway counts about its SSE clients. */
export interface SseCounters {
  open: number;
  previewsDropped: number;
  slowDisconnects: number;
}

/** What a handler's streams share: the open subscriptions (closed together on shutdown), streams per client address, counters, frames. */
export interface SharedStreams {
  readonly open: Set<Subscription<JetloopEvent>>;
  readonly perClient: Map<string, number>;
  readonly counters: SseCounters;
  readonly frames: FrameCache;
}

export async function serveEvents(
  bus: Jetloop,
  req: IncomingMessage,
  res: ServerResponse,
  r: SseRequest,
  settings: SseSettings,
  shared: SharedStreams,
  failure: (e: unknown) => GatewayErrorName,
): Promise<void> {
  const client = req.socket.remoteAddress ?? "";
  const held = shared.perClient.get(client) ?? 0;
  if (held >= settings.maxStreamsPerClient) return sendError(res, "too_many_streams");
  // Counted from here, so that concurrent opens from one client cannot pass the cap together.
  shared.perClient.set(client, held + 1);
  try {
    await pump(bus, req, res, r, settings, shared, failure);
  } finally {
    const left = (shared.perClient.get(client) ?? 1) - 1;
    if (left === 0) shared.perClient.delete(client);
    else shared.perClient.set(client, left);
  }
}

async function pump(
  bus: Jetloop,
  req: IncomingMessage,
  res: ServerResponse,
  r: SseRequest,
  settings: SseSettings,
  shared: SharedStreams,
  failure: (e: unknown) => GatewayErrorName,
): Promise<void> {
  const counters = shared.counters;
  const scope: LoopScope = r.loopId === undefined ? "all" : { loops: [r.loopId] };
  const start: StartPosition = r.lastEventId === undefined ? "new" : { seq: r.lastEventId + 1 };
  // A resume's history is read under the read budget: its share is taken before the
  // subscription opens (it pulls at once) and held while the pump reads, not while the
  // client drains; it goes back once the history is delivered.
  const share = r.history !== undefined && (r.lastEventId ?? 0) < r.history.endSeq ? r.history.share : undefined;
  try {
    await share?.hold();
  } catch {
    return;
  }
  let sub: Subscription<JetloopEvent>;
  try {
    sub = await bus.session(r.sessionId).subscribeEvents({ enduring: scope, ephemeral: scope }, { start, feed: settings.feed });
  } catch (e) {
    sendError(res, failure(e));
    return;
  }
  if (req.destroyed) {
    await sub.close();
    return;
  }
  res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no" });
  // Headers go out now, not with the first frame: an idle session still shows as connected.
  res.flushHeaders();
  res.socket?.setNoDelay(true);
  counters.open++;
  shared.open.add(sub);
  const ping = setInterval(() => res.write(PING_FRAME), settings.heartbeatMs);
  const stop = () => void sub.close();
  res.on("close", stop);
  let reading = share;
  const it = sub[Symbol.asyncIterator]();
  try {
    for (;;) {
      let step: IteratorResult<Delivery<JetloopEvent>>;
      if (reading === undefined) step = await it.next();
      else {
        try {
          await reading.hold();
        } catch {
          break; // the client left while the stream waited for a share
        }
        const next = it.next();
        let timer: NodeJS.Timeout | undefined;
        const idle = await Promise.race([next.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), HISTORY_IDLE_MS)))]);
        clearTimeout(timer);
        if (idle) {
          reading.give();
          reading = undefined;
        }
        step = await next;
      }
      if (step.done) break;
      const d = step.value;
      if (reading !== undefined && d.journalSeq >= r.history!.endSeq) {
        reading.give();
        reading = undefined;
      }
      const frame = shared.frames.frameFor(d);
      if (frame === undefined) continue;
      const buffered = res.writableLength;
      if (d.journalSeq === 0 && buffered > settings.previewDropBytes) {
        counters.previewsDropped++;
        continue;
      }
      // Waiting for the client, not the connection: the share goes back meanwhile.
      if (buffered > settings.maxBufferedBytes) reading?.give();
      if (buffered > settings.maxBufferedBytes && !(await drained(res, settings.slowClientMs))) {
        if (res.destroyed) break;
        counters.slowDisconnects++;
        bus.log.info({ sessionId: r.sessionId, bufferedBytes: buffered, journalSeq: d.journalSeq }, "gateway: SSE client too slow, disconnected");
        res.destroy();
        break;
      }
      res.write(sseFrame(d, frame));
    }
  } catch (err) {
    // The subscription failed (its iteration rejects with why): the client reconnects with Last-Event-ID.
    bus.log.warn({ code: (err as { code?: string }).code, sessionId: r.sessionId }, "gateway: SSE subscription ended");
  } finally {
    share?.give();
    clearInterval(ping);
    res.off("close", stop);
    counters.open--;
    shared.open.delete(sub);
    await sub.close();
    if (!res.destroyed) res.end();
  }
}
