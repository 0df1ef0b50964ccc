/// <reference lib="dom" />
/**
 * The gateway's web page: the namespace's sessions (polled from `GET /v1/sessions` every
 * 2 s, with backoff while it fails) and one session followed live over SSE into a
 * SessionModel (the SDK's ToolActivityProjection plus loops and turns). The badge says
 * truthfully how both links stand; failures are written out in words. Bundled for the
 * browser by scripts/build-web.ts.
 */
import { describeFailure, getJson, isNotProvisioned, postJson, type ApiFailure } from "./api.js";
import { el, syncChildren } from "./dom.js";
import { ago, clock, duration, shortId, words } from "./format.js";
import { BADGE_TEXT, backoffMs, overall, type LinkState } from "./link.js";
import { SessionModel, type TurnView } from "./session-model.js";
import { SessionStream } from "./stream.js";
import { toolCard, type AnswerState, type GateBody } from "./tool-card.js";

const POLL_MS = 2000;

interface SessionItem {
  readonly session_id: string;
  readonly state?: string;
  readonly created_at?: string;
  readonly last_active_at?: string;
}

const $ = (id: string) => document.getElementById(id)!;

const page = {
  list: "connecting" as LinkState,
  listWhy: undefined as string | undefined,
  /** The code of the last failed list: `nats_unavailable` is the gateway saying NATS is down. */
  listCode: undefined as string | undefined,
  listAttempt: 0,
  sessions: undefined as SessionItem[] | undefined,
  stream: undefined as LinkState | undefined,
  streamWhy: undefined as string | undefined,
  refused: undefined as string | undefined,
  follow: undefined as { readonly id: string; readonly model: SessionModel; readonly stream: SessionStream } | undefined,
  answers: new Map<string, AnswerState>(),
  drafts: new Map<string, string>(),
  cards: new Map<string, { readonly sig: readonly unknown[]; readonly node: HTMLElement }>(),
};

function renderBadge(): void {
  const state = page.refused ? "disconnected" : overall(page.list, page.stream);
  const badge = $("connection");
  badge.dataset.state = state;
  badge.textContent = BADGE_TEXT[state];
  const why = page.refused ?? (page.list !== "live" && page.list !== "connecting" ? page.listWhy : undefined) ?? (page.stream !== "live" ? page.streamWhy : undefined);
  const banner = $("banner");
  banner.hidden = why === undefined;
  banner.textContent = why ?? "";
}

function renderList(): void {
  const list = $("sessions");
  const now = Date.now();
  const items = (page.sessions ?? []).map((s) =>
    el(
      "li",
      {},
      el(
        "a",
        { href: `#${s.session_id}`, class: `session${page.follow?.id === s.session_id ? " selected" : ""}`, "data-session": s.session_id, "data-state": s.state ?? "unknown" },
        el("span", { class: "sid", title: s.session_id }, shortId(s.session_id)),
        el("span", { class: `pill s-${s.state ?? "unknown"}` }, words(s.state ?? "unknown")),
        el("time", { class: "when", datetime: s.last_active_at, title: s.last_active_at ? new Date(s.last_active_at).toLocaleString() : undefined }, ago(s.last_active_at, now)),
      ),
    ),
  );
  syncChildren(list, items);
  const empty = $("sessions-empty");
  empty.hidden = page.sessions === undefined || page.sessions.length > 0;
  const pending = $("sessions-pending");
  pending.hidden = page.sessions !== undefined;
  pending.textContent = page.list === "connecting" ? "Loading sessions…" : "The session list is unavailable until the gateway can read the journal.";
  const count = $("session-count");
  count.textContent = page.sessions === undefined ? "" : String(page.sessions.length);
}

function card(model: SessionModel, a: Parameters<typeof toolCard>[0]): HTMLElement {
  const gates = [a.permissionGate?.id, a.inputGate?.id].filter((g): g is string => g !== undefined);
  const preview = model.preview(a);
  const sig = [a, preview, ...gates.map((g) => page.answers.get(g))];
  const k = `${a.loopId} ${a.toolExecutionId}`;
  const cached = page.cards.get(k);
  if (cached && cached.sig.length === sig.length && cached.sig.every((v, i) => v === sig[i])) return cached.node;
  const node = toolCard(a, preview, page.answers, answer, page.drafts);
  page.cards.set(k, { sig, node });
  return node;
}

