import { z } from "zod";
import { OptionsError } from "../errors.js";
import { functionOption, parseOptions, parseSplit } from "../options.js";
import { feedModeSchema, type FeedMode } from "../subjects/feed-mode.js";
import type { Authenticate } from "./auth.js";
import { type BoundarySettings, LOOPBACK_HOSTS, parseBoundaryLists } from "./boundary.js";

/**
 * A duration in milliseconds, at least `min`. At most 2^31 - 1: Node runs a longer timer
 * after 1 ms, so a larger value would be read as "at once", not as "very long".
 */
const durationMs = (min: number) => z.number().int().min(min).max(2 ** 31 - 1);

/** The gateway's HTTP handler's options (`createGatewayHandler`; `startGateway` takes them too). */
export interface GatewayOptions {
  /** Bearer token every request must carry (`Authorization: Bearer …`). Default: none. */
  token?: string | undefined;
  /** Authentication function (instead of `token`). Default: none, every request passes. */
  authenticate?: Authenticate | undefined;
  /** Request body cap in bytes; over it is 400 invalid_body. Default 1 MiB. */
  maxBodyBytes?: number | undefined;
  /** SSE heartbeat (`: ping`) interval. Default 20000 ms, the runtime's. */
  heartbeatMs?: number | undefined;
  /** Bytes an SSE client may leave unread before its previews are dropped. Default 256 KiB. */
  previewDropBytes?: number | undefined;
  /** Bytes an SSE client may leave unread before the stream waits for it to drain. Default 1 MiB. */
  maxBufferedBytes?: number | undefined;
  /** How long an SSE client past `maxBufferedBytes` has to drain before it is disconnected. Default 10000 ms. */
  slowClientMs?: number | undefined;
  /**
   * How the SSE streams follow the feed (the bus option `feed`, per subscription):
   * `namespace`, one core subscription for all the gateway's clients, every event in
   * journal order even when the feed lost one; `loop`, one per watched session or loop,
   * filtered by the server (the gateway's user then needs subscribe rights on those
   * subjects only). Default `namespace`.
   */
  feed?: FeedMode | undefined;
  /** How long a gate answer, input or interrupt waits for the loop actor; past it 503 gate_capacity (a gate) or session_timeout. Default 5000 ms. */
  answerTimeoutMs?: number | undefined;
  /**
   * Host names (or IP literals, IPv6 in brackets) a request's `Host` may name, besides the
   * address it arrived on. Default: the loopback names `localhost`, `127.0.0.1`, `[::1]`.
   * Behind a reverse proxy or on a public bind, list the names clients use.
   */
  allowedHosts?: string[] | undefined;
  /**
   * Origins (`scheme://host[:port]`) besides the gateway's own whose pages may call it:
   * their requests get CORS headers and their preflights succeed. Default: none.
   */
  allowedOrigins?: string[] | undefined;
  /** How long a request body may take to arrive; past it 408 and the connection is closed. Default 10000 ms. */
  bodyTimeoutMs?: number | undefined;
  /**
   * Bytes of one journal page (`GET …/journal`). A page ends before an event that would take
   * it past this (it always holds one), saying done:false and the next sequence, as a page
   * cut by `limit` does. Pages are streamed, never held whole. Default 16 MiB.
   */
  maxPageBytes?: number | undefined;
  /** Open SSE streams per client address; past it 429 too_many_streams (retryable). Default 32. */
  maxStreamsPerClient?: number | undefined;
  /**
   * The `max_pending` of the NATS server the gateway's connection is on: bytes the server
   * holds for the connection before it cuts it as a slow consumer (with every viewer on
   * it). The read routes (journal pages, status, the list, gate answers) together ask for
   * at most half of it at once; a request that does not fit waits its turn. Default
   * 64 MiB, nats-server's default.
   */
  natsMaxPendingBytes?: number | undefined;
}

/** The HTTP server's limits (`startGateway`). */
export interface ServerOptions {
  /** Time to receive the request headers; past it the connection is closed. Default 5000 ms, the runtime's ReadHeaderTimeout. */
  headersTimeoutMs?: number | undefined;
  /** Open connections per client address; past it the new connection is answered 503 and closed. Default 128. */
  maxConnectionsPerClient?: number | undefined;
  /**
   * Open connections in all, whatever their address; past it the new connection is answered
   * 503 and closed. With `maxHeaderBytes` it bounds what strangers can make the gateway hold
   * before authentication: 1024 × 16 KiB = 16 MiB of headers. Default 1024.
   */
  maxConnections?: number | undefined;
  /**
   * Bytes of a request line and headers read before answering 431 and closing (node:http's
   * `maxHeaderSize`). 16 KiB is ample for a bearer token; Go's 1 MiB let 512 connections
   * make the gateway hold 600 MiB before it knew who was calling. Default 16384.
   */
  maxHeaderBytes?: number | undefined;
  /**
   * Requests of one connection held at once: the one being answered (a connection's
   * requests are answered one at a time, as Go's net/http serves them) and those a client
   * pipelined behind it. One more closes the connection. Default 32.
   */
  maxPipelinedRequests?: number | undefined;
}

