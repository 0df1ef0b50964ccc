import { z } from "zod";
import { OptionsError } from "../errors.js";
import { functionOption, parseOptions, parseSplit } from "../options.js";
import { feedModeSchema } from "../subjects/feed-mode.js";
import type { Authenticate } from "./auth.js";
import { type BoundarySettings, LOOPBACK_HOSTS, parseBoundaryLists } from "./boundary.js";

/**
 * A duration in milliseconds, at least `min`. At most 2^31 - 1: Node runs a longer timer
 * after 1 ms, so a larger value would be read as "at once", not as "very long".
 */
const durationMs = (min: number) => z.number().int().min(min).max(2 ** 31 - 1);

export const gatewayShape = z.strictObject({
  /** Bearer token every request must carry (`Authorization: Bearer …`). Default: none. */
  token: z.string().min(1).optional(),
  /** Authentication function (instead of `token`). Default: none, every request passes. */
  authenticate: functionOption<Authenticate>().optional(),
  /** Request body cap in bytes; over it is 400 invalid_body. Default 1 MiB. */
  maxBodyBytes: z.number().int().min(1).default(1024 * 1024),
  /** SSE heartbeat (`: ping`) interval. Default 20000 ms, the runtime's. */
  heartbeatMs: durationMs(10).default(20_000),
  /** Bytes an SSE client may leave unread before its previews are dropped. Default 256 KiB. */
  previewDropBytes: z.number().int().min(0).default(256 * 1024),
  /** Bytes an SSE client may leave unread before the stream waits for it to drain. Default 1 MiB. */
  maxBufferedBytes: z.number().int().min(1).default(1024 * 1024),
  /** How long an SSE client past `maxBufferedBytes` has to drain before it is disconnected. Default 10000 ms. */
  slowClientMs: durationMs(1).default(10_000),
  /**
   * How the SSE streams follow the feed (the bus option `feed`, per subscription):
   * `namespace`, one core subscription for all the gateway's clients, every event in
   * journal order even when the feed lost one; `loop`, one per watched session or loop,
   * filtered by the server (the gateway's user then needs subscribe rights on those
   * subjects only). Default `namespace`.
   */
  feed: feedModeSchema.default("namespace"),
  /** How long a gate answer, input or interrupt waits for the loop actor; past it 503 gate_capacity (a gate) or session_timeout. Default 5000 ms. */
  answerTimeoutMs: durationMs(1).default(5000),
  /**
   * Host names (or IP literals, IPv6 in brackets) a request's `Host` may name, besides the
   * address it arrived on. Default: the loopback names `localhost`, `127.0.0.1`, `[::1]`.
   * Behind a reverse proxy or on a public bind, list the names clients use.
   */
  allowedHosts: z.array(z.string()).default([...LOOPBACK_HOSTS]),
  /**
   * Origins (`scheme://host[:port]`) besides the gateway's own whose pages may call it:
   * their requests get CORS headers and their preflights succeed. Default: none.
   */
  allowedOrigins: z.array(z.string()).default([]),
  /** How long a request body may take to arrive; past it 408 and the connection is closed. Default 10000 ms. */
  bodyTimeoutMs: durationMs(1).default(10_000),
  /**
   * Bytes of one journal page (`GET …/journal`). A page ends before an event that would take
   * it past this (it always holds one), saying done:false and the next sequence, as a page
   * cut by `limit` does. Pages are streamed, never held whole. Default 16 MiB.
   */
  maxPageBytes: z.number().int().min(1024).default(16 * 1024 * 1024),
  /** Open SSE streams per client address; past it 429 too_many_streams (retryable). Default 32. */
  maxStreamsPerClient: z.number().int().min(1).default(32),
  /**
   * The `max_pending` of the NATS server the gateway's connection is on: bytes the server
   * holds for the connection before it cuts it as a slow consumer (with every viewer on
   * it). The read routes (journal pages, status, the list, gate answers) together ask for
   * at most half of it at once; a request that does not fit waits its turn
   * (read-budget.ts). Default 64 MiB, nats-server's default.
   */
  natsMaxPendingBytes: z.number().int().min(2 * 1024 * 1024).default(64 * 1024 * 1024),
});

export type GatewayOptions = z.input<typeof gatewayShape>;
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

const serverShape = z.strictObject({
  /** Time to receive the request headers; past it the connection is closed. Default 5000 ms, the runtime's ReadHeaderTimeout. */
  headersTimeoutMs: durationMs(1).default(5000),
  /** Open connections per client address; past it the new connection is answered 503 and closed. Default 128. */
  maxConnectionsPerClient: z.number().int().min(1).default(128),
  /**
   * Open connections in all, whatever their address; past it the new connection is answered
   * 503 and closed. With `maxHeaderBytes` it bounds what strangers can make the gateway hold
   * before authentication: 1024 × 16 KiB = 16 MiB of headers. Default 1024.
   */
  maxConnections: z.number().int().min(1).default(1024),
  /**
   * Bytes of a request line and headers read before answering 431 and closing (node:http's
   * `maxHeaderSize`). 16 KiB is ample for a bearer token; Go's 1 MiB let 512 connections
   * make the gateway hold 600 MiB before it knew who was calling. Default 16384.
   */
  maxHeaderBytes: z.number().int().min(1024).max(1024 * 1024).default(16 * 1024),
  /**
   * Requests of one connection held at once: the one being answered (a connection's
   * requests are answered one at a time, as Go's net/http serves them) and those a client
   * pipelined behind it. One more closes the connection (pipeline.ts). Default 32.
   */
  maxPipelinedRequests: z.number().int().min(1).max(1024).default(32),
});

export type ServerOptions = z.input<typeof serverShape>;
export type ServerSettings = z.output<typeof serverShape>;

export function parseServerOptions(options: ServerOptions): ServerSettings {
  return parseOptions(serverShape, options);
}

/** `startGateway`'s own options, besides the handler's and the server's. */
const bindShape = z.strictObject({
  /** `HOST:PORT` (`[::1]:8080` for IPv6; port 0 picks a free one). */
  listen: z.string(),
  /** Listen on a non-loopback address without authentication. Default false. */
  insecurePublicBind: z.boolean().default(false),
});

export const listenShape = z.strictObject({ ...gatewayShape.shape, ...serverShape.shape, ...bindShape.shape });

export type ListenOptions = z.input<typeof listenShape>;

/** `startGateway`'s options checked at once, split into the bind, the server's limits and the handler's options. */
export function parseListenOptions(options: ListenOptions): { bind: z.output<typeof bindShape>; limits: ServerSettings; handlerOptions: GatewayOptions } {
  const [bind, limits, handlerOptions] = parseSplit(listenShape, options, bindShape, serverShape);
  parseGatewayOptions(handlerOptions as GatewayOptions); // the checks across its options
  return { bind: bind as z.output<typeof bindShape>, limits: limits as ServerSettings, handlerOptions: handlerOptions as GatewayOptions };
}
