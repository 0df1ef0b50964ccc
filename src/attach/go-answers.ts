/**
 * Answers for an attached session, forwarded to the Go runtime that owns it. The attach is
 * the gate actor of the session's loops: it answers on `{ns}.cmd.{sid}.*.answer` (so a
 * jetloop gate server started on one of those loops finds an actor and refuses: one actor
 * per loop) and serves the session's controls (input, interrupt). Each answer becomes the
 * runtime's `POST …/gates/{gid}`, each control its `…/input` or `…/interrupt`, and the
 * runtime's status and error code become jetloop's typed replies, so the caller — the SDK's
 * `answer()` or the gateway's gate route — is told what the runtime said.
 *
 * The runtime resolves a gate durable-first (its GateResolved is in its store before it
 * answers 202), so a 202 is followed by the GateResolved the attach appends from the
 * store; the reply carries that event's journal sequence, as a jetloop actor's does.
 */
import { headers, type Msg, type MsgHdrs, type Subscription } from "@nats-io/transport-node";
import { z } from "zod";
import type { Jetloop } from "../bus.js";
import { fingerprintOf } from "../commands/controls-protocol.js";
import type { ControlServer } from "../commands/controls-server.js";
import { type Answer, decodeAnswer, encodeReply, type Reply } from "../commands/protocol.js";
import { CommandError } from "../errors.js";
import { contentBlockSchema, type ContentBlock } from "../events/content.js";
import { newId } from "../events/ids.js";
import { toWireJson } from "../wire/wire.js";
import { GoHttpError, type GoAnswer, type GoHttp } from "./go-http.js";

/** The reply header every gate actor sets (src/commands/gate-server.ts): when it subscribed, then its id. */
const ACTOR_HEADER = "Jetloop-Gate-Actor";
/** How long the check for another actor on a loop waits after the first reply, and at most (gate-server.ts's values). */
const STALL_MS = 250;
const PROBE_MS = 2000;
/** Command ids remembered per session for repeats (the gate server remembers as many gates). */
const MEMORY = 1000;

/** What the answers of attached sessions need. */
export interface AnswerDeps {
  readonly bus: Jetloop;
  readonly http: GoHttp;
  /** How long a 202's GateResolved may take to reach the journal before the reply says "unknown yet, retry". */
  readonly resolvedWaitMs: number;
  /** Answers and controls being forwarded at once, all sessions together; past it a command is told to retry (COMMAND_TIMEOUT) at once. */
  readonly maxInFlight: number;
  report(sessionId: string, error: Error): void;
}

/** A gate as its GateOpened (in the journal the attach wrote) describes it. */
interface KnownGate {
  readonly gateId: string;
  readonly loopId: string | undefined;
  readonly kind: string;
  readonly controls: readonly string[];
  readonly toolExecutionId: string | undefined;
}

const blocksBody = z.strictObject({ blocks: z.array(contentBlockSchema) });
/** An input's blocks as the runtime's `{"blocks":[…]}` (Go's content codec: jetloop's wire form of a block). */
export function goInputBody(blocks: readonly ContentBlock[]): string {
  return toWireJson(blocksBody, { blocks });
}

const refused = (code: Extract<Reply, { status: "refused" }>["code"] | "COMMAND_TIMEOUT", message: string): Reply => ({ status: "refused", code, message });

/** The runtime's body for a jetloop answer to `gate`, or a refusal. */
export function goGateBody(answer: Answer, gate: KnownGate): { body: string; control: string } | Reply {
  if (answer.kind === "permission") {
    if (gate.kind !== "harness.permission") return refused("COMMAND_INVALID", `gate ${gate.gateId} is not a permission gate`);
    // An effect names the first control with it, as a jetloop gate reads it: the Go
    // permission controls are Approve, "Approve always for this workspace" and Deny.
    const control = answer.action ?? (answer.effect === "deny" ? gate.controls.find((c) => c === "Deny") : gate.controls.find((c) => c.startsWith("Approve")));
    if (control === undefined) return refused("COMMAND_INVALID", `gate ${gate.gateId} offers no control for ${answer.effect}`);
    return { body: JSON.stringify({ action: control }), control };
  }
  if (gate.kind !== "harness.ask_user") return refused("COMMAND_INVALID", `gate ${gate.gateId} is not an input gate`);
  // Go requires the action to be one of the prompt's controls: the answer itself when the
  // gate offers it as a choice, else the gate's first control (its submit).
  const control = gate.controls.includes(answer.answer) ? answer.answer : (gate.controls[0] ?? "");
  return { body: JSON.stringify({ action: control, values: { answer: answer.answer } }), control };
}