/** `startGateway`'s options: where to listen, the server's limits and the handler's options. */
export interface ListenOptions extends GatewayOptions, ServerOptions {
  /** `HOST:PORT` (`[::1]:8080` for IPv6; port 0 picks a free one). */
  listen: string;
  /** Listen on a non-loopback address without authentication. Default false. */
  insecurePublicBind?: boolean | undefined;
}

// The checking side of the interfaces above (documented there; test/unit/public-types.test.ts
// keeps each shape's input type and its interface the same).
export const gatewayShape = z.strictObject({
  token: z.string().min(1).optional(),
  authenticate: functionOption<Authenticate>().optional(),
  maxBodyBytes: z.number().int().min(1).default(1024 * 1024),
  heartbeatMs: durationMs(10).default(20_000),
  previewDropBytes: z.number().int().min(0).default(256 * 1024),
  maxBufferedBytes: z.number().int().min(1).default(1024 * 1024),
  slowClientMs: durationMs(1).default(10_000),
  feed: feedModeSchema.default("namespace"),
  answerTimeoutMs: durationMs(1).default(5000),
  allowedHosts: z.array(z.string()).default([...LOOPBACK_HOSTS]),
  allowedOrigins: z.array(z.string()).default([]),
  bodyTimeoutMs: durationMs(1).default(10_000),
  maxPageBytes: z.number().int().min(1024).default(16 * 1024 * 1024),
  maxStreamsPerClient: z.number().int().min(1).default(32),
  natsMaxPendingBytes: z.number().int().min(2 * 1024 * 1024).default(64 * 1024 * 1024),
});

export type GatewaySettings = z.output<typeof gatewayShape> & { readonly boundary: BoundarySettings };

export function parseGatewayOptions(options: GatewayOptions): GatewaySettings {
  const data = parseOptions(gatewayShape, options);
  if (data.token !== undefined && data.authenticate !== undefined) throw new OptionsError("token", "give token or authenticate, not both");
  if (data.previewDropBytes > data.maxBufferedBytes) throw new OptionsError("previewDropBytes", "must not exceed maxBufferedBytes");
  const boundary = parseBoundaryLists(data.allowedHosts, data.allowedOrigins);
  if ("bad" in boundary) {
    const what = boundary.bad === "allowedHosts" ? "a host name or IP literal (IPv6 in brackets), no port" : "an origin scheme://host[:port] (http or https)";
    throw new OptionsError(boundary.bad, `${JSON.stringify(boundary.value)} is not ${what}`);
  }
  return { ...data, boundary };
}

export const serverShape = z.strictObject({
  headersTimeoutMs: durationMs(1).default(5000),
  maxConnectionsPerClient: z.number().int().min(1).default(128),
  maxConnections: z.number().int().min(1).default(1024),
  maxHeaderBytes: z.number().int().min(1024).max(1024 * 1024).default(16 * 1024),
  maxPipelinedRequests: z.number().int().min(1).max(1024).default(32),
});

export type ServerSettings = z.output<typeof serverShape>;

export function parseServerOptions(options: ServerOptions): ServerSettings {
  return parseOptions(serverShape, options);
}

export const bindShape = z.strictObject({
  listen: z.string(),
  insecurePublicBind: z.boolean().default(false),
});

export const listenShape = z.strictObject({ ...gatewayShape.shape, ...serverShape.shape, ...bindShape.shape });

/** `startGateway`'s options checked at once, split into the bind, the server's limits and the handler's options. */
export function parseListenOptions(options: ListenOptions): { bind: z.output<typeof bindShape>; limits: ServerSettings; handlerOptions: GatewayOptions } {
  const [bind, limits, handlerOptions] = parseSplit(listenShape, options, bindShape, serverShape);
  parseGatewayOptions(handlerOptions as GatewayOptions); // the checks across its options
  return { bind: bind as z.output<typeof bindShape>, limits: limits as ServerSettings, handlerOptions: handlerOptions as GatewayOptions };
}
