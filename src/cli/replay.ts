import { connect } from "../bus.js";
import { UsageError } from "../errors.js";
import { defaultRegistry } from "../events/catalogue.js";
import { checkReplayFilter } from "../subscribe/replay.js";
import { parseArgs } from "node:util";
import { formatJson, formatLine } from "./format.js";
import { connectionFlags, connectionHelp, connectOptions, ids, list, parse, seqRange } from "./args.js";

export const replayHelp = `jetloop replay --session ID [--loop ID …] [--from-seq N] [--to-seq N] [--json]

Prints a bounded range of one session's journal, in order, each event with its
journal sequence, then exits. Malformed messages in the range are reported on
stderr, never printed as events.

  --session ID     the session (required)
  --loop ID        only these loops (session-scoped events always pass)
  --type T         only these event types (journal events: previews are never stored)
  --from-seq N     first journal sequence (default 1)
  --to-seq N       last journal sequence (default: the journal's end now)
  --json           one line per event: {"journal_seq":N,"subject":…,"event":<the Go
                   wire bytes>} ({"live":true,…} for a preview)

${connectionHelp}`;

export async function replayCommand(argv: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const { values } = parse(() => parseArgs({ args: argv, options: { ...connectionFlags,
    session: { type: "string" },
    loop: { type: "string", multiple: true },
    type: { type: "string", multiple: true },
    "from-seq": { type: "string" },
    "to-seq": { type: "string" },
    json: { type: "boolean" },
  }, strict: true, tokens: true }));
  if (values.help) {
    out(replayHelp);
    return 0;
  }
  if (!values.session) throw new UsageError("--session is required");
  const [session] = ids("session", [values.session])!;
  const loops = ids("loop", list(values.loop));
  const { fromSeq, toSeq } = seqRange(values);
  // A preview type (never stored) is refused before connecting.
  const filter = checkReplayFilter(defaultRegistry, { enduring: loops ? { loops } : "all", types: list(values.type) });
  const bus = await connect(connectOptions(values));
  let printed = 0;
  let skipped = 0;
  try {
    const deliveries = bus.session(session!).replay(filter, {
      fromSeq,
      toSeq,
      onReport: (r) => {
        if (r.kind !== "poison") return;
        skipped++;
        err(`#${r.journalSeq} ${r.subject}: skipped malformed message (${r.error.code}: ${r.error.message})`);
      },
    });
    for await (const d of deliveries) {
      out(values.json ? formatJson(d) : formatLine(d));
      printed++;
    }
    err(`${printed} event(s)${skipped ? `, ${skipped} malformed message(s) skipped` : ""}`);
    return 0;
  } finally {
    await bus.close();
  }
}
