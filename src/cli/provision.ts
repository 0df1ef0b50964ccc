import { connect } from "../bus.js";
import { ShardLayoutError, UsageError } from "../errors.js";
import { parseArgs } from "node:util";
import { parseDuration } from "../streams/declared.js";
import type { ProvisionReport } from "../streams/provision.js";
import { checkDurability, checkMonitorUrls, type Durability } from "../streams/durability.js";
import { connectionFlags, connectionHelp, connectOptions, parse, positiveInt } from "./args.js";

/** A verify of a stream that does not exist: reported as one drift of its name. */
const isMissing = (r: ProvisionReport) => r.action === "drifted" && r.drift.some((d) => d.field === "name" && d.live === undefined);

export const provisionHelp = `jetloop provision [--verify] [--replicas N] [--max-event-bytes N] [--max-age D] [--max-bytes N]
                  [--duplicate-window D] [--durability default|strict] [--monitor URL]...
                  [--partitions N] [--shards S]

Creates or updates the events stream from streams/events.json and the parked store
from streams/parked.json, idempotently. Prints each field that differed. A live
stream that cannot take the declared configuration (another storage or retention)
is refused, never overwritten. Warns when a retention limit can remove events a
durable has not acknowledged.

  --verify              report drift only; change nothing (exit 2 on drift)
  --replicas N          stream replicas (default: 3 in a cluster, else 1)
  --max-event-bytes N   byte cap of one event and the stream's max_msg_size (default 1048576)
  --max-age D           retention: remove journal events older than D (Go duration, e.g. 720h);
                        default none, the journal is kept (provisioning without it removes a limit)
  --max-bytes N         retention: remove the oldest journal events past N bytes; default none
  --duplicate-window D  how long a resent event id is recognised (Go duration; default 2m, at
                        least the publish deadline; provisioning without it sets 2m again);
                        the server keeps ~230 bytes per append for that long on each replica
  --durability P        strict: replicas 3 (a cluster), file storage, and every --monitor
                        server must sync before acking; default: as before
  --monitor URL         a journal server's monitoring URL (http://host:8222), repeatable: its
                        /varz sync setting is read, and a server that acks before syncing warned of
  --partitions N        partitioned durable groups: also the partitioned stream
                        (streams/partitioned.json, the journal split by session into N) and the
                        membership store (streams/members.json); N is fixed once it exists
  --shards S            split the journal over S streams by session (default 1): shard k is
                        {stream}_k_of_S on {ns}.journal-k-of-S.>; S is fixed once it exists
                        (another count is refused: a migration, docs/scale.md). On a cluster
                        the shards' leaders are spread over its servers; every shard's
                        leader is printed, with --verify too (which, without --shards,
                        verifies the count the namespace has)

${connectionHelp}`;

export async function provisionCommand(argv: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const { values } = parse(() =>
    parseArgs({
      args: argv,
      options: { ...connectionFlags, verify: { type: "boolean" }, replicas: { type: "string" }, "max-event-bytes": { type: "string" }, "max-age": { type: "string" }, "max-bytes": { type: "string" }, "duplicate-window": { type: "string" }, durability: { type: "string" }, monitor: { type: "string", multiple: true }, partitions: { type: "string" }, shards: { type: "string" } },
      strict: true,
      tokens: true,
    }),
  );
  if (values.help) {
    out(provisionHelp);
    return 0;
  }
  // Everything is checked before connecting.
  const maxEventBytes = positiveInt("max-event-bytes", values["max-event-bytes"]);
  const shards = positiveInt("shards", values.shards);
  const request = {
    mode: values.verify ? "verify" : "apply",
    replicas: positiveInt("replicas", values.replicas),
    maxAge: values["max-age"],
    maxBytes: positiveInt("max-bytes", values["max-bytes"]),
    duplicateWindow: values["duplicate-window"],
    durability: values.durability as Durability | undefined,
    monitor: values.monitor,
    partitions: positiveInt("partitions", values.partitions),
  } as const;
  for (const [flag, d] of [["--max-age", request.maxAge], ["--duplicate-window", request.duplicateWindow]] as const) {
    if (d === undefined) continue;
    try {
      parseDuration(d);
    } catch (e) {
      throw new UsageError(`${flag} ${(e as Error).message}`);
    }
  }
  try {
    checkDurability(request.durability);
    checkMonitorUrls(request.monitor);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  // The bus reads the count the journal has; asked for another, it is refused (SHARD_LAYOUT).
  // Provisioning without --shards means one shard; verifying without it checks the layout
  // the namespace has (read from the server), whatever its count.
  const count = shards ?? (values.verify ? undefined : 1);
  const bus = await connect({ ...connectOptions(values), ...(maxEventBytes ? { maxEventBytes } : {}), ...(count === undefined ? {} : { shards: count }) }).catch((e: unknown) => {
    throw e instanceof ShardLayoutError ? new UsageError(`${e.message}: changing the shard count of a live namespace is a migration (docs/scale.md), not a provision`) : e;
  });
  try {
    const report = await bus.provision(request);
    // Said once the answer is in: a refusal prints only its error, and --verify, which
    // changes nothing, never says it is provisioning.
    out(`${values.verify ? "checked" : "provisioned"} ${bus.shards > 1 ? `${bus.shards} journal shards of ${bus.stream}` : `stream ${bus.stream}`} (namespace ${bus.namespace}) on nats-server ${bus.serverVersion}:`);
    const groups = report.partitioned ? [report.partitioned.partitioned, report.partitioned.members] : [];
    const journal = report.shards ?? [report];
    for (const r of [...journal, report.parked, ...groups]) {
      if (isMissing(r)) {
        out(`stream ${r.stream}: missing (--verify changes nothing; provision without --verify creates it)`);
        continue;
      }
      for (const d of r.drift) out(`  ${d.field}: live ${JSON.stringify(d.live)} → declared ${JSON.stringify(d.desired)}`);
      const leader = (r as { leader?: string }).leader;
      out(`stream ${r.stream}: ${r.action}${leader === undefined ? "" : `, leader ${leader === "" ? "(none elected)" : leader}`}`);
    }
    for (const w of report.warnings) err(`warning: ${w.message}`);
    for (const w of report.durability.warnings) err(`warning: ${w.message}`);
    for (const x of report.durability.settings) out(`server ${x.serverName ?? x.monitorUrl}: ${x.syncAlways ? "syncs before every ack (sync_interval: always)" : `syncs every ${x.syncIntervalNs / 1e9}s`}`);
    return [...journal, report.parked, ...groups].some((r) => r.action === "drifted") ? 2 : 0;
  } finally {
    await bus.close();
  }
}
