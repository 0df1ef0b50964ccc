/**
 * One line per delivery for people, one JSON object per line for programs. Lines show
 * summaries only — tool names, effects, previews — never a request's requirements.
 */
import { encodeEvent } from "../codec/codec.js";
import type { JetloopEvent } from "../events/catalogue.js";
import type { Delivery } from "../sources/delivery.js";

const short = (id: string | undefined) => (id ? id.slice(-8) : "_");

function detail(e: JetloopEvent): string {
  switch (e.type) {
    case "PermissionRequested":
      return `tool=${short(e.toolExecutionId)} ${e.request.toolName}${e.request.summary ? `: ${e.request.summary}` : ""}`;
    case "PermissionDecided":
      return `tool=${short(e.toolExecutionId)} ${e.effect}${e.reason ? ` (${e.reason})` : ""}`;
    case "UserInputRequested":
      return `tool=${short(e.toolExecutionId)} ${e.question ?? ""}${e.choices ? ` [${e.choices.join("|")}]` : ""}`;
    case "ToolCallStarted":
      return `tool=${short(e.toolExecutionId)} ${e.toolName ?? ""}${e.summary ? `: ${e.summary}` : ""}`;
    case "ToolCallCompleted":
      return `tool=${short(e.toolExecutionId)} ${e.isError ? "error" : "ok"}${e.resultPreview ? `: ${e.resultPreview}` : ""}`;
    case "GateOpened":
      return `gate=${e.gate?.id ? short(e.gate.id) : "?"} ${e.gate?.kind ?? ""}`;
    case "GateResolved":
      return `gate=${e.gateId ? short(e.gateId) : "?"} ${e.reason ?? ""}${e.action ? ` ${e.action}` : ""}`;
    case "StepDone": {
      // The model's calls and the tool results, by the provider's ids (toolu_…).
      const calls = e.messages[0]?.blocks?.filter((b) => b.type === "tool_use").length ?? 0;
      const results = e.messages.slice(1);
      const errors = results.filter((m) => m.role === "tool" && m.isError).length;
      return `${calls} tool call(s), ${results.length} result(s)${errors ? `, ${errors} error(s)` : ""}`;
    }
    case "TurnFailed":
      return `turn ${e.turnIndex ?? 0}: ${e.err.kind}`;
    case "TurnStarted":
    case "TurnDone":
    case "TurnInterrupted":
      return e.turnIndex === undefined ? "" : `turn ${e.turnIndex}`;
    default:
      return "";
  }
}

/**
 * A time in one width for columns: UTC, milliseconds, `2026-12-01T11:00:00.120Z` (the
 * runtime stamps local offsets and up to nine fraction digits). Unreadable: as given.
 */
export function fixedTime(t: string | Date | undefined): string {
  if (t === undefined) return "-".padEnd(24);
  const ms = t instanceof Date ? t.getTime() : Date.parse(t);
  // Years past 9999 (or before 0) have no 24-character form: shown as given.
  const iso = Number.isNaN(ms) ? "" : new Date(ms).toISOString();
  return iso.length === 24 ? iso : String(t instanceof Date ? iso : t).padEnd(24);
}

export function formatLine(d: Delivery<JetloopEvent>): string {
  const e = d.event;
  const seq = d.journalSeq > 0 ? `#${d.journalSeq}`.padEnd(7) : "live".padEnd(7);
  return `${seq} ${fixedTime(e.createdAt)} ${e.type.padEnd(19)} s=${short(e.sessionId)} l=${short(e.loopId)} ${detail(e)}`.trimEnd();
}

const utf8 = new TextDecoder();

/**
 * One delivery for programs: the event in the Go wire form (the journal's bytes: Go's
 * MarshalEvent output, which jetloop reads and writes back byte for byte) beside its
 * journal sequence; a preview, never stored, has `"live":true` instead.
 */
export function formatJson(d: Delivery<JetloopEvent>): string {
  const where = d.journalSeq > 0 ? `"journal_seq":${d.journalSeq}` : `"live":true`;
  return `{${where},"subject":${JSON.stringify(d.subject)},"event":${utf8.decode(encodeEvent(d.event))}}`;
}

/** camelCase → snake_case, the Go wire's key style. */
const snake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** A record of the CLI's own (parked entries, consumers) as one JSON line: Go-style keys, fixed-width times. */
export function jsonRecord(record: Record<string, unknown>): string {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(record)) out[snake(k)] = v instanceof Date ? fixedTime(v) : v;
  return JSON.stringify(out);
}
