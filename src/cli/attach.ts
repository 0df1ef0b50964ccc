import { parseArgs } from "node:util";
import { attach } from "../attach/attach.js";
import type { AttachedSession, AttachReport } from "../attach/session-follower.js";
import { connect } from "../bus.js";
import { startMetricsServer } from "../gateway/metrics-server.js";
import { UsageError } from "../errors.js";
import { connectionFlags, connectionHelp, connectOptions, parse, positiveInt } from "./args.js";

export const attachHelp = `jetloop attach --go-store [--lease] [--once] [--status-every S] [--json]

Follows the sessions a Go runtime writes into NATS through looprig/natsstore (its
session store on JetStream: streams sessions_s<uuid>, catalog KV natsstore_kv, object
store natsstore_blobs) and appends their events to this namespace's journal: byte for
byte, in Go's order, exactly once across restarts (resumed from what the journal
holds). Fences, commands and the runtime's private records stay out; a record the Go
runtime's reader would refuse is parked (jetloop parked list go-<session>). Never
writes to the Go runtime's streams, KV or object store. Runs until interrupted.
Provision the namespace first (jetloop provision); needs nats-server 2.11+.

  --go-store        follow the Go runtime's natsstore layout on the same NATS (required)
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

function statusLine(s: AttachedSession, json: boolean): string {
  if (json) return JSON.stringify({ session_id: s.sessionId, state: s.state, found_by: s.via, go_last_seq: s.goLastSeq, go_seq: s.goSeq, lag: s.lag, journal_seq: s.journalSeq, appended: s.appended, kept_out: s.keptOut, parked: s.parked, ...(s.lastError ? { last_error: s.lastError } : {}) });
  return `${s.sessionId} ${s.state} lag=${s.lag} go_seq=${s.goSeq}/${s.goLastSeq} appended=${s.appended} kept_out=${s.keptOut} parked=${s.parked}${s.lastError ? ` last_error=${JSON.stringify(s.lastError)}` : ""}`;
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
      options: { ...connectionFlags, "go-store": { type: "boolean" }, once: { type: "boolean" }, "status-every": { type: "string" }, json: { type: "boolean" }, readers: { type: "string" }, metrics: { type: "string" }, lease: { type: "boolean" }, "lease-ms": { type: "string" } },
      strict: true,
      tokens: true,
    }),
  );
  if (values.help) {
    out(attachHelp);
    return 0;
  }
  if (!values["go-store"]) throw new UsageError("--go-store is required: it names what to attach (the Go runtime's natsstore layout on this NATS)");
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
    });
    const status = () => {
      if (values.lease) out(json ? JSON.stringify({ role: a.role() }) : `role=${a.role()}`);
      for (const s of a.sessions()) out(statusLine(s, json));
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
