/// <reference lib="dom" />
/**
 * One tool call as a card: name, status and time, its summary, the open gate with the
 * gate's own controls (every control its GateOpened lists, posted as `{"action": …}`), a
 * question with its choices or a free-text answer, how the gate was resolved, the
 * preview the page saw (kept after the call is finalized) and the recorded result.
 */
import type { GateFact, ToolActivity } from "../projection/types.js";
import { el } from "./dom.js";
import { clock, words } from "./format.js";
import type { KeptPreview } from "./session-model.js";

/** Where an answer to a gate stands on this page. */
export type AnswerState = { readonly state: "sending" | "sent"; readonly action: string } | { readonly state: "failed"; readonly action: string; readonly why: string };

export interface GateBody {
  readonly action?: string;
  readonly values?: Record<string, string>;
}

export type Answer = (gateId: string, label: string, body: GateBody) => void;

const DENY = /^deny/i;

function answerNote(s: AnswerState | undefined): HTMLElement | undefined {
  if (s === undefined) return undefined;
  if (s.state === "failed") return el("p", { class: "answer-error", role: "alert" }, `${s.action} failed: ${s.why}`);
  return el("p", { class: "answer-note" }, s.state === "sending" ? `Sending ${s.action}…` : `${s.action} sent; waiting for the loop to record it.`);
}

function controlButton(label: string, action: string, busy: boolean, onClick: () => void): HTMLElement {
  const b = el("button", { type: "button", class: DENY.test(action) ? "deny" : "approve", "data-action": action }, label);
  (b as HTMLButtonElement).disabled = busy;
  b.addEventListener("click", onClick);
  return b;
}

function approvalCard(a: ToolActivity, gate: GateFact, state: AnswerState | undefined, answer: Answer, summary: string | undefined): HTMLElement {
  const p = gate.prompt;
  // The runtime titles a gate with the request's summary, already on the card.
  const title = p?.title && p.title !== summary ? p.title : "Permission needed";
  const busy = state?.state === "sending" || state?.state === "sent";
  const controls = (p?.controls ?? []).flatMap((c) => (c.action ? [{ action: c.action, label: c.label || c.action }] : []));
  const reqs = a.request?.request.requirements?.map((r) => r.description).filter((d): d is string => !!d) ?? [];
  return el(
    "div",
    { class: "gate approval", "data-gate": gate.id },
    el("p", { class: "gate-title" }, title),
    p?.body ? el("p", { class: "gate-body" }, p.body) : undefined,
    reqs.length > 0 ? el("ul", { class: "requirements" }, ...reqs.map((r) => el("li", {}, r))) : undefined,
    controls.length > 0
      ? el("div", { class: "controls" }, ...controls.map((c) => controlButton(c.label, c.action, busy, () => answer(gate.id, c.label, { action: c.action }))))
      : el("p", { class: "muted" }, "This gate lists no controls, so it cannot be answered here."),
    answerNote(state),
  );
}

function questionCard(a: ToolActivity, gate: GateFact, state: AnswerState | undefined, answer: Answer, draft: Map<string, string>): HTMLElement {
  const p = gate.prompt;
  const busy = state?.state === "sending" || state?.state === "sent";
  const question = a.input?.question || p?.body || p?.title || "The tool asks for an answer.";
  const card = el("div", { class: "gate question", "data-gate": gate.id }, el("p", { class: "gate-title" }, question));
  if (gate.kind && gate.kind !== "harness.ask_user") {
    card.append(el("p", { class: "muted" }, `A ${gate.kind} gate: the gateway answers permission and ask-user gates only.`));
    return card;
  }
  const choices = a.input?.choices?.length ? a.input.choices : (p?.controls ?? []).flatMap((c) => (c.action ? [c.action] : []));
  if (choices.length > 0) {
    card.append(el("div", { class: "controls" }, ...choices.map((c) => controlButton(c, c, busy, () => answer(gate.id, c, { action: c, values: { answer: c } })))));
  } else {
    const input = el("input", { type: "text", name: "answer", "aria-label": "Your answer", autocomplete: "off" }) as HTMLInputElement;
    input.value = draft.get(gate.id) ?? "";
    input.disabled = busy;
    input.addEventListener("input", () => draft.set(gate.id, input.value));
    const send = el("button", { type: "submit", class: "approve", "data-action": "send" }, "Send") as HTMLButtonElement;
    send.disabled = busy;
    const form = el("form", { class: "answer-form" }, input, send);
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const text = input.value.trim();
      if (text !== "") answer(gate.id, "Answer", { values: { answer: text } });
    });
    card.append(form);
  }
  const note = answerNote(state);
  if (note) card.append(note);
  return card;
}

