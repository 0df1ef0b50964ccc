/**
 * `POST /v1/sessions/{sid}/input` and `…/interrupt`: the runtime's session controls
 * (reference §7), carried to the session's actor over NATS (`serveControls`).
 */
import { z } from "zod";
import type { SessionHandle } from "../session.js";
import { goFold } from "../wire/go-fold.js";
import { parseStrictJson, StrictJsonError } from "../wire/strict-json.js";
import { fromWire, WireKeyError } from "../wire/wire.js";
import { type ContentBlock, contentBlockSchema, MAX_BLOCKS } from "../events/content.js";
import { derivedId, newId } from "../events/ids.js";
import { fingerprintOf } from "../commands/controls-protocol.js";
import type { ControlResult } from "../commands/controls-client.js";
import type { GatewayErrorName } from "./envelope.js";

/** The runtime's bound on an Idempotency-Key (bytes); over it is 400. */
export const MAX_IDEMPOTENCY_KEY_BYTES = 255;

const blocksSchema = z.array(contentBlockSchema).max(MAX_BLOCKS);

/**
 * The input body `{"blocks":[…]}` as Go decodes it into the create/input request: the
 * `blocks` key in any letter case, other keys ignored, each block by its `type` in the
 * core content codec (an unknown type, a wrong JSON type at any field, more than 10,000
 * blocks: refused). No blocks (no body, `{}`, `null`, `[]`) is refused, as Go refuses it.
 * What Go would read but jetloop cannot read the same way is refused too: duplicate keys
 * (Go keeps the last), a key in another letter case inside a block, a `null` field.
 * Undefined is 400 invalid_body.
 */
export function decodeInputBody(body: string): ContentBlock[] | undefined {
  if (body.trim() === "") return undefined;
  let v: unknown;
  try {
    v = parseStrictJson(body);
  } catch (e) {
    if (e instanceof StrictJsonError) return undefined;
    throw e;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
  const o = v as Record<string, unknown>;
  const key = "blocks" in o ? "blocks" : Object.keys(o).find((k) => goFold(k) === "BLOCKS");
  const raw = key === undefined ? undefined : o[key];
  if (!Array.isArray(raw) || raw.length === 0) return undefined;
  try {
    const r = blocksSchema.safeParse(fromWire(blocksSchema, raw));
    return r.success ? r.data : undefined;
  } catch (e) {
    // A key the wire form may not have (another letter case, a null).
    if (e instanceof WireKeyError) return undefined;
    throw e;
  }
}

/** The Idempotency-Key header: absent (or empty), the key, or over the runtime's bound. */
export function idempotencyKey(header: string | string[] | undefined): { readonly key: string | undefined } | "too_long" {
  const key = Array.isArray(header) ? header.join(", ") : header;
  if (key === undefined || key === "") return { key: undefined };
  return Buffer.byteLength(key, "utf8") > MAX_IDEMPOTENCY_KEY_BYTES ? "too_long" : { key };
}

/**
 * The command id of a control: from the Idempotency-Key (the session, the route and the
 * key: the same key is the same command, so a retry gets the first outcome), else fresh
 * (the runtime's input route has no idempotency; each POST is a new input).
 */
export function controlCommandId(sessionId: string, route: "input" | "interrupt", key: string | undefined): string {
  if (key === undefined) return newId();
  return derivedId(sessionId, route, key);
}

/** What the gateway answers for a control that did not succeed. */
export function controlFailure(result: Extract<ControlResult<object>, { ok: false }>, route: "input" | "interrupt", keyed: boolean): GatewayErrorName {
  switch (result.error.code) {
    case "COMMAND_NO_LISTENER":
      return "session_not_found"; // the caller tells a session with a journal (unreachable) from an unknown one
    case "IDEMPOTENCY_CONFLICT":
      return "idempotency_conflict";
    case "COMMAND_TIMEOUT":
      // The outcome is unknown: a retry is safe only under the same Idempotency-Key.
      return keyed ? "control_timeout" : "control_timeout_unkeyed";
    default:
      return route === "input" ? "submit_failed" : "interrupt_failed";
  }
}

/** The 200 body, or the error to answer with. */
export type ControlAnswer = { readonly body: string } | { readonly error: GatewayErrorName };

/** Sends the input to the session's actor. */
export async function sendInput(session: Pick<SessionHandle<unknown>, "sessionId" | "submitInput" | "interrupt">, blocks: ContentBlock[], body: string, key: string | undefined, timeoutMs: number): Promise<ControlAnswer> {
  const commandId = controlCommandId(session.sessionId, "input", key);
  // Go compares the request body byte for byte under a key: so does the fingerprint.
  const r = await session.submitInput(blocks, { commandId, fingerprint: fingerprintOf(body), timeoutMs });
  return r.ok ? { body: `{"command_id":"${r.commandId}"}` } : { error: controlFailure(r, "input", key !== undefined) };
}

/** Sends the interrupt to the session's actor. */
export async function sendInterrupt(session: Pick<SessionHandle<unknown>, "sessionId" | "submitInput" | "interrupt">, key: string | undefined, timeoutMs: number): Promise<ControlAnswer> {
  const r = await session.interrupt({ commandId: controlCommandId(session.sessionId, "interrupt", key), timeoutMs });
  return r.ok ? { body: `{"interrupted":${String(r.interrupted)}}` } : { error: controlFailure(r, "interrupt", key !== undefined) };
}
