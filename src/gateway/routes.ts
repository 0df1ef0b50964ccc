/**
 * The route table, matched as Go 1.22's ServeMux matches the runtime's patterns: on the
 * target as Go reads it (request-target.ts: a 301 to a cleaned path, 400 for one Go's
 * server cannot read), exact segments, `{name}` wildcards of one segment, GET patterns
 * answering HEAD, plain-text 404 for an unknown path and 405 with `Allow` for another
 * method.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { sendAsteriskTarget, sendMethodNotAllowed, sendMovedPermanently, sendNotFound, sendUnreadableTarget } from "./envelope.js";
import { goQuery, type QueryParams } from "./query.js";
import { readRequestTarget, type RequestTarget } from "./request-target.js";

export type RouteName = "page" | "script" | "capabilities" | "jetloop-capabilities" | "sessions" | "status" | "journal" | "events" | "gate" | "input" | "interrupt" | "create";

interface Pattern {
  readonly method: "GET" | "POST";
  readonly segments: readonly string[];
  readonly name: RouteName;
}

const pattern = (method: "GET" | "POST", path: string, name: RouteName): Pattern => ({ method, segments: path.split("/").slice(1), name });

// A gateway does not start or rebuild sessions (their loop actors do). Create answers in
// the Go error envelope why (create.ts), so a Go client reads it; restore is not served and
// answers as a mux without it does: 404 on …/restore.
const ROUTES: readonly Pattern[] = [
  pattern("GET", "/", "page"),
  pattern("GET", "/app.js", "script"),
  pattern("GET", "/v1/capabilities", "capabilities"),
  // Outside /v1, where the Go surface lives: jetloop's own features (handler.ts).
  pattern("GET", "/jetloop/capabilities", "jetloop-capabilities"),
  pattern("GET", "/v1/sessions", "sessions"),
  pattern("POST", "/v1/sessions", "create"),
  pattern("GET", "/v1/sessions/{sid}/status", "status"),
  pattern("GET", "/v1/sessions/{sid}/journal", "journal"),
  pattern("GET", "/v1/sessions/{sid}/events", "events"),
  pattern("POST", "/v1/sessions/{sid}/gates/{gid}", "gate"),
  pattern("POST", "/v1/sessions/{sid}/input", "input"),
  pattern("POST", "/v1/sessions/{sid}/interrupt", "interrupt"),
];

export interface Matched {
  readonly name: RouteName;
  readonly params: Readonly<Record<string, string>>;
  /** Read as Go's `r.URL.Query()` reads them (query.ts), not as URLSearchParams. */
  readonly query: QueryParams;
}

function match(p: Pattern, segments: readonly string[]): Record<string, string> | undefined {
  if (p.segments.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const want = p.segments[i]!;
    const got = segments[i]!;
    if (want.startsWith("{")) {
      if (got === "") return undefined;
      params[want.slice(1, -1)] = got;
    } else if (want !== got) return undefined;
  }
  return params;
}

/** A target Go's server reads and hands to its mux: a path, or a path to redirect. */
export type ServedTarget = Extract<RequestTarget, { kind: "path" | "redirect" }>;

/**
 * What Go's server answers before any handler runs (middleware included): a target it
 * cannot read (400, closed) and `*` (ServeMux's own 400, closed); else the target.
 */
export function servedTarget(req: IncomingMessage, res: ServerResponse): ServedTarget | undefined {
  const target = readRequestTarget(req.url ?? "/");
  if (target.kind === "asterisk") return void sendAsteriskTarget(res);
  if (target.kind === "unreadable") return void sendUnreadableTarget(res);
  return target;
}

/** The matched route, or undefined after answering 301/404/405 itself. */
export function route(req: IncomingMessage, res: ServerResponse, target: ServedTarget): Matched | undefined {
  if (target.kind === "redirect") return void sendMovedPermanently(res, req.method, target.location);
  const segments = target.segments;
  const method = req.method === "HEAD" ? "GET" : req.method;
  const allowed = new Set<string>();
  for (const p of ROUTES) {
    const params = match(p, segments);
    if (params === undefined) continue;
    if (p.method === method) return { name: p.name, params, query: goQuery(req.url ?? "/") };
    allowed.add(p.method === "GET" ? "GET, HEAD" : p.method);
  }
  if (allowed.size > 0) sendMethodNotAllowed(res, [...allowed].sort().join(", "));
  else sendNotFound(res);
  return undefined;
}