function turnNode(model: SessionModel, t: TurnView, n: number): HTMLElement {
  const end = t.outcome ? el("span", { class: `pill s-turn-${t.outcome}` }, t.outcome) : el("span", { class: "pill s-running" }, "in progress");
  const span = duration(t.startedAt, t.endedAt);
  const head = el(
    "header",
    {},
    el("b", {}, `Turn ${n}`),
    t.startedAt ? el("time", { datetime: t.startedAt }, clock(t.startedAt)) : undefined,
    t.endedAt ? el("span", { class: "muted" }, `→ ${clock(t.endedAt)}${span ? ` (${span})` : ""}`) : undefined,
    end,
  );
  const body: Node[] = [head];
  if (t.error) body.push(el("p", { class: "answer-error" }, `Turn failed: ${t.error}`));
  body.push(t.tools.length > 0 ? el("ol", { class: "tools" }, ...t.tools.map((a) => card(model, a))) : el("p", { class: "muted" }, "No tool calls in this turn."));
  return el("article", { class: "turn", "data-turn": t.turnId, "data-outcome": t.outcome ?? "open" }, ...body);
}

/** What the view says before a session is chosen: how to choose one, or what to do first. */
function intro(): Node[] {
  if (page.list === "not_provisioned") {
    return [el("div", { class: "notice" }, el("p", { class: "gate-title" }, "This namespace is not provisioned"), el("p", {}, page.listWhy ?? ""), el("p", { class: "muted" }, "Provisioning creates the journal stream; the page picks it up by itself."))];
  }
  const note = (title: string, text: string) => [el("div", { class: "intro" }, el("p", { class: "gate-title" }, title), el("p", {}, text))];
  // The gateway answered, and said its journal server is down: not the gateway's outage,
  // and whatever list the page had is stale until NATS is back.
  if (page.list !== "live" && page.listCode === "nats_unavailable") {
    return note("NATS is down", "The gateway is running, but the NATS server that holds the journal does not answer it. The page retries by itself and follows again once NATS is back.");
  }
  if (page.sessions === undefined) {
    if (page.list === "connecting") return [];
    return note("Waiting for the gateway", "Nothing can be shown until the gateway can read the journal again. The page retries by itself; the banner above says what went wrong.");
  }
  if (page.sessions.length === 0) return note("Waiting for the first session", "Start a loop that writes to this namespace: its session appears on the left within seconds, and choosing it follows it live.");
  return note("Choose a session", "Pick one on the left to follow its loops, turns and tool calls as they happen, and to answer what waits on you.");
}

function renderView(): void {
  const view = $("view");
  const f = page.follow;
  if (f === undefined) {
    syncChildren(view, intro());
    return;
  }
  // A typed answer keeps its focus and caret across a rebuild (its text is in page.drafts);
  // read first: building the new tree moves the cached cards out of the document.
  const active = document.activeElement;
  const typing = active instanceof HTMLInputElement && view.contains(active) ? { gate: active.closest("[data-gate]")?.getAttribute("data-gate"), caret: active.selectionStart } : undefined;
  const m = f.model;
  const head = el(
    "div",
    { class: "session-head" },
    el("h2", {}, "Session ", el("code", { title: f.id }, shortId(f.id))),
    el("span", { class: "pill", id: "session-state" }),
    el(
      "span",
      { class: "muted" },
      [m.startedAt ? `started ${clock(m.startedAt)}` : "", m.lastActivityAt ? `last event ${clock(m.lastActivityAt)}` : "", `journal sequence ${m.lastJournalSeq}`].filter(Boolean).join(" · "),
    ),
  );
  head.dataset.seq = String(m.lastJournalSeq);
  const loops = m.loops();
  const sections = loops.map((l) =>
    el(
      "section",
      { class: "loop", "data-loop": l.loopId },
      el("h3", {}, "Loop ", el("code", { title: l.loopId }, shortId(l.loopId)), l.startedAt ? el("span", { class: "muted" }, ` started ${clock(l.startedAt)}`) : undefined),
      ...l.turns.map((t, i) => turnNode(m, t, i + 1)),
    ),
  );
  const empty = m.lastJournalSeq === 0 ? "Reading the journal…" : "No loop has started in this session yet.";
  view.replaceChildren(head, ...(sections.length > 0 ? sections : [el("p", { class: "muted" }, empty)]));
  if (typing?.gate) {
    const input = view.querySelector<HTMLInputElement>(`[data-gate="${CSS.escape(typing.gate)}"] input`);
    input?.focus();
    if (input && typing.caret !== null) input.setSelectionRange(typing.caret, typing.caret);
  }
  renderSessionState();
}

