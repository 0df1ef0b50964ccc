/**
 * `POST /v1/sessions/{sid}/gates/{gid}`: the runtime's gate response, turned into
 * jetloop's answer command to the loop that opened the gate (reference §6, §10).
 */
import { TimeoutError } from "@nats-io/transport-node";
import type { Jetloop } from "../bus.js";
import type { AnswerInput } from "../commands/protocol.js";
import { CommandError } from "../errors.js";
import { derivedId } from "../events/ids.js";
import { goFold } from "../wire/go-fold.js";
import type { GatewayErrorName } from "./envelope.js";

/** The decoded body: Go's lenient decoding (unknown keys ignored, key case ignored). */
export interface GateRequest {
  readonly action: string;
  readonly values: Record<string, unknown>;
}

/**
 * Decodes a gate body as Go's encoding/json would into gate.ResponseRequest; undefined is
 * invalid_body. Every top-level key whose folded form is a field's sets it, in order, so
 * the last duplicate wins whatever its case; null leaves `action` as it was and empties
 * `values`; an object into `values` adds its keys to the map already there; a wrong type
 * in any of them is invalid_body.
 */
export function decodeGateRequest(body: string): GateRequest | undefined {
  if (body.trim() === "") return { action: "", values: {} };
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (v === null) return { action: "", values: {} };
  if (typeof v !== "object" || Array.isArray(v)) return undefined;
  let action = "";
  let values: Record<string, unknown> = {};
  for (const [key, value] of topLevelMembers(body)) {
    const field = goFold(key);
    if (field === "ACTION") {
      if (value === null) continue;
      if (typeof value !== "string") return undefined;
      action = value;
    } else if (field === "VALUES") {
      if (value === null) values = {};
      else if (typeof value !== "object" || Array.isArray(value)) return undefined;
      else values = { ...values, ...(value as Record<string, unknown>) };
    }
  }
  return { action, values };
}

/**
 * The members of a JSON object text in order, duplicates kept (JSON.parse keeps only the
 * last of each exact key, at the first one's place). `text` is known to be valid JSON.
 */
function topLevelMembers(text: string): [string, unknown][] {
  const members: [string, unknown][] = [];
  let i = text.indexOf("{") + 1;
  const skipSpace = () => {
    while (/\s/.test(text[i] ?? "")) i++;
  };
  const scanString = () => {
    const start = i++;
    while (text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    i++;
    return text.slice(start, i);
  };
  for (;;) {
    skipSpace();
    if (text[i] === "}") return members;
    const key = JSON.parse(scanString()) as string;
    skipSpace();
    i++; // ':'
    skipSpace();
    const start = i;
    let depth = 0;
    while (i < text.length) {
      const c = text[i]!;
      if (c === '"') {
        scanString();
        if (depth === 0) break;
        continue;
      }
      if (c === "{" || c === "[") depth++;
      else if (c === "}" || c === "]") {
        if (depth === 0) break;
        depth--;
        if (depth === 0) {
          i++;
          break;
        }
      } else if (depth === 0 && (c === "," || /\s/.test(c))) break;
      i++;
    }
    members.push([key, JSON.parse(text.slice(start, i))]);
    skipSpace();
    if (text[i] === ",") i++;
  }
}

/** The gate as its GateOpened described it. */
export interface OpenedGate {
  readonly loopId: string | undefined;
  readonly kind: string | undefined;
  readonly controls: readonly string[];
}

/**
 * Finds the GateOpened of `gateId` in the session's journal. A resolved gate is still
 * found: a retried answer (same command id) gets its first outcome from the loop actor,
 * any other answer GATE_RESOLVED.
 */
export async function findGate(bus: Jetloop, sessionId: string, gateId: string): Promise<OpenedGate | undefined> {
  for await (const { event: e } of bus.session(sessionId).replay({ enduring: "all", types: ["GateOpened"] })) {
    if (e.type === "GateOpened" && e.gate?.id === gateId) {
      return { loopId: e.loopId, kind: e.gate.kind, controls: (e.gate.prompt?.controls ?? []).flatMap((c) => (c.action ? [c.action] : [])) };
    }
  }
  return undefined;
}

const FORM_ACTIONS = new Set(["accept", "decline", "cancel"]);

/**
 * The jetloop answer for a runtime gate response, or the error the reference gives. A
 * permission answer passes when its action is one of the controls the gate's GateOpened
 * listed (Go's validateGateAction: a gate without controls takes none); the loop actor
 * receives the control chosen and decides what it means.
 */
export function toAnswer(gateId: string, gate: OpenedGate, req: GateRequest): AnswerInput | GatewayErrorName {
  if (gate.kind === "harness.permission") {
    if (FORM_ACTIONS.has(req.action)) return "gate_kind_mismatch";
    if (req.action === "" || !gate.controls.includes(req.action)) return "gate_action_invalid";
    return { kind: "permission", gateId, action: req.action };
  }
  if (gate.kind === "harness.ask_user") {
    if (FORM_ACTIONS.has(req.action)) return "gate_kind_mismatch";
    const answer = req.values.answer;
    return typeof answer === "string" && answer !== "" ? { kind: "input", gateId, answer } : "gate_action_invalid";
  }
  // Forms and open_url gates have no jetloop answer.
  return "gate_action_invalid";
}

/**
 * The answer's command id: from the Idempotency-Key, else from the gate and the answer, so
 * a retried POST is the same command and gets the first outcome (the gate server dedups).
 */
export function commandIdFor(sessionId: string, answer: AnswerInput, idempotencyKey: string | undefined): string {
  const basis = idempotencyKey === undefined ? JSON.stringify(answer) : `key:${idempotencyKey}`;
  return derivedId(sessionId, answer.gateId ?? "", basis);
}

function timedOut(e: unknown): boolean {
  for (let c: unknown = e; c instanceof Error; c = c.cause) if (c instanceof TimeoutError) return true;
  return false;
}

/**
 * Sends the answer; undefined on success (202, also for a repeat of an accepted command),
 * else the error to answer with, as the Go handler maps its GateErrorKind: a gate never
 * opened on the loop, or one already resolved (Go removes it from its directory), is
 * 404 gate_not_found; one being resolved by another answer is 409 gate_not_ready; an
 * answer the loop refuses is 400 gate_action_invalid; a journal failure 500; no reply in
 * time 503 gate_capacity (the one retryable code).
 */
export async function sendAnswer(bus: Jetloop, sessionId: string, loopId: string, answer: AnswerInput, timeoutMs: number): Promise<GatewayErrorName | undefined> {
  try {
    await bus.session(sessionId).answer(loopId, answer, { timeoutMs });
    return undefined;
  } catch (e) {
    if (!(e instanceof CommandError)) throw e;
    switch (e.code) {
      case "COMMAND_NO_LISTENER":
        return "session_not_found";
      case "GATE_UNKNOWN":
        return "gate_not_found";
      case "GATE_RESOLVED":
        return e.outcome ? "gate_not_found" : "gate_not_ready";
      case "COMMAND_INVALID":
        return "gate_action_invalid";
      case "COMMAND_TIMEOUT":
        // The actor (an attach forwarding to a Go runtime) says: not applied or not known yet, repeat.
        return "gate_capacity";
      default:
        return timedOut(e) ? "gate_capacity" : "gate_failed";
    }
  }
}
