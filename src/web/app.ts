/// <reference lib="dom" />
/**
 * The gateway's web page: the sessions, and one session's tool activity live. Its state
 * is the SDK's own ToolActivityProjection, fed from the gateway's SSE stream: from
 * sequence 0 (the journal) on load, and after a lost connection from the last journal
 * sequence seen (EventSource sends it as Last-Event-ID), so nothing is lost or repeated.
 * Bundled for the browser by scripts/build-web.ts.
 */
import { unmarshalEvent, unmarshalPreview } from "../codec/codec.js";
import { ToolActivityProjection } from "../projection/tool-activity.js";
import type { ToolActivity } from "../projection/types.js";

const KIND_TYPES: Record<string, string> = { tool_call_started: "ToolCallStarted", tool_call_completed: "ToolCallCompleted" };

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

function setConnection(state: "connecting" | "live" | "reconnecting"): void {
  const el = $("connection");
  el.textContent = state;
  el.dataset.state = state;
}

function el(tag: string, attrs: Record<string, string>, ...children: (Node | string)[]): HTMLElement {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...children);
  return e;
}

async function answer(sessionId: string, gateId: string, body: unknown): Promise<void> {
  const r = await fetch(`/v1/sessions/${sessionId}/gates/${gateId}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  if (r.status !== 202) $("error").textContent = `gate answer: ${r.status} ${await r.text()}`;
}

function toolRow(sessionId: string, a: ToolActivity): HTMLElement {
  const name = a.toolName ?? a.request?.request.toolName ?? "tool";
  const row = el("li", { class: `tool ${a.status}`, "data-tool": a.toolExecutionId, "data-status": a.status }, el("b", {}, name), ` ${a.status.replace(/_/g, " ")}`);
  const summary = a.request?.request.summary ?? a.live?.started?.summary;
  if (summary) row.append(el("div", { class: "summary" }, summary));
  if (a.status === "awaiting_approval" && a.permissionGate && !a.permissionGate.resolution) {
    const gateId = a.permissionGate.id;
    for (const action of ["Approve", "Deny"]) {
      const b = el("button", { "data-action": action }, action);
      b.addEventListener("click", () => void answer(sessionId, gateId, { action }));
      row.append(b);
    }
  }
  if (a.status === "awaiting_input" && a.inputGate && !a.inputGate.resolution) {
    const gateId = a.inputGate.id;
    const input = el("input", { placeholder: a.input?.question ?? "answer" }) as HTMLInputElement;
    const b = el("button", { "data-action": "answer" }, "Send");
    b.addEventListener("click", () => void answer(sessionId, gateId, { values: { answer: input.value } }));
    row.append(el("div", { class: "question" }, a.input?.question ?? ""), input, b);
  }
  const preview = a.live?.completed?.resultPreview;
  if (preview) row.append(el("pre", { class: "preview" }, preview));
  return row;
}

function render(sessionId: string, tools: ToolActivityProjection): void {
  $("tools").replaceChildren(...tools.list().map((a) => toolRow(sessionId, a)));
  $("seq").textContent = String(tools.lastJournalSeq);
}

function watch(sessionId: string): void {
  const tools = new ToolActivityProjection();
  $("session").textContent = sessionId;
  setConnection("connecting");
  // A fresh EventSource starts from the journal's beginning; its own reconnects send Last-Event-ID.
  const source = new EventSource(`/v1/sessions/${sessionId}/events?last_event_id=0`);
  source.addEventListener("open", () => setConnection("live"));
  source.addEventListener("error", () => {
    // Previews missed while away are gone for good: fall back to what the journal says.
    tools.resetLive();
    render(sessionId, tools);
    setConnection("reconnecting");
  });
  source.addEventListener("enduring", (m) => {
    const e = m as MessageEvent<string>;
    const { event } = JSON.parse(e.data) as { event: unknown };
    tools.apply({ event: unmarshalEvent(JSON.stringify(event)), journalSeq: Number(e.lastEventId) });
    render(sessionId, tools);
  });
  source.addEventListener("ephemeral", (m) => {
    const f = JSON.parse((m as MessageEvent<string>).data) as { kind: string; header: object; delta?: object };
    const type = KIND_TYPES[f.kind];
    if (type === undefined) return;
    tools.apply({ event: unmarshalPreview(JSON.stringify({ ...f.header, ...f.delta, type, v: 1 })), journalSeq: 0 });
    render(sessionId, tools);
  });
}

async function listSessions(): Promise<void> {
  const r = await fetch("/v1/sessions?limit=100");
  const { sessions } = (await r.json()) as { sessions: { session_id: string; state?: string; last_active_at?: string }[] };
  $("sessions").replaceChildren(
    ...sessions.map((s) => el("li", {}, el("a", { href: `#${s.session_id}` }, s.session_id), ` ${s.state ?? ""} ${s.last_active_at ?? ""}`)),
  );
}

window.addEventListener("hashchange", () => location.reload());
const sid = location.hash.slice(1);
if (sid) watch(sid);
void listSessions();
