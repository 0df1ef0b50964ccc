/**
 * The loop actor's side of the answer path. It opens gates (publishing the durable
 * request and a GateOpened), serves answer commands on its command subject, and on a
 * valid answer publishes GateResolved (and PermissionDecided for a permission) before
 * replying. Answers are idempotent by command id; a second answer to a resolved gate
 * is refused with GATE_RESOLVED.
 */
import type { Msg, Subscription } from "@nats-io/transport-node";
import type { BusContext } from "../bus-context.js";
import { CommandError, ConnectionClosedError } from "../errors.js";
import { createEvent } from "../events/factories.js";
import { AGENCY_USER } from "../events/header.js";
import { newId } from "../events/ids.js";
import type { JetloopEvent, PermissionEffect } from "../events/catalogue.js";
import type { GateAudit } from "../events/gate.js";
import type { PermissionRequest } from "../events/request.js";
import { commandSubject } from "../subjects/subjects.js";
import { ANSWER_COMMAND, type Answer, type AnswerOutcome, decodeAnswer, encodeReply, type Reply } from "./protocol.js";

export interface StepCoordinates {
  readonly turnId: string;
  readonly stepId: string;
  readonly toolExecutionId: string;
  /**
   * The model provider's id of the tool call (`toolu_…`), recorded in the gate's subject:
   * the one link from a StepDone's messages to the tool execution.
   */
  readonly toolUseId?: string;
}

export interface PermissionGate extends StepCoordinates {
  readonly request: PermissionRequest;
  readonly title?: string;
  /** Deny (fail closed) when nobody answers in time. Default: wait forever. */
  readonly timeoutMs?: number;
}

export interface InputGate extends StepCoordinates {
  readonly question: string;
  readonly choices?: string[];
  readonly timeoutMs?: number;
}

export interface PermissionAnswer {
  readonly effect: PermissionEffect;
  readonly reason?: string | undefined;
  readonly gateId: string;
  /** Journal sequence of the PermissionDecided. */
  readonly journalSeq: number;
  /** False when the gate timed out and was denied without an answer. */
  readonly answered: boolean;
}

export interface InputAnswer {
  readonly answer: string | undefined;
  readonly gateId: string;
  readonly answered: boolean;
}

interface OpenGate extends StepCoordinates {
  readonly gateId: string;
  readonly kind: "permission" | "input";
  readonly choices?: string[] | undefined;
  /** What the audit of a permission gate's resolution records. */
  readonly requirementDescriptions?: string[] | undefined;
  readonly settle: (answer: Answer | undefined, journalSeq: number) => void;
  timer?: NodeJS.Timeout;
}

const MEMORY = 10_000;

// The runtime's permission controls: the gate's actions are these words.
const APPROVE = "Approve";
const DENY = "Deny";
const PERMISSION_CONTROLS = [
  { action: APPROVE, label: APPROVE },
  { action: DENY, label: DENY },
];

function remember<K, V>(map: Map<K, V>, key: K, value: V): void {
  map.set(key, value);
  if (map.size > MEMORY) map.delete(map.keys().next().value!);
}

export class GateServer {
  readonly #bus: BusContext<JetloopEvent>;
  readonly #sessionId: string;
  readonly #loopId: string;
  readonly #open = new Map<string, OpenGate>();
  readonly #resolved = new Map<string, Reply>();
  readonly #commands = new Map<string, Reply>();
  #sub: Subscription | undefined;

  private constructor(bus: BusContext<JetloopEvent>, sessionId: string, loopId: string) {
    this.#bus = bus;
    this.#sessionId = sessionId;
    this.#loopId = loopId;
  }

  /** Starts serving answers for one loop. */
  static async start(bus: BusContext<JetloopEvent>, sessionId: string, loopId: string): Promise<GateServer> {
    const server = new GateServer(bus, sessionId, loopId);
    const subject = commandSubject(bus.namespace, sessionId, loopId, ANSWER_COMMAND);
    server.#sub = bus.nc.subscribe(subject, { callback: (err, msg) => (err ? undefined : server.#onCommand(msg)) });
    await bus.nc.flush();
    return server;
  }