/** Effect of a resolved gate's control, as a jetloop outcome names it. */
function effectOf(kind: string, action: string | undefined): string {
  if (kind !== "harness.permission") return "answered";
  return action === "Deny" ? "deny" : "approve";
}

/** The gate actor and controls of one attached session. */
export class SessionAnswers {
  readonly #deps: AnswerDeps;
  readonly #sessionId: string;
  readonly #actorId = newId();
  readonly #named: MsgHdrs = headers();
  #sub: Subscription | undefined;
  #controls: ControlServer | undefined;
  /** Loops checked for another actor: true when this one serves it, false when another does. */
  readonly #loops = new Map<string, Promise<boolean>>();
  /** Answers by command id: what was sent (a repeat must be the same) and the reply. */
  readonly #commands = new Map<string, { fingerprint: string; reply: Promise<Reply> }>();
  #closed = false;
  static inFlight = 0;

  constructor(deps: AnswerDeps, sessionId: string) {
    this.#deps = deps;
    this.#sessionId = sessionId;
  }

  /** Subscribes the gate actor (on every loop of the session) and the controls; resolves once both are on the server. */
  async start(): Promise<void> {
    const { bus } = this.#deps;
    this.#sub = bus.nc.subscribe(`${bus.namespace}.cmd.${this.#sessionId}.*.answer`, { callback: (err, msg) => (err ? undefined : this.#onAnswer(msg)) });
    this.#controls = await bus.session(this.#sessionId).serveControls({ input: (c) => this.#input(c), interrupt: () => this.#interrupt() });
    await bus.nc.flush();
    // Taken once the subscription is on the server (gate-server.ts: a later actor asks after it and is answered by it).
    this.#named.set(ACTOR_HEADER, `${String(Date.now()).padStart(16, "0")}-${this.#actorId}`);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#sub?.unsubscribe();
    await this.#controls?.close();
  }

