import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { checkGoHttpUrl } from "../attach/go-http.js";
import { attach } from "../attach/attach.js";
import type { AttachedSession, AttachReport } from "../attach/session-follower.js";
import type { LiveFigures } from "../attach/go-live.js";
import { connect } from "../bus.js";
import { startMetricsServer } from "../gateway/metrics-server.js";
import { UsageError } from "../errors.js";
import { connectionFlags, connectionHelp, connectOptions, parse, positiveInt } from "./args.js";

export const attachHelp = `jetloop attach --go-store [--go-http URL [--go-token-file PATH | --go-token-env VAR]] [--lease] [--once] [--status-every S] [--json]

Follows the sessions a Go runtime writes into NATS through looprig/natsstore (its
session store on JetStream: streams sessions_s<uuid>, catalog KV natsstore_kv, object
store natsstore_blobs) and appends their events to this namespace's journal: byte for
byte, in Go's order, exactly once across restarts (resumed from what the journal
holds). Fences, commands and the runtime's private records stay out; a record the Go
runtime's reader would refuse is parked (jetloop parked list go-<session>). Never
writes to the Go runtime's streams, KV or object store. Runs until interrupted.
Provision the namespace first (jetloop provision); needs nats-server 2.11+.

  --go-store        follow the Go runtime's natsstore layout on the same NATS (required)
  --go-http URL     the runtime's HTTP surface (its pkg/serve routes under URL/v1): each
                    session's previews from its /events published as jetloop previews
                    (never stored), and answers, input and interrupt sent through jetloop
                    for its sessions (the NATS answer path, jetloop's gateway) forwarded
                    to its routes, the caller told what the runtime answered. The attach
                    is the gate actor of the loops it follows. Redirects are not followed.
  --go-token-file PATH  the bearer token for --go-http, read from PATH (one line); sent
                    to that URL only, never logged
  --go-token-env VAR    the same, read from the environment variable VAR
  --once            catch every session up to where it is now, print the status, exit
  --status-every S  print each session's status (lag in Go sequences) every S seconds
                    (default 30; 0 never)
  --json            status and reports as one JSON object per line
  --readers N       sessions reading their ledger at once (default 16)
  --lease           one active attach among several on this namespace: the others
                    stand by and take over within 4/3 of the lease time when it dies,
                    at once when it stops (a lease in the KV bucket <namespace>_attach)
  --lease-ms MS     the lease time (default 10000; every attach of a namespace uses one)
  --metrics HOST:PORT  serve jetloop's metrics in Prometheus text format on
                    http://HOST:PORT/metrics, the attach's among them: jetloop_attach_sessions
                    (by state), jetloop_attach_lag, jetloop_attach_records_total (by
                    outcome), jetloop_attach_errors_total (needs the packages
                    @opentelemetry/api, @opentelemetry/sdk-metrics,
                    @opentelemetry/exporter-prometheus; loopback only)

${connectionHelp}`;

function statusLine(s: AttachedSession, json: boolean, live?: LiveFigures): string {
  const http = live ? { events: live.connected ? "open" : "closed", previews: live.previews, reconnects: live.reconnects, ...(live.lastError ? { http_error: live.lastError } : {}) } : undefined;
  if (json) return JSON.stringify({ session_id: s.sessionId, state: s.state, found_by: s.via, go_last_seq: s.goLastSeq, go_seq: s.goSeq, lag: s.lag, journal_seq: s.journalSeq, appended: s.appended, kept_out: s.keptOut, parked: s.parked, ...(s.lastError ? { last_error: s.lastError } : {}), ...http });
  const words = http ? ` events=${http.events} previews=${http.previews} reconnects=${http.reconnects}${http.http_error ? ` http_error=${JSON.stringify(http.http_error)}` : ""}` : "";
  return `${s.sessionId} ${s.state} lag=${s.lag} go_seq=${s.goSeq}/${s.goLastSeq} appended=${s.appended} kept_out=${s.keptOut} parked=${s.parked}${s.lastError ? ` last_error=${JSON.stringify(s.lastError)}` : ""}${words}`;
}

/**
 * The goHttp option from the flags, checked before connecting: a URL attach can call, and
 * at most one token source (a file of one line, or a variable), present and not empty.
 * The token itself is never part of a message.
 */
