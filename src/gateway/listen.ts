/**
 * Serving the gateway on its own `node:http` server, with the runtime's fail-secure bind:
 * a non-loopback address needs authentication unless the caller says otherwise.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { isIP, type Socket } from "node:net";
import type { Jetloop } from "../bus.js";
import { GatewayBindError } from "../errors.js";
import { createGatewayHandler, type GatewayHandler } from "./handler.js";
import { type GatewayOptions, type ListenOptions, parseListenOptions, type ServerSettings } from "./options.js";
import { oneAtATime } from "./pipeline.js";

export type { ListenOptions };

/** A gateway bound to an address (`startGateway`): its server, its handler, its URL, and how to stop it. */
export interface RunningGateway {
  readonly server: Server;
  readonly handler: GatewayHandler;
  /** `http://host:port` as bound. */
  readonly url: string;
  /** Stops accepting, ends the open streams and closes the server. */
  close(): Promise<void>;
}

export function parseListen(listen: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):([0-9]{1,5})$/.exec(listen);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new GatewayBindError(listen, "must be HOST:PORT");
  return { host: m[1] ?? m[2]!, port };
}

/** localhost, 127/8 and ::1 (reference §9). */
export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return isIP(host) === 6 && (host === "::1" || host === "0:0:0:0:0:0:0:1");
}

/** Every option checked (the handler's too); throws GatewayBindError or OptionsError. */
export function checkListenOptions(options: ListenOptions): { host: string; port: number; limits: ServerSettings; handlerOptions: GatewayOptions } {
  const { bind, limits, handlerOptions } = parseListenOptions(options);
  const { host, port } = parseListen(bind.listen);
  return { host, port, limits, handlerOptions };
}

const REFUSED = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 21\r\n\r\ntoo many connections\n";

/**
 * At most `perClient` open connections per client address and `total` in all: one more is
 * answered 503 and closed. The HTTP parser may still read a request from it; that request
 * is never handled. Returns the guard the request handler goes through.
 */
function capConnections(server: Server, perClient: number, total: number): (socket: Socket) => boolean {
  const open = new Map<string, number>();
  let all = 0;
  const refused = new WeakSet<Socket>();
  server.on("connection", (socket: Socket) => {
    const client = socket.remoteAddress ?? "";
    const n = (open.get(client) ?? 0) + 1;
    if (n > perClient || all + 1 > total) {
      refused.add(socket);
      socket.end(REFUSED, () => socket.destroy());
      return;
    }
    open.set(client, n);
    all++;
    socket.once("close", () => {
      all--;
      const left = (open.get(client) ?? 1) - 1;
      if (left === 0) open.delete(client);
      else open.set(client, left);
    });
  });
  return (socket) => !refused.has(socket);
}

/** Binds the gateway to an address and serves the Go runtime's HTTP surface from NATS. A non-loopback address needs authentication (or `insecurePublicBind`). */
export async function startGateway(bus: Jetloop, options: ListenOptions): Promise<RunningGateway> {
  const { host, port, limits, handlerOptions } = checkListenOptions(options);
  const { listen, insecurePublicBind } = options;
  const handler = createGatewayHandler(bus, handlerOptions);
  if (!isLoopback(host) && !handler.authenticated && insecurePublicBind !== true) {
    throw new GatewayBindError(listen, "refusing a non-loopback address without authentication (set a token or an authenticate function, or insecurePublicBind)");
  }
  // The runtime's server timeouts: slow headers and idle keep-alives are cut. A slow body is
  // cut by the handler (bodyTimeoutMs): Node's requestTimeout also ends long SSE responses
  // whose socket is backed up, so it stays off.
  // Node checks headersTimeout only every connectionsCheckingInterval (30 s by default), so a
  // trickle of headers would last that long: check often enough for the bound to hold.
  const server = createServer({
    requestTimeout: 0,
    headersTimeout: limits.headersTimeoutMs,
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
    keepAliveTimeout: 60_000,
    // Read before authentication, so capped well under Go's 1 MiB (options.ts).
    maxHeaderSize: limits.maxHeaderBytes,
  });
  const admitted = capConnections(server, limits.maxConnectionsPerClient, limits.maxConnections);
  const serve = oneAtATime(handler, limits.maxPipelinedRequests);
  server.on("request", (req: IncomingMessage, res: ServerResponse) => (admitted(req.socket) ? serve(req, res) : req.socket.destroy()));
  await new Promise<void>((resolve, reject) => {
    server.once("error", (e) => reject(new GatewayBindError(listen, e.message, { cause: e })));
    server.listen(port, host === "" ? undefined : host, () => resolve());
  });
  const addr = server.address();
  const bound = typeof addr === "object" && addr !== null ? addr : { address: host, port };
  const url = `http://${bound.address.includes(":") ? `[${bound.address}]` : bound.address}:${bound.port}`;
  return {
    server,
    handler,
    url,
    close: async () => {
      await handler.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
