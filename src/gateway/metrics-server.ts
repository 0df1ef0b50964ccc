/**
 * `jetloop gateway --metrics HOST:PORT`: jetloop's metrics in Prometheus text format on
 * `GET /metrics`, from the OpenTelemetry SDK's meter provider and its Prometheus exporter
 * (the instruments are OpenTelemetry's, so its exporter renders them without a bridge;
 * prom-client would need every instrument recorded twice). Both packages are optional
 * peers, loaded only here. The bind rule is the gateway's: a non-loopback address only
 * when told (`insecurePublicBind`), since the figures are served without authentication.
 * So is the browser boundary (gateway/boundary.ts): a loopback bind does not keep out a page
 * that rebinds its own name to 127.0.0.1, so a Host that does not name the server, any
 * other origin's page and a browser's cross-site fetch are refused (403) before a scrape.
 */
import { createServer, type Server } from "node:http";
import { GatewayBindError, OptionsError, TelemetryUnavailableError } from "../errors.js";
import { type BoundarySettings, checkRequest, LOOPBACK_HOSTS, parseBoundaryLists } from "./boundary.js";
import { sendError } from "./envelope.js";
import { isLoopback, parseListen } from "./listen.js";
import { api } from "../telemetry/otel.js";
import type * as SdkMetrics from "@opentelemetry/sdk-metrics";
import type * as PrometheusExport from "@opentelemetry/exporter-prometheus";

/** Where and how `startMetricsServer` serves the Prometheus endpoint. */
export interface MetricsServerOptions {
  /** `HOST:PORT` (port 0 picks a free one). */
  readonly listen: string;
  /** Serve on a non-loopback address. Default false. */
  readonly insecurePublicBind?: boolean;
  /**
   * The Host names a scrape may use besides the address it arrives on (host names or IP
   * literals, IPv6 in brackets, no port), as the gateway's `allowedHosts`. Default: the
   * loopback names.
   */
  readonly allowedHosts?: readonly string[];
}

/** A running Prometheus endpoint (`startMetricsServer`). */
export interface MetricsServer {
  /** `http://host:port/metrics` as bound. */
  readonly url: string;
  /** Closes the endpoint. */
  close(): Promise<void>;
}

/**
 * The bind and host list checked before anything starts: GatewayBindError for a bad or
 * public address not allowed, OptionsError for a host list entry that is not exactly a host.
 */
export function checkMetricsBind(options: MetricsServerOptions): { host: string; port: number; boundary: BoundarySettings } {
  const { host, port } = parseListen(options.listen);
  if (!isLoopback(host) && options.insecurePublicBind !== true) {
    throw new GatewayBindError(options.listen, "refusing a non-loopback address for metrics (they are served without authentication); allow it with insecurePublicBind");
  }
  // No origin is allowed: no page has a reason to read the figures.
  const boundary = parseBoundaryLists(options.allowedHosts ?? LOOPBACK_HOSTS, []);
  if ("bad" in boundary) throw new OptionsError("allowedHosts", `${JSON.stringify(boundary.value)} is not a host name or IP literal (IPv6 in brackets), no port`);
  return { host, port, boundary };
}

async function optional<T>(name: string): Promise<T> {
  try {
    return (await import(name)) as T;
  } catch (e) {
    throw new TelemetryUnavailableError(`metrics need the optional packages @opentelemetry/api, @opentelemetry/sdk-metrics and @opentelemetry/exporter-prometheus (npm install them): ${name} could not be loaded`, { cause: e });
  }
}

/**
 * Registers a global meter provider whose reader is the Prometheus exporter and serves it.
 * Call before the bus and gateway are made: the metrics API has no proxy, so instruments
 * are taken from the provider registered when they are first used.
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const { host, port, boundary } = checkMetricsBind(options);
  if (api === undefined) {
    // Not installed (optional() says so), or installed and turned off: jetloop records nothing to serve.
    await optional("@opentelemetry/api");
    throw new TelemetryUnavailableError("metrics need telemetry on, and JETLOOP_TELEMETRY=off turns it off in this process");
  }
  const sdk = await optional<typeof SdkMetrics>("@opentelemetry/sdk-metrics");
  const { PrometheusExporter } = await optional<typeof PrometheusExport>("@opentelemetry/exporter-prometheus");
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const provider = new sdk.MeterProvider({ readers: [exporter] });
  if (!api.metrics.setGlobalMeterProvider(provider)) {
    await provider.shutdown();
    throw new TelemetryUnavailableError("another meter provider is registered already: serve its metrics with its own exporter");
  }
  const server: Server = createServer((req, res) => {
    const verdict = checkRequest(req, boundary);
    if (!verdict.ok) return sendError(res, verdict.error);
    const path = new URL(req.url ?? "/", "http://metrics").pathname;
    if (req.method !== "GET" || path !== "/metrics") {
      res.writeHead(404, { "Content-Type": "text/plain; charset=utf-8" }).end("not found\n");
      return;
    }
    exporter.getMetricsRequestHandler(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (e) => reject(new GatewayBindError(options.listen, e.message, { cause: e })));
    server.listen(port, host === "" ? undefined : host, () => resolve());
  }).catch(async (e: unknown) => {
    api!.metrics.disable();
    await provider.shutdown();
    throw e;
  });
  const addr = server.address();
  const bound = typeof addr === "object" && addr !== null ? addr : { address: host, port };
  return {
    url: `http://${bound.address.includes(":") ? `[${bound.address}]` : bound.address}:${bound.port}/metrics`,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      api!.metrics.disable();
      await provider.shutdown();
    },
  };
}
