import { parseArgs } from "node:util";
import { connect } from "../bus.js";
import { openSessionCatalog } from "../catalog/catalog.js";
import { UsageError } from "../errors.js";
import { connectionFlags, connectionHelp, connectOptions, parse, positiveInt } from "./args.js";
import { jsonRecord } from "./format.js";

export const sessionsHelp = `jetloop sessions [--skip N] [--limit N] [--json]

Lists the namespace's sessions from the session catalog (one entry per session,
src/catalog/README.md), in the Go runtime's order: last activity first, then
session id. The catalog is first brought up to the journal's end (only what was
stored since its last update is read), so every session the journal holds now is
listed. One line per session: id, state, last activity, created, title. A
session whose entry could not be its fold shows its mark in place of the state
(poisoned:too_large, poisoned:fold_failed, poisoned:unreadable; see
\`jetloop catalog rebuild\`).

  --skip N      sessions passed over (default 0)
  --limit N     sessions listed at most, 1 to 1000 (default 100)
  --json        one JSON object per session (the gateway's list fields)

${connectionHelp}`;

export const catalogHelp = `jetloop catalog rebuild

Rebuilds the session catalog from the journal: every session's entry folded
again from journal sequence 1, whatever the entries held (corrupt, forged,
stale or marked), and the entries of sessions the journal does not hold
removed. Safe while gateways and other updaters run (every write is
compare-and-set). Prints what it read and wrote. Exits 1, naming each session
on stderr, when an entry could not be written as its fold: marked instead
(too large, a fold that failed, unreadable; listed marked) or not written at all.

${connectionHelp}`;

/** A whole number of 0 or more (a skip), decimal digits only. */
function count(name: string, value: string | undefined): number | undefined {
  if (value === "0") return 0;
  return positiveInt(name, value);
}

export async function sessionsCommand(argv: string[], out: (s: string) => void): Promise<number> {
  const { values } = parse(() => parseArgs({ args: argv, options: { ...connectionFlags, skip: { type: "string" }, limit: { type: "string" }, json: { type: "boolean" } }, strict: true, tokens: true }));
  if (values.help) {
    out(sessionsHelp);
    return 0;
  }
  const skip = count("skip", values.skip) ?? 0;
  const limit = positiveInt("limit", values.limit) ?? 100;
  if (limit > 1000) throw new UsageError("--limit must be at most 1000");
  const bus = await connect(connectOptions(values));
  try {
    const catalog = await openSessionCatalog(bus);
    try {
      const page = await catalog.list({ skip, limit });
      for (const s of page.sessions) {
        if (values.json) {
          out(jsonRecord({ sessionId: s.sessionId, ...(s.state ? { state: s.state } : {}), ...(s.title ? { title: s.title } : {}), ...(s.createdAt ? { createdAt: s.createdAt } : {}), ...(s.lastActiveAt ? { lastActiveAt: s.lastActiveAt } : {}), ...(s.poisoned ? { poisoned: { reason: s.poisoned.reason, journal_seq: s.poisoned.journalSeq } } : {}) }));
        } else {
          const state = s.poisoned ? `poisoned:${s.poisoned.reason}` : (s.state ?? "-");
          out([s.sessionId, state.padEnd(15), s.lastActiveAt ?? "-", s.createdAt ?? "-", JSON.stringify(s.title)].join(" "));
        }
      }
      return 0;
    } finally {
      await catalog.close();
    }
  } finally {
    await bus.close();
  }
}

export async function catalogCommand(argv: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === "--help" || sub === "-h") {
    out(catalogHelp);
    return 0;
  }
  if (sub !== "rebuild") throw new UsageError(sub === undefined ? "a subcommand is required: rebuild" : `unknown subcommand ${JSON.stringify(sub)}: rebuild`);
  const { values } = parse(() => parseArgs({ args: rest, options: { ...connectionFlags }, strict: true, tokens: true }));
  if (values.help) {
    out(catalogHelp);
    return 0;
  }
  const bus = await connect(connectOptions(values));
  try {
    const catalog = await openSessionCatalog(bus);
    try {
      const r = await catalog.rebuild();
      out(`catalog ${catalog.bucket} rebuilt: ${r.read} journal record(s) read, ${r.written} entr${r.written === 1 ? "y" : "ies"} written, ${r.removed} removed, ${r.poisoned.length} marked, ${r.unwritten.length} not written`);
      // Every session the rebuild could not write as its fold, by id: an operator's next step is that session, not the namespace.
      for (const p of r.poisoned) err(`jetloop catalog: CATALOG_ENTRY_POISONED: session ${p.sessionId}: its entry is marked ${p.poisoned.reason} at journal sequence ${p.poisoned.journalSeq} (listed marked; the other sessions are current)`);
      for (const sid of r.unwritten) err(`jetloop catalog: CATALOG_FAILED: session ${sid}: its entry could not be written (see the log; run the rebuild again)`);
      return r.poisoned.length + r.unwritten.length === 0 ? 0 : 1;
    } finally {
      await catalog.close();
    }
  } finally {
    await bus.close();
  }
}