  #onAnswer(msg: Msg): void {
    const loopId = msg.subject.split(".").at(-2)!;
    // A probe (an empty command): refused as invalid, as a gate server refuses it; the reply
    // is what tells a gate server starting on this loop that an actor serves it.
    if (msg.data.length === 0) {
      msg.respond(encodeReply(refused("COMMAND_INVALID", "an empty command")), { headers: this.#named });
      return;
    }
    void (async () => {
      if (!(await this.#serves(loopId))) return;
      const reply = await this.#answer(loopId, msg.data).catch((e: unknown) => refused("COMMAND_FAILED", `the attach could not forward the answer: ${(e as Error).message}`));
      if (!this.#closed) msg.respond(encodeReply(reply), { headers: this.#named });
    })();
  }

  /**
   * Whether this attach serves `loopId`: on the loop's first answer it asks who answers
   * there (every gate actor replies with its key); a jetloop actor that subscribed before
   * the attach keeps the loop, and the attach stays silent on it (one actor per loop).
   */
  #serves(loopId: string): Promise<boolean> {
    let p = this.#loops.get(loopId);
    if (p === undefined) {
      p = (async () => {
        const mine = this.#named.get(ACTOR_HEADER);
        try {
          const replies = await this.#deps.bus.nc.requestMany(`${this.#deps.bus.namespace}.cmd.${this.#sessionId}.${loopId}.answer`, new Uint8Array(), { strategy: "stall", stall: STALL_MS, maxWait: PROBE_MS });
          for await (const m of replies) {
            const other = m.headers?.get(ACTOR_HEADER);
            if (other && other !== mine && other < mine) {
              this.#deps.report(this.#sessionId, new CommandError("COMMAND_FAILED", `loop ${loopId} has a jetloop gate actor of its own: the attach does not answer there (one actor per loop)`));
              return false;
            }
          }
        } catch {
          // Only this attach answered, or none in time: it serves.
        }
        return true;
      })();
      this.#loops.set(loopId, p);
    }
    return p;
  }

  async #answer(loopId: string, data: Uint8Array): Promise<Reply> {
    let answer: Answer;
    try {
      answer = decodeAnswer(data);
    } catch (e) {
      return refused("COMMAND_INVALID", (e as Error).message);
    }
    const fingerprint = fingerprintOf(data);
    const first = this.#commands.get(answer.commandId);
    if (first !== undefined) {
      if (first.fingerprint !== fingerprint) return refused("COMMAND_INVALID", `command ${answer.commandId} was used for another answer`);
      const r = await first.reply;
      if (r.status === "ok") return { ...r, duplicate: true };
      // A refusal that took nothing (or an outcome not known yet) is not remembered: the repeat goes again.
    }
    const reply = this.#forward(loopId, answer, first !== undefined);
    this.#commands.set(answer.commandId, { fingerprint, reply });
    if (this.#commands.size > MEMORY) this.#commands.delete(this.#commands.keys().next().value!);
    return reply;
  }

  async #forward(loopId: string, answer: Answer, repeat: boolean): Promise<Reply> {
    const gate = await this.#gate(answer);
    if (gate === undefined || (gate.loopId ?? "_") !== loopId) return refused("GATE_UNKNOWN", `no gate ${answer.gateId ?? `for tool execution ${answer.toolExecutionId}`} was opened on loop ${loopId}`);
    const built = goGateBody(answer, gate);
    if ("status" in built) return built;
    const got = await this.#post(`/v1/sessions/${this.#sessionId}/gates/${gate.gateId}`, built.body);
    if ("refusal" in got) return got.refusal;
    const res = got.answer;
    if (res.status === 202) {
      const resolved = await this.#resolved(gate, Date.now() + this.#deps.resolvedWaitMs);
      if (resolved) return { ...resolved, control: gate.kind === "harness.permission" ? built.control : undefined, duplicate: false };
      return refused("COMMAND_TIMEOUT", `the runtime accepted the answer to gate ${gate.gateId}; its GateResolved is not in the journal yet: repeat the command to get the outcome`);
    }
    switch (res.code) {
      case "gate_not_found": {
        // Go drops a resolved gate from its directory: the journal says how it was resolved.
        const resolved = await this.#resolved(gate, 0);
        if (resolved === undefined) return refused("GATE_UNKNOWN", `the runtime has no open gate ${gate.gateId}`);
        // A repeat whose first try's outcome was not known, answered as it asked: that first try took effect.
        if (repeat && resolved.control === built.control) return { ...resolved, control: gate.kind === "harness.permission" ? built.control : undefined, duplicate: true };
        return { status: "refused", code: "GATE_RESOLVED", message: `gate ${gate.gateId} is resolved`, outcome: { ...resolved, control: undefined, duplicate: false } };
      }
      case "gate_not_ready":
        return refused("GATE_RESOLVED", `gate ${gate.gateId} is being resolved by another answer`);
      case "gate_action_invalid":
      case "gate_kind_mismatch":
      case "invalid_body":
        return refused("COMMAND_INVALID", `the runtime refused the answer: ${res.code}`);
      case "session_not_found":
        return refused("COMMAND_FAILED", `the runtime does not host session ${this.#sessionId} live (its gates are answered where it runs)`);
      default:
        if (res.status === 503 || res.retryable) return refused("COMMAND_TIMEOUT", `the runtime is busy (${res.status} ${res.code ?? ""}): retry`);
        return refused("COMMAND_FAILED", `the runtime answered ${res.status}${res.code ? ` ${res.code}` : ""}`);
    }
  }

  /** POSTs to the runtime within the in-flight bound; a refusal when it cannot be asked or gave no answer. */
  async #post(path: string, body: string): Promise<{ answer: GoAnswer } | { refusal: Reply & { message: string } }> {
    const refusal = (code: Parameters<typeof refused>[0], message: string) => ({ refusal: refused(code, message) as Reply & { message: string } });
    if (SessionAnswers.inFlight >= this.#deps.maxInFlight) return refusal("COMMAND_TIMEOUT", `${this.#deps.maxInFlight} commands are being forwarded to the runtime: retry`);
    SessionAnswers.inFlight++;
    try {
      return { answer: await this.#deps.http.post(path, body) };
    } catch (e) {
      if (!(e instanceof GoHttpError)) throw e;
      this.#deps.report(this.#sessionId, e);
      // Unreachable: not sent. Timed out: perhaps applied; a repeat of the command finds out (a gate is resolved once).
      if (e.problem === "unreachable" || e.problem === "timeout") return refusal("COMMAND_TIMEOUT", `${e.message}: retry`);
      return refusal("COMMAND_FAILED", e.message);
    } finally {
      SessionAnswers.inFlight--;
    }
  }

  /** The gate named by the answer, from its GateOpened in the journal. */
  async #gate(answer: Answer): Promise<KnownGate | undefined> {
    for await (const { event: e } of this.#deps.bus.session(this.#sessionId).replay({ enduring: "all", types: ["GateOpened"] })) {
      if (e.type !== "GateOpened" || e.gate?.id === undefined) continue;
      const teid = e.gate.subject?.toolExecutionId;
      if (answer.gateId !== undefined ? e.gate.id === answer.gateId && (answer.toolExecutionId === undefined || teid === answer.toolExecutionId) : teid === answer.toolExecutionId) {
        return { gateId: e.gate.id, loopId: e.loopId, kind: e.gate.kind, controls: (e.gate.prompt?.controls ?? []).flatMap((c) => (c.action ? [c.action] : [])), toolExecutionId: teid };
      }
    }
    return undefined;
  }

  /** The gate's GateResolved in the journal, polled until `deadline` (ms since the epoch), as an outcome. */
  async #resolved(gate: KnownGate, deadline: number): Promise<(Extract<Reply, { status: "ok" }> & { control?: string | undefined }) | undefined> {
    for (;;) {
      for await (const { event: e, journalSeq } of this.#deps.bus.session(this.#sessionId).replay({ enduring: "all", types: ["GateResolved"] })) {
        if (e.type === "GateResolved" && e.gateId === gate.gateId && e.loopId === gate.loopId) {
          return { status: "ok", gateId: gate.gateId, toolExecutionId: gate.toolExecutionId, action: e.reason === "answered" ? effectOf(gate.kind, e.action) : (e.reason ?? "answered"), control: e.action, journalSeq, duplicate: false };
        }
      }
      if (Date.now() >= deadline || this.#closed) return undefined;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async #input(c: { readonly commandId: string; readonly blocks: ContentBlock[] }): Promise<{ ok: true } | { ok: false; reason: string }> {
    const got = await this.#post(`/v1/sessions/${this.#sessionId}/input`, goInputBody(c.blocks));
    if ("refusal" in got) throw new Error(got.refusal.message);
    if (got.answer.status === 200) return { ok: true };
    return { ok: false, reason: `the runtime answered ${got.answer.status}${got.answer.code ? ` ${got.answer.code}` : ""}` };
  }

  async #interrupt(): Promise<{ interrupted: boolean }> {
    const got = await this.#post(`/v1/sessions/${this.#sessionId}/interrupt`, "{}");
    if ("refusal" in got) throw new Error(got.refusal.message);
    if (got.answer.status === 200) return { interrupted: (got.answer.body as { interrupted?: unknown } | undefined)?.interrupted === true };
    throw new Error(`the runtime answered ${got.answer.status}${got.answer.code ? ` ${got.answer.code}` : ""}`);
  }
}
