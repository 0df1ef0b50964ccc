import { parseArgs } from "node:util";
import { UsageError } from "../errors.js";
import { connect } from "../bus.js";
import type { ParkedEntry } from "../parking/parked-entry.js";
import type { ParkedOwner, ParkedSelection } from "../parking/parked-store.js";
import { connectionFlags, connectionHelp, connectOptions, parse, positiveInt } from "./args.js";
import { fixedTime, jsonRecord } from "./format.js";
import { MAX_SHARDS } from "../streams/shards.js";

export const parkedHelp = `jetloop parked list [--durable NAME | --group NAME] [--json]
jetloop parked show (--durable NAME | --group NAME) --seq N [--shard K] [--json]
jetloop parked drop (--durable NAME | --group NAME) (--seq N [--shard K] | --all) [--json]
jetloop parked replay (--durable NAME | --group NAME) (--seq N [--shard K] | --all) [--json]

Durable deliveries kept after their last attempt, a handler's term with a reason, or
a decode failure (poison). Each prints what was kept of an entry: journal sequence,
durable, why, the last error, deliveries, when; only show prints the payload (as
text; base64 where it is not UTF-8), since it may hold tool arguments. replay
sends held entries back to that durable's handlers, in journal order; each leaves the
store once a handler acknowledges it (poison is parked again). drop deletes entries.
A partitioned group's entries are parked under their partition's durable
({group}_p{n}, shown with group=NAME/n); --group selects them all, each sent back to
its own partition, where it is handled one at a time with the partition's events.
On a namespace whose journal is split in shards, a journal sequence is its shard's:
entries show shard=K/S, and a --seq that has entries in several shards (a group's)
needs --shard K; each entry goes back to the durable on its own shard.

  --durable NAME   the durable consumer (list: all durables when omitted)
  --group NAME     a partitioned group: the entries of all its partitions
  --seq N          one entry, by journal sequence
  --shard K        with --seq: the journal shard (0..S-1) the sequence is of
  --all            every held entry of the durable
  --json           one JSON object per line (Go-style snake_case keys)

${connectionHelp}`;

/**
 * What list, drop and replay show of an entry: everything but the payload, which may hold
 * what must not leak (tool arguments). `show` adds the payload, as text.
 */
function view(e: ParkedEntry): Record<string, unknown> {
  return {
    durable: e.durable,
    ...(e.group ? { group: e.group.name, partition: e.group.partition } : {}),
    ...(e.shard.count > 1 ? { shard: e.shard.index, shards: e.shard.count } : {}),
    journalSeq: e.journalSeq,
    subject: e.subject,
    state: e.state,
    reason: e.reason,
    errorCode: e.errorCode,
    errorMessage: e.errorMessage,
    deliveryCount: e.deliveryCount,
    parkedAt: e.parkedAt,
    bytes: e.data.length,
  };
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** The payload as text; bytes that are not UTF-8 (a poison message may be anything) as base64. */
function payload(e: ParkedEntry): { payload: string } | { payloadBase64: string } {
  try {
    return { payload: strictUtf8.decode(e.data) };
  } catch {
    return { payloadBase64: Buffer.from(e.data).toString("base64") };
  }
}

function line(e: ParkedEntry): string {
  return `#${e.journalSeq}${e.shard.count > 1 ? ` shard=${e.shard.index}/${e.shard.count}` : ""} ${e.durable}${e.group ? ` group=${e.group.name}/${e.group.partition}` : ""} ${e.state} ${e.reason} ${e.errorCode} deliveries=${e.deliveryCount} ${fixedTime(e.parkedAt)} ${e.subject} (${e.data.length} bytes): ${e.errorMessage}`;
}

/** A shard index: a decimal 0..MAX_SHARDS-1 (the namespace's count is checked by the store: no entry has another). */
function shardIndex(text: string): number {
  const n = Number(text);
  if (!/^(0|[1-9]\d*)$/.test(text) || n >= MAX_SHARDS) throw new UsageError(`--shard must be a shard index from 0 to ${MAX_SHARDS - 1}, not ${JSON.stringify(text)}`);
  return n;
}

export async function parkedCommand(argv: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const [action, ...rest] = argv;
  const { values } = parse(() =>
    parseArgs({ args: rest, options: { ...connectionFlags, durable: { type: "string" }, group: { type: "string" }, seq: { type: "string" }, shard: { type: "string" }, all: { type: "boolean" }, json: { type: "boolean" } }, strict: true, tokens: true }),
  );
  if (values.help || action === "--help" || action === "-h") {
    out(parkedHelp);
    return 0;
  }
  if (action !== "list" && action !== "show" && action !== "drop" && action !== "replay") throw new UsageError(`parked needs list, show, drop or replay, not ${JSON.stringify(action)}`);
  const seq = positiveInt("seq", values.seq);
  const shard = values.shard === undefined ? undefined : shardIndex(values.shard);
  if (shard !== undefined && seq === undefined) throw new UsageError("--shard goes with --seq");
  if (values.durable !== undefined && values.group !== undefined) throw new UsageError(`parked ${action} takes one of --durable and --group`);
  if (action !== "list" && values.durable === undefined && values.group === undefined) throw new UsageError(`parked ${action} needs --durable or --group`);
  // list takes no selection: one given would be read as every entry.
  if (action === "list" && (seq !== undefined || values.all)) throw new UsageError("parked list lists every entry: it takes no --seq, --shard or --all (show, drop and replay take them)");
  if (action === "show" && (seq === undefined || values.all)) throw new UsageError("parked show shows one entry: it needs --seq and takes no --all");
  if ((action === "drop" || action === "replay") && (seq === undefined) === !values.all) throw new UsageError(`parked ${action} needs exactly one of --seq and --all`);
  const print = (entries: readonly ParkedEntry[], withPayload = false) => {
    for (const e of entries) {
      const shown = withPayload ? payload(e) : undefined;
      if (values.json) out(jsonRecord({ ...view(e), ...shown }));
      else out(shown ? `${line(e)}\n${"payload" in shown ? shown.payload : `(base64) ${shown.payloadBase64}`}` : line(e));
    }
  };
  const bus = await connect(connectOptions(values));
  try {
    const owner: ParkedOwner | undefined = values.group !== undefined ? { group: values.group } : values.durable;
    const whose = values.group !== undefined ? `group ${values.group}` : `durable ${values.durable}`;
    const selection: ParkedSelection = seq === undefined ? "all" : { seq, shard };
    switch (action) {
      case "list": {
        const entries = await bus.parked.list(owner);
        print(entries);
        err(`${entries.length} parked`);
        return 0;
      }
      case "show": {
        const e = await bus.parked.show(owner!, seq!, shard);
        if (!e) {
          err(`${whose} has nothing parked at journal sequence ${seq}${shard === undefined ? "" : ` of shard ${shard}`}`);
          return 1;
        }
        print([e], true);
        return 0;
      }
      case "drop": {
        const dropped = await bus.parked.drop(owner!, selection);
        print(dropped);
        err(`${dropped.length} dropped`);
        return 0;
      }
      case "replay": {
        const sent = await bus.parked.replay(owner!, selection);
        print(sent);
        err(`${sent.length} sent back to ${whose}`);
        return 0;
      }
    }
  } finally {
    await bus.close();
  }
}