  /** Publishes PermissionRequested and opens a permission gate; resolves with the decision. */
  async requestPermission(gate: PermissionGate): Promise<PermissionAnswer> {
    const gateId = newId();
    const coords = this.#coords(gate);
    const descriptions = gate.request.requirements?.map((r) => r.description);
    const answered = this.#waitFor(gateId, "permission", gate, undefined, descriptions);
    await this.#bus.publish(createEvent("PermissionRequested", { ...coords, toolExecutionId: gate.toolExecutionId, request: gate.request }));
    await this.#bus.publish(
      createEvent("GateOpened", {
        ...coords,
        gate: {
          id: gateId,
          kind: "harness.permission",
          resolver: "loop",
          blocks: "tool_call",
          effect: "resume",
          subject: this.#subject(gate),
          prompt: { title: gate.title ?? gate.request.summary ?? gate.request.toolName, controls: PERMISSION_CONTROLS },
        },
      }),
    );
    const { answer, journalSeq } = await answered;
    if (answer?.kind === "permission") return { effect: answer.effect, reason: answer.reason, gateId, journalSeq, answered: true };
    return { effect: "deny", reason: "no answer in time", gateId, journalSeq, answered: false };
  }

  /** Publishes UserInputRequested and opens an ask-user gate; resolves with the answer. */
  async requestInput(gate: InputGate): Promise<InputAnswer> {
    const gateId = newId();
    const coords = this.#coords(gate);
    const answered = this.#waitFor(gateId, "input", gate, gate.choices, undefined);
    await this.#bus.publish(createEvent("UserInputRequested", { ...coords, toolExecutionId: gate.toolExecutionId, question: gate.question, choices: gate.choices }));
    await this.#bus.publish(
      createEvent("GateOpened", {
        ...coords,
        gate: {
          id: gateId,
          kind: "harness.ask_user",
          resolver: "loop",
          blocks: "tool_call",
          effect: "resume",
          subject: this.#subject(gate),
          prompt: { body: gate.question, controls: gate.choices?.map((c) => ({ action: c, label: c })) },
        },
      }),
    );
    const { answer } = await answered;
    return { answer: answer?.kind === "input" ? answer.answer : undefined, gateId, answered: answer !== undefined };
  }

  /** Stops serving; open gates are left to time out or to a later actor. */
  async close(): Promise<void> {
    this.#sub?.unsubscribe();
    this.#sub = undefined;
    for (const g of this.#open.values()) clearTimeout(g.timer);
    this.#open.clear();
    await Promise.resolve();
  }

  #coords(c: StepCoordinates) {
    return { sessionId: this.#sessionId, loopId: this.#loopId, turnId: c.turnId, stepId: c.stepId };
  }

  #subject(c: StepCoordinates) {
    return { toolExecutionId: c.toolExecutionId, toolUseId: c.toolUseId, turnId: c.turnId, stepId: c.stepId };
  }

  #waitFor(
    gateId: string,
    kind: OpenGate["kind"],
    c: StepCoordinates & { timeoutMs?: number },
    choices: string[] | undefined,
    requirementDescriptions: string[] | undefined,
  ) {
    return new Promise<{ answer: Answer | undefined; journalSeq: number }>((resolve, reject) => {
      const gate: OpenGate = {
        gateId,
        kind,
        choices,
        requirementDescriptions,
        turnId: c.turnId,
        stepId: c.stepId,
        toolExecutionId: c.toolExecutionId,
        settle: (answer, journalSeq) => resolve({ answer, journalSeq }),
      };
      if (c.timeoutMs !== undefined) {
        gate.timer = setTimeout(() => {
          if (this.#open.get(gateId) !== gate) return;
          this.#open.delete(gateId);
          this.#resolve(gate, undefined).then(
            (seq) => gate.settle(undefined, seq),
            (e: unknown) => reject(e instanceof Error ? e : new ConnectionClosedError()),
          );
        }, c.timeoutMs);
      }
      this.#open.set(gateId, gate);
    });
  }

  #find(a: Answer): OpenGate | undefined {
    if (a.gateId) return this.#open.get(a.gateId);
    for (const g of this.#open.values()) if (g.toolExecutionId === a.toolExecutionId) return g;
    return undefined;
  }

  /** Publishes the journal record of a resolution; returns the sequence that settles the gate. */
  async #resolve(gate: OpenGate, a: Answer | undefined): Promise<number> {
    const coords = { ...this.#coords(gate) };
    const cause = a ? { commandId: a.commandId, toolExecutionId: gate.toolExecutionId, agency: AGENCY_USER } : { toolExecutionId: gate.toolExecutionId };
    // A chosen choice is an action; free text stays with the actor, out of the journal.
    const action =
      a === undefined ? (gate.kind === "permission" ? DENY : undefined) : a.kind === "permission" ? (a.effect === "approve" ? APPROVE : DENY) : gate.choices ? a.answer : "answered";
    const audit: GateAudit =
      gate.kind === "permission"
        ? { kind: "permission" as const, data: { requirementDescriptions: gate.requirementDescriptions } }
        : { kind: "ask_user" as const, data: {} };
    const resolved = await this.#bus.publish(
      createEvent("GateResolved", {
        ...coords,
        cause,
        gateId: gate.gateId,
        resolver: "loop",
        reason: a ? "answered" : "policy_response",
        action,
        source: a ? { kind: "user" } : { kind: "policy", reason: "no answer in time" },
        audit,
      }),
    );
    if (gate.kind !== "permission") return resolved.journalSeq;
    const effect = a?.kind === "permission" ? a.effect : "deny";
    const decided = await this.#bus.publish(
      createEvent("PermissionDecided", { ...coords, cause, toolExecutionId: gate.toolExecutionId, effect, reason: a?.kind === "permission" ? a.reason : "no answer in time" }),
    );
    return decided.journalSeq;
  }

  #onCommand(msg: Msg): void {
    void this.#handle(msg).then(
      (reply) => msg.respond(encodeReply(reply)),
      (e: unknown) => {
        this.#bus.log.warn({ code: (e as { code?: string }).code }, "answer command failed");
        msg.respond(encodeReply({ status: "refused", code: "COMMAND_FAILED", message: e instanceof Error ? e.message.slice(0, 1000) : "failed" }));
      },
    );
  }

  async #handle(msg: Msg): Promise<Reply> {
    let a: Answer;
    try {
      a = decodeAnswer(msg.data);
    } catch (e) {
      if (e instanceof CommandError) return { status: "refused", code: "COMMAND_INVALID", message: e.message };
      throw e;
    }
    const earlier = this.#commands.get(a.commandId);
    if (earlier) return earlier.status === "ok" ? { ...earlier, duplicate: true } : earlier;
    const gate = this.#find(a);
    if (!gate) {
      const key = a.gateId ?? a.toolExecutionId!;
      return this.#resolved.has(key)
        ? { status: "refused", code: "GATE_RESOLVED", message: `gate ${key} is already resolved` }
        : { status: "refused", code: "GATE_UNKNOWN", message: `no open gate ${key} on this loop` };
    }
    if (a.kind !== gate.kind) return { status: "refused", code: "COMMAND_INVALID", message: `gate ${gate.gateId} asks for ${gate.kind}, not ${a.kind}` };
    if (a.kind === "input" && gate.choices && !gate.choices.includes(a.answer)) {
      return { status: "refused", code: "COMMAND_INVALID", message: "the answer is not one of the choices" };
    }
    this.#open.delete(gate.gateId); // claimed: a concurrent second answer sees it resolved
    clearTimeout(gate.timer);
    let journalSeq: number;
    try {
      journalSeq = await this.#resolve(gate, a);
    } catch (e) {
      this.#open.set(gate.gateId, gate); // nothing recorded: the gate stays answerable
      throw e;
    }
    const outcome: AnswerOutcome = {
      status: "ok",
      gateId: gate.gateId,
      toolExecutionId: gate.toolExecutionId,
      action: a.kind === "permission" ? a.effect : "answered",
      journalSeq,
      duplicate: false,
    };
    remember(this.#commands, a.commandId, outcome);
    remember(this.#resolved, gate.gateId, outcome);
    remember(this.#resolved, gate.toolExecutionId, outcome);
    gate.settle(a, journalSeq);
    return outcome;
  }
}