function goHttpOption(url: string | undefined, tokenFile: string | undefined, tokenEnv: string | undefined): { url: string; token?: string } | undefined {
  if (url === undefined) {
    if (tokenFile !== undefined || tokenEnv !== undefined) throw new UsageError(`${tokenFile !== undefined ? "--go-token-file" : "--go-token-env"} needs --go-http: it is the token for the runtime's HTTP surface`);
    return undefined;
  }
  try {
    checkGoHttpUrl(url);
  } catch (e) {
    throw new UsageError(`--go-http: ${(e as Error).message}`);
  }
  if (tokenFile !== undefined && tokenEnv !== undefined) throw new UsageError("--go-token-file and --go-token-env: give the token one way");
  let token: string | undefined;
  if (tokenFile !== undefined) {
    try {
      token = readFileSync(tokenFile, "utf8").replace(/\r?\n$/, "");
    } catch (e) {
      throw new UsageError(`--go-token-file: cannot read ${tokenFile}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    if (token === "" || /[\r\n]/.test(token)) throw new UsageError(`--go-token-file: ${tokenFile} must hold the token on one line`);
  } else if (tokenEnv !== undefined) {
    token = process.env[tokenEnv];
    if (!token) throw new UsageError(`--go-token-env: the environment variable ${tokenEnv} is not set`);
  }
  return { url, ...(token === undefined ? {} : { token }) };
}

/** A report in words (or JSON) for stderr. */
function reportLine(r: AttachReport, json: boolean): string {
  if (json) {
    const base = { report: r.kind, ...("sessionId" in r && r.sessionId ? { session_id: r.sessionId } : {}) };
    if (r.kind === "session") return JSON.stringify({ ...base, found_by: r.via });
    if (r.kind === "parked") return JSON.stringify({ ...base, go_seq: r.goSeq, code: r.error.code, problem: r.error.problem, error: r.error.message });
    if (r.kind === "collision") return JSON.stringify({ ...base, go_seq: r.goSeq, event_id: r.eventId });
    if (r.kind === "role") return JSON.stringify({ ...base, role: r.role });
    return JSON.stringify({ ...base, code: "code" in r.error ? r.error.code : "INTERNAL", error: r.error.message });
  }
  if (r.kind === "session") return `following Go session ${r.sessionId} (found by its ${r.via === "catalog" ? "catalog entry" : r.via === "stream" ? "stream" : r.via === "advisory" ? "stream-created advisory" : "ledger subject"})`;
  if (r.kind === "parked") return `Go session ${r.sessionId}: record ${r.goSeq} parked (${r.error.problem}): ${r.error.message}`;
  if (r.kind === "collision") return `Go session ${r.sessionId}: event ${r.eventId} (record ${r.goSeq}) shares its id with another session's event; appended without a message id`;
  if (r.kind === "stopped") return `Go session ${r.sessionId}: not followed: ${r.error.message}`;
  if (r.kind === "role") return r.role === "active" ? "holds the lease: following the Go sessions" : "standby: another attach holds the lease";
  return `${r.sessionId ? `Go session ${r.sessionId}: ` : ""}retrying after an error: ${r.error.message}`;
}

export async function attachCommand(argv: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const { values } = parse(() =>
    parseArgs({
      args: argv,
      options: { ...connectionFlags, "go-store": { type: "boolean" }, once: { type: "boolean" }, "status-every": { type: "string" }, json: { type: "boolean" }, readers: { type: "string" }, metrics: { type: "string" }, lease: { type: "boolean" }, "lease-ms": { type: "string" }, "go-http": { type: "string" }, "go-token-file": { type: "string" }, "go-token-env": { type: "string" } },
      strict: true,
      tokens: true,
    }),
  );
  if (values.help) {
    out(attachHelp);
    return 0;
  }
  if (!values["go-store"]) throw new UsageError("--go-store is required: it names what to attach (the Go runtime's natsstore layout on this NATS)");
  const goHttp = goHttpOption(values["go-http"], values["go-token-file"], values["go-token-env"]);
  const every = values["status-every"] === "0" ? 0 : (positiveInt("status-every", values["status-every"]) ?? 30);
  const readers = positiveInt("readers", values.readers);
  const leaseMs = positiveInt("lease-ms", values["lease-ms"]);
  if (leaseMs !== undefined && !values.lease) throw new UsageError("--lease-ms needs --lease");
  const json = values.json === true;
  // Before the bus: the meter provider must be set before anything records (gateway.ts does the same).
  const metrics = values.metrics === undefined ? undefined : await startMetricsServer({ listen: values.metrics });
  if (metrics) err(`jetloop attach metrics on ${metrics.url}`);
  const bus = await connect(connectOptions(values)).catch(async (e: unknown) => {
    await metrics?.close();
    throw e;
  });
  try {
    const a = await attach(bus, {
      onReport: (r) => err(reportLine(r, json)),
      ...(readers === undefined ? {} : { readers }),
      ...(values.lease ? { lease: leaseMs === undefined ? {} : { leaseMs } } : {}),
      ...(goHttp ? { goHttp } : {}),
    });
    const status = () => {
      if (values.lease) out(json ? JSON.stringify({ role: a.role() }) : `role=${a.role()}`);
      for (const s of a.sessions()) out(statusLine(s, json, a.live(s.sessionId)));
    };
    try {
      await a.caughtUp();
      const sessions = a.sessions();
      err(`caught up: ${sessions.length} Go sessions, ${sessions.reduce((n, s) => n + s.appended, 0)} events appended, ${sessions.reduce((n, s) => n + s.parked, 0)} records parked; ${values.once ? "done" : "following"}`);
      if (values.once) {
        status();
        return 0;
      }
      const timer = every > 0 ? setInterval(status, every * 1000) : undefined;
      await new Promise<void>((resolve) => {
        process.once("SIGINT", resolve);
        process.once("SIGTERM", resolve);
      });
      if (timer) clearInterval(timer);
      status();
      return 0;
    } finally {
      await a.close();
    }
  } finally {
    await bus.close();
    await metrics?.close();
  }
}
