/**
 * What the gateway writes besides events: JSON bodies as Go's json.Encoder writes them
 * (compact, HTML-safe, a trailing newline), the reference's error envelope with its fixed
 * messages, and the router's plain-text 404/405.
 */
import type { ServerResponse } from "node:http";
import { goJson } from "../wire/wire.js";

/** Every error the surface answers, with the status and the fixed message of the reference (§9). */
export const GATEWAY_ERRORS = {
  invalid_session_id: [400, "invalid_parameter", "invalid session id"],
  invalid_gate_id: [400, "invalid_parameter", "invalid gate id"],
  invalid_query: [400, "invalid_parameter", "invalid query parameter"],
  invalid_body: [400, "invalid_body", "malformed request body"],
  gate_action_invalid: [400, "gate_action_invalid", "invalid gate action"],
  gate_kind_mismatch: [400, "gate_kind_mismatch", "gate kind mismatch"],
  unauthorized: [401, "unauthorized", "authentication required"],
  session_not_found: [404, "session_not_found", "session not found"],
  // The session exists but no loop actor listens now: the Go handler's answer for a session
  // not live here, retryable (the loop actor may come back).
  session_unreachable: [404, "session_not_found", "session not found"],
  gate_not_found: [404, "gate_not_found", "gate not found"],
  gate_not_ready: [409, "gate_not_ready", "gate not ready"],
  list_failed: [500, "internal", "could not list sessions"],
  status_failed: [500, "internal", "could not read session status"],
  journal_failed: [500, "internal", "could not read session journal"],
  subscribe_failed: [500, "internal", "could not subscribe to session events"],
  gate_failed: [500, "internal", "could not respond to gate"],
  gate_capacity: [503, "gate_capacity", "gate capacity exceeded"],
  // The session controls (input, interrupt), the runtime's codes and messages.
  idempotency_key_too_long: [400, "invalid_parameter", "idempotency key too long"],
  idempotency_conflict: [409, "idempotency_conflict", "idempotency key reused with a different request body"],
  submit_failed: [500, "internal", "could not submit input"],
  interrupt_failed: [500, "internal", "could not interrupt session"],
  // jetloop's own: the session's actor did not reply in time, so the outcome is unknown;
  // retryable only under an Idempotency-Key (the retry is then the same command).
  control_timeout: [503, "session_timeout", "the session did not answer in time"],
  control_timeout_unkeyed: [503, "session_timeout", "the session did not answer in time"],
  // jetloop's own: the browser boundary and the resource bounds (src/gateway/README.md).
  host_not_allowed: [403, "host_not_allowed", "host not allowed"],
  origin_not_allowed: [403, "origin_not_allowed", "origin not allowed"],
  unsupported_media_type: [415, "unsupported_media_type", "content type must be application/json"],
  body_timeout: [408, "body_timeout", "request body not received in time"],
  too_many_streams: [429, "too_many_streams", "too many event streams from this client"],
  // jetloop's own: the journal's server unreachable, or the namespace never provisioned.
  nats_unavailable: [503, "nats_unavailable", "journal server unavailable"],
  not_provisioned: [503, "not_provisioned", "namespace not provisioned: run jetloop provision"],
  // jetloop's own: POST /v1/sessions with no runtime behind the gateway to create it (create.ts).
  no_runtime: [501, "no_runtime", "no runtime behind this gateway to create a session"],
} as const satisfies Record<string, readonly [number, string, string]>;

export type GatewayErrorName = keyof typeof GATEWAY_ERRORS;

/** A JSON body: `json` is already Go-encoded; the newline is json.Encoder's. */
export function sendJson(res: ServerResponse, status: number, json: string): void {
  const body = Buffer.from(`${json}\n`, "utf8");
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": body.length });
  res.end(body);
}

/** Worth retrying as is: gate_capacity (reference §6), and jetloop's transient ones. */
const RETRYABLE: ReadonlySet<GatewayErrorName> = new Set(["gate_capacity", "session_unreachable", "too_many_streams", "nats_unavailable", "control_timeout"]);

export function errorBody(name: GatewayErrorName): string {
  const [, code, message] = GATEWAY_ERRORS[name];
  return `{"error":{"code":${goJson(code)},"message":${goJson(message)},"retryable":${String(RETRYABLE.has(name))}}}`;
}

export function sendError(res: ServerResponse, name: GatewayErrorName): void {
  sendJson(res, GATEWAY_ERRORS[name][0], errorBody(name));
}

function sendPlain(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  const body = Buffer.from(text, "utf8");
  res.writeHead(status, { ...headers, "Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff", "Content-Length": body.length });
  res.end(body);
}

/** Go ServeMux's answer to an unknown path. */
export function sendNotFound(res: ServerResponse): void {
  sendPlain(res, 404, "404 page not found\n");
}

const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "'": "&#39;", "<": "&lt;", ">": "&gt;", '"': "&#34;" };

/**
 * ServeMux's 301 to the cleaned path, written as Go's `http.Redirect` writes it: a short
 * HTML body for GET (and its headers for HEAD), nothing for another method.
 */
export function sendMovedPermanently(res: ServerResponse, method: string | undefined, location: string): void {
  if (method !== "GET" && method !== "HEAD") {
    res.writeHead(301, { Location: location, "Content-Length": 0 }).end();
    return;
  }
  const body = Buffer.from(`<a href="${location.replace(/[&'<>"]/g, (c) => HTML_ESCAPES[c]!)}">Moved Permanently</a>.\n\n`, "utf8");
  res.writeHead(301, { Location: location, "Content-Type": "text/html; charset=utf-8", "Content-Length": body.length });
  res.end(body);
}

/**
 * Go's server's answer to a request target it cannot read (a bad escape, no path): 400
 * "400 Bad Request", and the connection closed, before any handler.
 */
export function sendUnreadableTarget(res: ServerResponse): void {
  res.shouldKeepAlive = false;
  sendPlain(res, 400, "400 Bad Request", { Connection: "close" });
}

/** ServeMux's answer to the target `*`: 400, no body, the connection closed. */
export function sendAsteriskTarget(res: ServerResponse): void {
  res.shouldKeepAlive = false;
  res.writeHead(400, { Connection: "close", "Content-Length": 0 }).end();
}

/** Go ServeMux's answer to a known path with another method. */
export function sendMethodNotAllowed(res: ServerResponse, allow: string): void {
  sendPlain(res, 405, "Method Not Allowed\n", { Allow: allow });
}
