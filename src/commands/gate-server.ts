/**
 * The loop actor's side of the answer path. It opens gates (publishing the durable
 * request and a GateOpened), serves answer commands on its command subject, and on a
 * valid answer publishes GateResolved (and PermissionDecided for a permission) before
 * replying. Answers are idempotent by command id; a second answer to a resolved gate
 * is refused with GATE_RESOLVED.
 */
import type { Msg, Subscription } from "@nats-io/transport-node";
import type { BusContext } from "../bus-context.js";
import { ConnectionClosedError } from "../errors.js";
import { createEvent } from "../events/factories.js";
import { newId } from "../events/ids.js";
import type { JetloopEvent, PermissionEffect } from "../events/catalogue.js";
import type { PermissionRequest } from "../events/request.js";
import { commandSubject } from "../subjects/subjects.js";
import { failureReply, GateBook, type GateState, inputPrompt, NO_ANSWER, openedGate, permissionPrompt, resolutionOf, type StepCoordinates } from "./gate-rules.js";
import { ANSWER_COMMAND, type Answer, encodeReply, type Reply } from "./protocol.js";

export type { StepCoordinates } from "./gate-rules.js";

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

interface OpenGate extends GateState {
  readonly settle: (answer: Answer | undefined, journalSeq: number) => void;
  timer?: NodeJS.Timeout;
}

// The constructor is private, so a gate server is handed out serving, by serveGates() only.
let start: (bus: BusContext<JetloopEvent>, sessionId: string, loopId: string) => Promise<GateServer>;

/** Starts serving answers for one loop (`bus.serveGates`): resolves once its command subscription is on the server. */
export function serveGates(bus: BusContext<JetloopEvent>, sessionId: string, loopId: string): Promise<GateServer> {
  return start(bus, sessionId, loopId);
}

export class GateServer {
  static {
    start = async (bus, sessionId, loopId) => {
      const server = new GateServer(bus, sessionId, loopId);
      const subject = commandSubject(bus.namespace, sessionId, loopId, ANSWER_COMMAND);
      server.#sub = bus.nc.subscribe(subject, { callback: (err, msg) => (err ? undefined : server.#onCommand(msg)) });
      await bus.nc.flush();
      return server;
    };
  }

  readonly #bus: BusContext<JetloopEvent>;
  readonly #sessionId: string;
  readonly #loopId: string;
  readonly #gates = new GateBook<OpenGate>();
  #sub: Subscription | undefined;

  private constructor(bus: BusContext<JetloopEvent>, sessionId: string, loopId: string) {
    this.#bus = bus;
    this.#sessionId = sessionId;
    this.#loopId = loopId;
  }

  /** Publishes PermissionRequested and opens a permission gate; resolves with the decision. */
  async requestPermission(gate: PermissionGate): Promise<PermissionAnswer> {
    const gateId = newId();
    const coords = this.#coords(gate);
    const descriptions = gate.request.requirements?.map((r) => r.description);
    const answered = this.#waitFor(gateId, "permission", gate, undefined, descriptions);
    await this.#bus.publish(createEvent("PermissionRequested", { ...coords, toolExecutionId: gate.toolExecutionId, request: gate.request }));
    await this.#bus.publish(createEvent("GateOpened", { ...coords, gate: openedGate(gateId, "permission", gate, permissionPrompt(gate.request, gate.title)) }));
    const { answer, journalSeq } = await answered;
    if (answer?.kind === "permission") return { effect: answer.effect, reason: answer.reason, gateId, journalSeq, answered: true };
    return { effect: "deny", reason: NO_ANSWER, gateId, journalSeq, answered: false };
  }

  /** Publishes UserInputRequested and opens an ask-user gate; resolves with the answer. */
  async requestInput(gate: InputGate): Promise<InputAnswer> {
    const gateId = newId();
    const coords = this.#coords(gate);
    const answered = this.#waitFor(gateId, "input", gate, gate.choices, undefined);
    await this.#bus.publish(createEvent("UserInputRequested", { ...coords, toolExecutionId: gate.toolExecutionId, question: gate.question, choices: gate.choices }));
    await this.#bus.publish(createEvent("GateOpened", { ...coords, gate: openedGate(gateId, "input", gate, inputPrompt(gate.question, gate.choices)) }));
    const { answer } = await answered;
    return { answer: answer?.kind === "input" ? answer.answer : undefined, gateId, answered: answer !== undefined };
  }

  /** Stops serving; open gates are left to time out or to a later actor. */
  async close(): Promise<void> {
    this.#sub?.unsubscribe();
    this.#sub = undefined;
    for (const g of this.#gates.closeAll()) clearTimeout(g.timer);
    await Promise.resolve();
  }

  #coords(c: StepCoordinates) {
    return { sessionId: this.#sessionId, loopId: this.#loopId, turnId: c.turnId, stepId: c.stepId };
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
          if (!this.#gates.expire(gate)) return;
          this.#resolve(gate, undefined).then(
            (seq) => gate.settle(undefined, seq),
            (e: unknown) => reject(e instanceof Error ? e : new ConnectionClosedError()),
          );
        }, c.timeoutMs);
      }
      this.#gates.open(gate);
    });
  }

  /** Publishes the journal record of a resolution; returns the sequence that settles the gate. */
  async #resolve(gate: OpenGate, a: Answer | undefined): Promise<number> {
    const coords = this.#coords(gate);
    const { resolved, decided } = resolutionOf(gate, a);
    const closed = await this.#bus.publish(createEvent("GateResolved", { ...coords, ...resolved }));
    if (!decided) return closed.journalSeq;
    return (await this.#bus.publish(createEvent("PermissionDecided", { ...coords, ...decided }))).journalSeq;
  }

  #onCommand(msg: Msg): void {
    void this.#handle(msg).then(
      (reply) => msg.respond(encodeReply(reply)),
      (e: unknown) => {
        this.#bus.log.warn({ code: (e as { code?: string }).code }, "answer command failed");
        msg.respond(encodeReply(failureReply(e)));
      },
    );
  }

  async #handle(msg: Msg): Promise<Reply> {
    const verdict = this.#gates.judge(msg.data);
    if ("reply" in verdict) return verdict.reply;
    const { resolve: gate, answer } = verdict;
    clearTimeout(gate.timer);
    let journalSeq: number;
    try {
      journalSeq = await this.#resolve(gate, answer);
    } catch (e) {
      this.#gates.reopen(gate);
      throw e;
    }
    const outcome = this.#gates.settle(gate, answer, journalSeq);
    gate.settle(answer, journalSeq);
    return outcome;
  }
}
