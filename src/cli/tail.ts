import { connect } from "../bus.js";
import { parseArgs } from "node:util";
import { formatJson, formatLine } from "./format.js";
import { connectionFlags, connectionHelp, connectOptions, ids, list, parse, positiveInt } from "./args.js";

export const tailHelp = `jetloop tail [--session ID …] [--loop ID …] [--type T …] [--from-seq N] [--no-live] [--json]

Follows events as they happen: journal events with their sequence, previews
marked "live". Runs until interrupted (Ctrl-C).

  --session ID     only these sessions (repeat or comma-separate; default all)
  --loop ID        only these loops (session-scoped events always pass)
  --type T         only these event types
  --family F       only these families (tool, gate, step, turn, loop, session)
  --from-seq N     start at journal sequence N (default: new events only; on a
                   namespace split in shards, a sequence of the sessions' shard)
  --all            start at the beginning of the journal
  --no-live        journal events only, no previews
  --json           one line per event: {"journal_seq":N,"subject":…,"event":<the Go
                   wire bytes>} ({"live":true,…} for a preview)
  --count N        stop after N deliveries

${connectionHelp}`;

export async function tailCommand(argv: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const { values } = parse(() => parseArgs({ args: argv, options: { ...connectionFlags,
    session: { type: "string", multiple: true },
    loop: { type: "string", multiple: true },
    type: { type: "string", multiple: true },
    family: { type: "string", multiple: true },
    "from-seq": { type: "string" },
    all: { type: "boolean" },
    "no-live": { type: "boolean" },
    json: { type: "boolean" },
    count: { type: "string" },
  }, strict: true, tokens: true }));
  if (values.help) {
    out(tailHelp);
    return 0;
  }
  const fromSeq = positiveInt("from-seq", values["from-seq"]);
  const count = positiveInt("count", values.count);
  const loops = ids("loop", list(values.loop));
  const sessions = ids("session", list(values.session));
  const scope = loops ? { loops } : ("all" as const);
  const bus = await connect(connectOptions(values));
  try {
    // The stream the sequences are of: the sessions' shard's (a namespace split in shards
    // numbers each shard apart); where the sessions span shards there is no one end to compare.
    const streams = [...new Set(sessions ? sessions.map((sid) => bus.journalOf(sid).stream) : bus.journals().map((j) => j.stream))];
    // A stream that cannot be read here is left for the subscription to report.
    const last = fromSeq === undefined || streams.length !== 1 ? undefined : await bus.jetstreamManager().then((jsm) => jsm.streams.info(streams[0]!)).then((i) => i.state.last_seq, () => undefined);
    if (fromSeq !== undefined && last !== undefined && fromSeq > last + 1) {
      err(`note: --from-seq ${fromSeq} is past the journal's end (last sequence ${last}); waiting until the journal reaches it`);
    }
    const sub = await bus.subscribeEvents(
      { enduring: scope, ephemeral: values["no-live"] ? undefined : scope, sessions, types: list(values.type), families: list(values.family) },
      {
        start: fromSeq ? { seq: fromSeq } : values.all ? "all" : "new",
        onReport: (r) => {
          if (r.kind === "poison") err(`#${r.journalSeq} ${r.subject}: skipped malformed message (${r.error.code}: ${r.error.message})`);
        },
      },
    );
    const stop = () => void sub.close();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    err(`following ${streams.join(", ")} on nats-server ${bus.serverVersion}…`);
    let n = 0;
    try {
      // A failure (permission denied, the connection closed) rejects the loop: main prints its code, exit 1.
      for await (const d of sub) {
        out(values.json ? formatJson(d) : formatLine(d));
        if (count !== undefined && ++n >= count) break;
      }
    } finally {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
    }
    return 0;
  } finally {
    await bus.close();
  }
}
