import { parseArgs } from "node:util";
import { connect } from "../bus.js";
import type { ConsumerFigures } from "../streams/consumer-figures.js";
import type { GroupReport } from "../group/groups-report.js";
import { connectionFlags, connectionHelp, connectOptions, parse } from "./args.js";
import { fixedTime, jsonRecord } from "./format.js";

export const consumersHelp = `jetloop consumers [--json] [--monitor URL]...

Lists every durable consumer of the namespace with its lag: pending (not yet
delivered), ack pending (delivered, waiting for an ack), redelivered, parked, last
activity, and behind (what its filter delivers that it has not acknowledged: pending
plus ack pending, never other sessions' events); and how it
redelivers: max deliver (attempts before a failing event is parked) and backoff (the
delays between them; "-" with a fixed ack wait, shown as ack_wait). Warns on
stderr when a retention limit of the events stream can remove events a durable has
not acknowledged. Then each partitioned group: one line with its live members and
sums over its partitions (behind: their pending plus ack pending), and one line per
partition consumer ({group}_p{n}) with the member that owns it. On a namespace
whose journal is split in shards, every shard's durables, each with shard=K (its
sequences and behind are that shard's; groups read every shard).

  --json          one JSON object per durable, per warning, per group and per group
                  partition (Go-style snake_case keys)
  --monitor URL   a journal server's monitoring URL (http://host:8222), repeatable: warns
                  when it acknowledges appends before syncing them to disk

${connectionHelp}`;

/** Milliseconds as the shortest Go-style duration: 500ms, 30s, 1m, 15m, 1h30m. */
export function duration(ms: number): string {
  if (ms % 1000 !== 0 || ms === 0) return `${ms}ms`;
  let s = ms / 1000;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return `${h ? `${h}h` : ""}${m ? `${m}m` : ""}${s ? `${s}s` : ""}`;
}

function line(c: ConsumerFigures, ...extra: string[]): string {
  return [
    c.durable.padEnd(24),
    ...(c.shard === undefined ? [] : [`shard=${c.shard}`]),
    ...extra,
    `pending=${c.pending}`,
    `ack_pending=${c.ackPending}`,
    `redelivered=${c.redelivered}`,
    `parked=${c.parked}`,
    `behind=${c.behind}`,
    `last_activity=${c.lastActivity ? fixedTime(c.lastActivity) : "-"}`,
    `max_deliver=${c.maxDeliver ?? "-"}`,
    `backoff=${c.backoffMs.length > 0 ? c.backoffMs.map(duration).join(",") : "-"}`,
    ...(c.backoffMs.length > 0 ? [] : [`ack_wait=${duration(c.ackWaitMs)}`]),
  ].join(" ");
}

/** A group's line (its members and sums), then one indented line per partition consumer with its owner. */
function groupLines(g: GroupReport): string[] {
  const t = g.total;
  const head = [`group ${g.group}`.padEnd(24), `members=${g.members.length > 0 ? g.members.join(",") : "-"}`, `partitions=${g.partitionCount}`, `pending=${t.pending}`, `ack_pending=${t.ackPending}`, `redelivered=${t.redelivered}`, `parked=${t.parked}`, `behind=${t.behind}`];
  return [head.join(" "), ...g.partitions.map((p) => `  ${line(p, `partition=${p.partition}`, `owner=${p.owner ?? "-"}`)}`)];
}

/** JSON: one object per group (its sums), then one per partition consumer. */
function groupRecords(g: GroupReport): Record<string, unknown>[] {
  return [
    { group: g.group, stream: g.stream, members: g.members, partitions: g.partitionCount, ...g.total },
    ...g.partitions.map((p) => ({ group: g.group, ...p, owner: p.owner ?? null })),
  ];
}

export async function consumersCommand(argv: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const { values } = parse(() => parseArgs({ args: argv, options: { ...connectionFlags, json: { type: "boolean" }, monitor: { type: "string", multiple: true } }, strict: true, tokens: true }));
  if (values.help) {
    out(consumersHelp);
    return 0;
  }
  const bus = await connect(connectOptions(values));
  try {
    const report = await bus.consumers({ monitor: values.monitor });
    for (const w of report.durabilityWarnings) {
      if (values.json) out(jsonRecord({ warning: w.message, monitor: w.monitorUrl }));
      err(`warning: ${w.message}`);
    }
    for (const c of report.consumers) out(values.json ? jsonRecord({ ...c }) : line(c));
    for (const w of report.warnings) {
      if (values.json) out(jsonRecord({ warning: w.message, durable: w.durable, unacknowledged: w.unacknowledged, limits: w.limits }));
      err(`warning: ${w.message}`);
    }
    for (const g of report.groups) for (const l of values.json ? groupRecords(g).map(jsonRecord) : groupLines(g)) out(l);
    const journal = report.shards ? `${report.shards.length} shards (${report.shards.map((k) => `${k.stream} at ${k.lastSeq}`).join(", ")})` : `${report.stream}, journal at ${report.lastSeq}`;
    err(`${report.consumers.length} durable(s) on ${journal}${report.groups.length > 0 ? `; ${report.groups.length} group(s) on ${report.groups[0]!.stream}` : ""}`);
    return 0;
  } finally {
    await bus.close();
  }
}
