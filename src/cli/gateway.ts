import { parseArgs } from "node:util";
import { UsageError } from "../errors.js";
import { connect } from "../bus.js";
import { checkListenOptions, isLoopback, type ListenOptions, parseListen, startGateway } from "../gateway/listen.js";
import { feedModeSchema } from "../subjects/feed-mode.js";
import { connectionFlags, connectionHelp, connectOptions, parse, positiveInt } from "./args.js";
import { warnIfNotProvisioned } from "./provisioned.js";
import { checkMetricsBind, startMetricsServer } from "../gateway/metrics-server.js";
import { commandLogger, logFormat, logFormatFlag } from "./log-format.js";

export const gatewayHelp = `jetloop gateway --listen HOST:PORT [--auth-token-env VAR] [--insecure-public-bind] [--feed MODE] [--metrics HOST:PORT]

Serves the Go runtime's HTTP surface (journal pages, SSE, gate answers, input and
interrupt to the session's actor, capabilities) from the journal and the feed.
Runs until interrupted (Ctrl-C).

  --listen HOST:PORT       where to listen (default 127.0.0.1:8080)
  --auth-token-env VAR     require "Authorization: Bearer <token>", the token read from
                           the environment variable VAR (never from the command line)
  --insecure-public-bind   allow a non-loopback address without authentication
  --feed namespace|loop    how SSE streams follow the feed: one subscription on the
                           namespace's feed (default), or one per watched session/loop
  --max-body-bytes N       request body cap (default 1048576)
  --allow-host NAME        a Host the gateway answers to besides the address it listens
                           on (repeatable; default: localhost, 127.0.0.1, [::1]; given,
                           it replaces the default)
  --allow-origin ORIGIN    a scheme://host[:port] whose pages may call the gateway
                           (CORS; repeatable; default: none, only the gateway's own page)
  --max-connections-per-client N   open connections per client address (default 128)
  --max-connections N      open connections in all (default 1024)
  --max-header-bytes N     request line and headers read before 431 (default 16384)
  --max-pipelined-requests N   requests one connection may have unanswered (answered one
                           at a time); one more closes the connection (default 32)
  --max-page-bytes N       bytes of one journal page; a longer one ends early with
                           done:false and the next sequence (default 16777216)
  --max-streams-per-client N       open SSE streams per client address (default 32)
  --nats-max-pending N     the NATS server's max_pending for the gateway's connection
                           (default 67108864, nats-server's); its reads owe the
                           connection at most half of it at once, and queue past that
  --metrics HOST:PORT      serve jetloop's metrics in Prometheus text format on
                           http://HOST:PORT/metrics (needs the packages @opentelemetry/api,
                           @opentelemetry/sdk-metrics, @opentelemetry/exporter-prometheus)
  --insecure-public-metrics  allow a non-loopback --metrics address (metrics are served
                           without authentication); a scrape must name the metrics
                           address or an --allow-host, and no page may read them
  --log-format pretty|json lines for a person, or one JSON object a line for machines
                           (default: pretty when stderr is a terminal, else json)

${connectionHelp}`;