function resolutionLine(what: string, gate: GateFact | undefined): HTMLElement | undefined {
  const r = gate?.resolution;
  if (r === undefined) return undefined;
  const how = [r.action, r.reason ? words(r.reason) : undefined].filter(Boolean).join(", ");
  return el("p", { class: "resolution" }, `${what}: ${how || "resolved"}`, r.at ? ` at ${clock(r.at)}` : "");
}

function resultText(a: ToolActivity): string | undefined {
  const blocks = a.result?.message?.blocks ?? [];
  const text = blocks.flatMap((b) => (b.type === "text" && typeof (b as { text?: unknown }).text === "string" ? [(b as { text: string }).text] : [])).join("\n");
  return text === "" ? undefined : text;
}

export function toolCard(a: ToolActivity, preview: KeptPreview | undefined, answers: ReadonlyMap<string, AnswerState>, answer: Answer, draft: Map<string, string>): HTMLElement {
  const name = a.toolName ?? a.request?.request.toolName ?? (a.input || a.inputGate ? "question" : "tool");
  const at = a.request?.at ?? a.permissionGate?.at ?? a.input?.at ?? a.inputGate?.at ?? a.result?.at;
  const card = el(
    "li",
    { class: `tool s-${a.status}`, "data-tool": a.toolExecutionId, "data-loop": a.loopId, "data-status": a.status },
    el("div", { class: "tool-head" }, el("span", { class: "tool-name" }, name), el("span", { class: `pill s-${a.status}` }, words(a.status)), at ? el("time", { datetime: at }, clock(at)) : undefined),
  );
  const summary = a.request?.request.summary ?? preview?.summary;
  if (summary) card.append(el("p", { class: "summary" }, summary));
  // An answered question keeps its text beside the answer.
  else if (a.input?.question && a.status !== "awaiting_input") card.append(el("p", { class: "summary" }, a.input.question));
  const pg = a.permissionGate;
  if (a.status === "awaiting_approval") {
    card.append(pg && !pg.resolution ? approvalCard(a, pg, answers.get(pg.id), answer, summary) : el("p", { class: "muted" }, "Permission requested; waiting for its gate to open."));
  }
  const ig = a.inputGate;
  if (a.status === "awaiting_input") {
    card.append(ig && !ig.resolution ? questionCard(a, ig, answers.get(ig.id), answer, draft) : el("p", { class: "gate-title" }, a.input?.question ?? "Waiting for an answer."));
  }
  for (const line of [resolutionLine("Permission", pg), resolutionLine("Answer", ig)]) if (line) card.append(line);
  if (a.decision?.reason) card.append(el("p", { class: "resolution" }, `Decision: ${a.decision.effect ?? "recorded"}, ${a.decision.reason}`));
  const text = preview?.resultPreview ?? resultText(a);
  if (text !== undefined) card.append(el("pre", { class: `preview${preview?.isError || a.result?.isError ? " error" : ""}` }, text));
  if (a.result) card.append(el("p", { class: "muted" }, `Result recorded${a.result.at ? ` at ${clock(a.result.at)}` : ""}.`));
  else if (a.endedWithoutResult) card.append(el("p", { class: "muted" }, "The turn ended; the tool never produced a result."));
  return card;
}
