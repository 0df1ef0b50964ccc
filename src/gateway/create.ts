/**
 * `POST /v1/sessions`: creating a session. A gateway carries sessions over NATS; it starts
 * none: a session's loop actor starts it and journals its SessionStarted. With no runtime
 * behind the gateway the route answers in the Go handler's error envelope, 501
 * `no_runtime`, so a client written for the Go runtime gets an error it can read (its
 * mux's plain-text 405 was no JSON at all) that says why.
 *
 * The seam: once a runtime is attached behind a gateway (a Go runtime's HTTP surface, or a
 * jetloop actor serving creation over NATS), this is the one place that forwards the
 * request to it, the body and `Idempotency-Key` as received, and relays its answer.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { sendError } from "./envelope.js";

/** Answers a create request: today always `no_runtime`; the body is left unread (the handler cuts it). */
export function createSession(_req: IncomingMessage, res: ServerResponse): void {
  sendError(res, "no_runtime");
}
