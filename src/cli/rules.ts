import { parseArgs } from "node:util";
import { UsageError } from "../errors.js";
import { connect } from "../bus.js";
import type { WorkspaceRule } from "../commands/workspace-rules.js";
import { connectionFlags, connectionHelp, connectOptions, parse } from "./args.js";
import { fixedTime, jsonRecord } from "./format.js";

export const rulesHelp = `jetloop rules list [--json]
jetloop rules remove ID [--json]

The namespace's workspace rules: what an answer "Approve always for this workspace"
persisted (the candidates its permission gate displayed). A later permission request
whose every requirement a rule covers (kind and match exactly equal) is approved
without a gate. list prints each rule: its id, kind, match, description, when it was
approved, and the session, loop and gate whose answer wrote it. remove deletes one by
its id (from list); a request it covered is asked again.

  --json   one JSON object per line (Go-style snake_case keys)

${connectionHelp}`;

function line(r: WorkspaceRule): string {
  return `${r.id} ${fixedTime(r.approvedAt)} ${r.kind} ${JSON.stringify(r.match)}${r.description ? ` (${r.description})` : ""} session=${r.sessionId} loop=${r.loopId} gate=${r.gateId}`;
}

export async function rulesCommand(argv: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const [action, ...rest] = argv;
  const { values, positionals } = parse(() => parseArgs({ args: rest, options: { ...connectionFlags, json: { type: "boolean" } }, allowPositionals: true, strict: true, tokens: true }));
  if (values.help || action === "--help" || action === "-h") {
    out(rulesHelp);
    return 0;
  }
  if (action !== "list" && action !== "remove") throw new UsageError(`rules needs list or remove, not ${JSON.stringify(action)}`);
  if (action === "list" && positionals.length > 0) throw new UsageError("rules list takes no arguments");
  if (action === "remove" && (positionals.length !== 1 || !/^[0-9a-f]{64}$/.test(positionals[0]!))) throw new UsageError("rules remove needs exactly one rule id, 64 hex digits (from jetloop rules list)");
  const bus = await connect(connectOptions(values));
  try {
    if (action === "list") {
      const { rules, more } = await bus.rules.list();
      for (const r of rules) out(values.json ? jsonRecord({ ...r }) : line(r));
      err(`${rules.length} rules${more ? " (more not listed)" : ""} in ${bus.rules.bucket}`);
      return 0;
    }
    const id = positionals[0]!;
    const removed = await bus.rules.remove(id);
    if (values.json) out(jsonRecord({ id, removed }));
    if (!removed) {
      err(`no rule ${id} in ${bus.rules.bucket}`);
      return 1;
    }
    err(`removed ${id}`);
    return 0;
  } finally {
    await bus.close();
  }
}