/** The followed session's state, from the list (the catalog's fold); kept in step by each poll. */
function renderSessionState(): void {
  const pill = document.getElementById("session-state");
  if (pill === null || page.follow === undefined) return;
  const state = page.sessions?.find((s) => s.session_id === page.follow?.id)?.state;
  pill.hidden = state === undefined;
  pill.className = `pill s-${state ?? "unknown"}`;
  pill.textContent = state ? words(state) : "";
}

function render(): void {
  renderBadge();
  renderList();
  renderView();
}

function answer(gateId: string, label: string, body: GateBody): void {
  const f = page.follow;
  if (f === undefined) return;
  page.answers.set(gateId, { state: "sending", action: label });
  render();
  void postJson(`/v1/sessions/${encodeURIComponent(f.id)}/gates/${encodeURIComponent(gateId)}`, body).then((r) => {
    page.answers.set(gateId, r.ok ? { state: "sent", action: label } : { state: "failed", action: label, why: describeFailure(r.failure) });
    render();
  });
}

function listFailed(f: ApiFailure): void {
  page.listAttempt++;
  page.list = isNotProvisioned(f) ? "not_provisioned" : "disconnected";
  page.listCode = f.code;
  const retry = `retrying in ${Math.round(backoffMs(page.listAttempt) / 1000)} s`;
  page.listWhy = isNotProvisioned(f) ? `${f.message} (${retry})` : `Sessions could not be listed: ${describeFailure(f)}; ${retry}.`;
}

let pollTimer: ReturnType<typeof setTimeout> | undefined;

/** A change in the followed session: read the list soon, so its state pill keeps up. */
function pollSoon(): void {
  if (page.list !== "live") return;
  clearTimeout(pollTimer);
  pollTimer = setTimeout(() => void poll(), 250);
}

let polling = false;

async function poll(): Promise<void> {
  clearTimeout(pollTimer);
  if (polling) return; // the request in flight schedules the next one
  polling = true;
  if (page.list === "disconnected") {
    page.list = "reconnecting";
    renderBadge();
  }
  const r = await getJson<{ sessions?: SessionItem[] }>("/v1/sessions?limit=100");
  if (r.ok && Array.isArray(r.value.sessions)) {
    page.list = "live";
    page.listWhy = undefined;
    page.listCode = undefined;
    page.listAttempt = 0;
    page.sessions = r.value.sessions;
  } else {
    listFailed(r.ok ? { status: 200, code: "invalid_reply", message: "the session list has no sessions array", retryable: false } : r.failure);
  }
  renderBadge();
  renderList();
  // The view is rebuilt only when it changes (a typed answer keeps its focus).
  if (page.follow === undefined) renderView();
  else renderSessionState();
  polling = false;
  clearTimeout(pollTimer);
  pollTimer = setTimeout(() => void poll(), page.list === "live" ? POLL_MS : backoffMs(page.listAttempt));
}

function follow(sessionId: string | undefined): void {
  page.follow?.stream.close();
  page.follow = undefined;
  page.stream = undefined;
  page.streamWhy = undefined;
  page.refused = undefined;
  page.cards.clear();
  if (sessionId) {
    const model = new SessionModel();
    const stream = new SessionStream(sessionId, model, {
      onState: (state, why) => {
        page.stream = state;
        page.streamWhy = why;
        renderBadge();
      },
      onChange: () => {
        renderView();
        pollSoon();
      },
      onRefused: (message) => {
        page.refused = message;
        render();
      },
    });
    page.follow = { id: sessionId, model, stream };
  }
  render();
}

window.addEventListener("hashchange", () => follow(location.hash.slice(1) || undefined));
follow(location.hash.slice(1) || undefined);
void poll();
