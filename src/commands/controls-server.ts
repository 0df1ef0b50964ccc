/**
 * The loop actor's side of the session controls (`bus.session(id).serveControls`): it
 * serves input and interrupt commands for one session and hands each to its handler, once
 * per command id (controls-book.ts). What input means — queue it for the next turn, start
 * one — and what an interrupt cancels is the loop's; the server only carries them and
 * keeps the idempotency promise.
 */
import type { Msg, Subscription } from "@nats-io/transport-node";
import type { CommandsContext } from "./context.js";
import { CommandError, OptionsError } from "../errors.js";
import type { ContentBlock } from "../events/content.js";
import { sessionCommandSubject } from "../subjects/subjects.js";
import { ControlBook } from "./controls-book.js";
import {
  type ControlRefusal,
  decodeInputCommand,
  decodeInterruptCommand,
  encodeInputReply,
  encodeInterruptReply,
  INPUT_COMMAND,
  type InputReply,
  INTERRUPT_COMMAND,
  type InterruptReply,
} from "./controls-protocol.js";
import { tracedServe } from "../telemetry/index.js";

/** The loop took the input, or refused it (the HTTP gateway answers 500 "could not submit input", as Go does for a Submit error). */
export type InputResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };
/** Whether a running turn was cancelled (Go's Session.Interrupt). */
export interface InterruptResult {
  readonly interrupted: boolean;
}

/** What a session's loop actor does with the controls sent to it (`bus.session(id).serveControls`): input and interrupt, each called once per command id. */
export interface ControlHandlers {
  /** Human-authored input for the session; called once per command id. */
  input(command: { readonly commandId: string; readonly blocks: ContentBlock[] }): InputResult | Promise<InputResult>;
  /** Cancel the session's in-flight turns; called once per command id. */
  interrupt(command: { readonly commandId: string }): InterruptResult | Promise<InterruptResult>;
}

const CONTROLS_QUEUE = "controls";

type Settled<R> = { readonly effect: boolean; readonly reply: R };
const refused = (code: ControlRefusal["code"], message: string): ControlRefusal => ({ status: "refused", code, message: message.slice(0, 1000) || code });

/** A session's control server (`bus.session(id).serveControls(handlers)`). */
export interface ControlServer {
  /** Stops serving; commands in flight still get their replies. */
  close(): Promise<void>;
}

/** Starts serving the controls of one session: resolves once both subscriptions are on the server. */
export function serveControls<E>(bus: CommandsContext<E>, sessionId: string, handlers: ControlHandlers): Promise<ControlServer> {
  for (const name of ["input", "interrupt"] as const) {
    if (typeof (handlers as unknown as Record<string, unknown> | undefined)?.[name] !== "function") throw new OptionsError(name, "must be a function");
  }
  return new ControlServerImpl(bus, handlers).serve(bus, sessionId);
}

class ControlServerImpl implements ControlServer {
  readonly #log: CommandsContext<unknown>["log"];
  readonly #handlers: ControlHandlers;
  readonly #inputs = new ControlBook<InputReply>();
  readonly #interrupts = new ControlBook<InterruptReply>();
  #subs: Subscription[] = [];

  constructor(bus: CommandsContext<unknown>, handlers: ControlHandlers) {
    this.#log = bus.log;
    this.#handlers = handlers;
  }

  /** Subscribes to the session's two command subjects; `serveControls` awaits this before handing the server out. */
  async serve(bus: CommandsContext<unknown>, sessionId: string): Promise<this> {
    const on = (command: string, serve: (m: Msg) => Promise<Uint8Array>) =>
      bus.nc.subscribe(sessionCommandSubject(bus.settings.namespace, sessionId, command), {
        // A queue group: should a second server start for the session, each command still
        // reaches one handler (but a retry may reach the other, which does not know it).
        queue: CONTROLS_QUEUE,
        callback: (err, msg) => {
          if (err) return;
          void tracedServe(`session.${command}`, msg, () => serve(msg)).then((reply) => msg.respond(reply));
        },
      });
    this.#subs = [on(INPUT_COMMAND, (m) => this.#input(m)), on(INTERRUPT_COMMAND, (m) => this.#interrupt(m))];
    await bus.nc.flush();
    return this;
  }

  async close(): Promise<void> {
    for (const s of this.#subs) s.unsubscribe();
    this.#subs = [];
    await Promise.resolve();
  }

  async #input(msg: Msg): Promise<Uint8Array> {
    let c;
    try {
      c = decodeInputCommand(msg.data);
    } catch (e) {
      return encodeInputReply(invalid(e));
    }
    const { commandId, blocks } = c;
    const reply = await this.#once(this.#inputs, commandId, c.fingerprint, "input", async () => {
      const r = await this.#handlers.input({ commandId, blocks });
      if (r?.ok === true) return { effect: true, reply: { status: "ok", commandId, duplicate: false } };
      if (r?.ok === false && typeof r.reason === "string") return { effect: false, reply: refused("INPUT_REFUSED", r.reason) };
      throw new TypeError("the input handler returned neither { ok: true } nor { ok: false, reason }");
    });
    return encodeInputReply(reply);
  }

  async #interrupt(msg: Msg): Promise<Uint8Array> {
    let c;
    try {
      c = decodeInterruptCommand(msg.data);
    } catch (e) {
      return encodeInterruptReply(invalid(e));
    }
    const { commandId } = c;
    const reply = await this.#once(this.#interrupts, commandId, c.fingerprint, "interrupt", async () => {
      const r = await this.#handlers.interrupt({ commandId });
      if (typeof r?.interrupted !== "boolean") throw new TypeError("the interrupt handler did not return { interrupted: boolean }");
      return { effect: true, reply: { status: "ok", commandId, interrupted: r.interrupted, duplicate: false } };
    });
    return encodeInterruptReply(reply);
  }

  /** Runs a command once per id; a repeat waits for (and is marked as) the first outcome. */
  async #once<R extends InputReply | InterruptReply>(book: ControlBook<R>, commandId: string, fingerprint: string, what: string, run: () => Promise<Settled<R>>): Promise<R> {
    const admitted = book.admit(commandId, fingerprint, () =>
      run().catch((e: unknown): Settled<R> => {
        // The cause's text may carry the user's input: only its kind is logged.
        this.#log.warn({ command: what, err: (e as Error)?.name }, "session control handler failed");
        return { effect: false, reply: refused("COMMAND_FAILED", `the ${what} handler failed`) as R };
      }),
    );
    if (admitted.kind === "conflict") return refused("IDEMPOTENCY_CONFLICT", `command ${commandId} was used for another request`) as R;
    const { reply } = await admitted.outcome;
    return admitted.kind === "repeat" && reply.status === "ok" ? { ...reply, duplicate: true } : reply;
  }
}

function invalid(e: unknown): ControlRefusal {
  return refused("COMMAND_INVALID", e instanceof CommandError ? e.message : "malformed command");
}