export async function gatewayCommand(argv: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const { values } = parse(() => parseArgs({ args: argv, options: { ...connectionFlags,
    listen: { type: "string" },
    "auth-token-env": { type: "string" },
    "insecure-public-bind": { type: "boolean" },
    "max-body-bytes": { type: "string" },
    feed: { type: "string" },
    "allow-host": { type: "string", multiple: true },
    "allow-origin": { type: "string", multiple: true },
    "max-connections-per-client": { type: "string" },
    "max-connections": { type: "string" },
    "max-header-bytes": { type: "string" },
    "max-pipelined-requests": { type: "string" },
    "max-page-bytes": { type: "string" },
    "max-streams-per-client": { type: "string" },
    "nats-max-pending": { type: "string" },
    metrics: { type: "string" },
    "insecure-public-metrics": { type: "boolean" },
    ...logFormatFlag,
  }, strict: true, tokens: true }));
  if (values.help) {
    out(gatewayHelp);
    return 0;
  }
  const log = commandLogger(logFormat(values["log-format"]), "jetloop-gateway");
  const tokenVar = values["auth-token-env"];
  const token = tokenVar === undefined ? undefined : process.env[tokenVar];
  if (tokenVar !== undefined && !token) throw new UsageError(`--auth-token-env: the environment variable ${tokenVar} is not set`);
  const listen = values.listen ?? "127.0.0.1:8080";
  let host: string;
  try {
    host = parseListen(listen).host;
  } catch {
    throw new UsageError(`--listen ${JSON.stringify(listen)} must be HOST:PORT (e.g. 127.0.0.1:8080, [::1]:8080)`);
  }
  // Said in the command's own flags before connecting (the library's refusal names its options).
  if (!isLoopback(host) && token === undefined && values["insecure-public-bind"] !== true) {
    throw new UsageError(`--listen ${listen} is not a loopback address: add --auth-token-env VAR to require a bearer token, or --insecure-public-bind to serve it without authentication`);
  }
  // Default: the gateway's (namespace).
  const feed = values.feed === undefined ? undefined : feedModeSchema.safeParse(values.feed).data;
  if (values.feed !== undefined && feed === undefined) throw new UsageError(`--feed: ${JSON.stringify(values.feed)} is not namespace or loop`);
  const options: ListenOptions = {
    listen,
    token,
    maxBodyBytes: positiveInt("max-body-bytes", values["max-body-bytes"]),
    feed,
    insecurePublicBind: values["insecure-public-bind"] === true,
    allowedHosts: values["allow-host"],
    allowedOrigins: values["allow-origin"],
    maxConnectionsPerClient: positiveInt("max-connections-per-client", values["max-connections-per-client"]),
    maxConnections: positiveInt("max-connections", values["max-connections"]),
    maxHeaderBytes: positiveInt("max-header-bytes", values["max-header-bytes"]),
    maxPipelinedRequests: positiveInt("max-pipelined-requests", values["max-pipelined-requests"]),
    maxPageBytes: positiveInt("max-page-bytes", values["max-page-bytes"]),
    maxStreamsPerClient: positiveInt("max-streams-per-client", values["max-streams-per-client"]),
    natsMaxPendingBytes: positiveInt("nats-max-pending", values["nats-max-pending"]),
  };
  checkListenOptions(options); // before dialing: a bad flag fails fast
  const metricsBind = values.metrics === undefined ? undefined : { listen: values.metrics, insecurePublicBind: values["insecure-public-metrics"] === true, allowedHosts: values["allow-host"] };
  if (metricsBind !== undefined) {
    let host: string;
    try {
      host = parseListen(metricsBind.listen).host;
    } catch {
      throw new UsageError(`--metrics ${JSON.stringify(metricsBind.listen)} must be HOST:PORT (e.g. 127.0.0.1:9464)`);
    }
    if (!isLoopback(host) && !metricsBind.insecurePublicBind) throw new UsageError(`--metrics ${metricsBind.listen} is not a loopback address: add --insecure-public-metrics to serve metrics there without authentication`);
    checkMetricsBind(metricsBind);
  }
  // Before the bus: the metrics API has no proxy, so the meter provider must be there first.
  const metrics = metricsBind === undefined ? undefined : await startMetricsServer(metricsBind);
  if (metrics !== undefined) out(`jetloop gateway metrics on ${metrics.url}`);
  const bus = await connect({ ...connectOptions(values), name: "jetloop-gateway", logger: log }).catch(async (e: unknown) => {
    await metrics?.close();
    throw e;
  });
  try {
    await warnIfNotProvisioned(bus, "jetloop gateway", err);
    const gw = await startGateway(bus, options);
    out(`jetloop gateway listening on ${gw.url} (namespace ${bus.namespace})`);
    // Once serving: a refusal to start prints its error alone.
    log.info({ url: gw.url, namespace: bus.namespace, nats_server: bus.serverVersion }, "gateway listening");
    await new Promise<void>((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    });
    await gw.close();
    return 0;
  } finally {
    await bus.close();
    await metrics?.close();
  }
}
