/**
 * Serving the gateway on its own `node:http` server, with the runtime's fail-secure bind:
 * a non-loopback address needs authentication unless the caller says otherwise.
 */
import { createServer, type Server } from "node:http";
import { isIP } from "node:net";
import type { Jetloop } from "../bus.js";
import { GatewayBindError } from "../errors.js";
import { createGatewayHandler, type GatewayHandler } from "./handler.js";
import type { GatewayOptions } from "./options.js";

export interface ListenOptions extends GatewayOptions {
  /** `HOST:PORT` (`[::1]:8080` for IPv6; port 0 picks a free one). */
  readonly listen: string;
  /** Listen on a non-loopback address without authentication. Default false. */
  readonly insecurePublicBind?: boolean;
}

export interface RunningGateway {
  readonly server: Server;
  readonly handler: GatewayHandler;
  /** `http://host:port` as bound. */
  readonly url: string;
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

export async function startGateway(bus: Jetloop, options: ListenOptions): Promise<RunningGateway> {
  const { listen, insecurePublicBind, ...handlerOptions } = options;
  const { host, port } = parseListen(listen);
  const handler = createGatewayHandler(bus, handlerOptions);
  if (!isLoopback(host) && !handler.authenticated && insecurePublicBind !== true) {
    throw new GatewayBindError(listen, "refusing a non-loopback address without authentication (set a token or an authenticate function, or insecurePublicBind)");
  }
  // The runtime's server timeouts: slow headers and idle keep-alives are cut; SSE has no write timeout.
  const server = createServer({ requestTimeout: 0, headersTimeout: 5000, keepAliveTimeout: 60_000, maxHeaderSize: 1024 * 1024 }, handler);
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
