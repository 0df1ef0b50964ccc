/**
 * One line per delivery for people, one JSON object per line for programs. Lines show
 * summaries only — tool names, effects, previews — never a request's requirements.
 */
import type { JetloopEvent } from "../events/catalogue.js";
import type { Delivery } from "../subscribe/delivery.js";

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

export function formatLine(d: Delivery<JetloopEvent>): string {
  const e = d.event;
  const seq = d.journalSeq > 0 ? `#${d.journalSeq}`.padEnd(7) : "live".padEnd(7);
  return `${seq} ${(e.createdAt ?? "-").padEnd(24)} ${e.type.padEnd(19)} s=${short(e.sessionId)} l=${short(e.loopId)} ${detail(e)}`.trimEnd();
}

export function formatJson(d: Delivery<JetloopEvent>): string {
  return JSON.stringify({ journalSeq: d.journalSeq, subject: d.subject, event: d.event });
}
