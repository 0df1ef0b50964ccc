/**
 * The loop actor's side of the answer path (README.md in this folder: what a resolution
 * writes, all or nothing, and how gates close): opens gates, serves answer commands, and
 * does the I/O around gate-rules.ts's decisions. The package exports the interface.
 */
import { headers, type Msg, type MsgHdrs, type Subscription } from "@nats-io/transport-node";
import type { CommandsContext } from "./context.js";
import { encodeValidated } from "../codec/codec.js";
import { CommandError, ConnectionClosedError, GateClosedError, isJetloopError, OptionsError, PublishIdClaimedError, ResolutionIncompleteError } from "../errors.js";
import { createEvent } from "../events/factories.js";
import { derivedId, newId } from "../events/ids.js";
import type { JetloopEvent, PermissionEffect } from "../events/catalogue.js";
import type { PermissionRequestInput } from "../events/request.js";
import { GateLedger, type LedgerGate } from "../projection/gate-ledger.js";
import { commandSubject } from "../subjects/subjects.js";
import { replay } from "../subscribe/replay.js";
import { requestFailure } from "./answer.js";
import {
  APPROVE_ALWAYS,
  effectOf,
  failureReply,
  GateBook,
  gateOptionsProblem,
  type GateState,
  inputPrompt,
  NO_ANSWER,
  openedGate,
  type PermissionAction,
  permissionPrompt,
  type Resolution,
  resolutionOf,
  type StepCoordinates,
} from "./gate-rules.js";
import { ANSWER_COMMAND, encodeReply, type Reply } from "./protocol.js";
import { parseServeGatesOptions, type ServeGatesOptions } from "./options.js";
import { tracedServe } from "../telemetry/index.js";

export type { PermissionAction, StepCoordinates } from "./gate-rules.js";

/** A permission gate to open (a gate server's `requestPermission`): the tool request, the controls offered, and how long to wait. */
export interface PermissionGate extends StepCoordinates {
  readonly request: PermissionRequestInput;
  readonly title?: string;
  /**
   * The controls offered, of the Go gate model's three: "Approve", "Approve always for
   * this workspace", "Deny". Default all three, as every Go permission gate. The chosen one
   * reaches the loop as `action`; "always" first persists the candidates the gate displayed
   * as workspace rules (`bus.rules`), so a later request they cover is approved without a gate.
   */
  readonly controls?: readonly PermissionAction[];
  /** Deny (fail closed) when nobody answers in time. Default: wait forever. */
  readonly timeoutMs?: number;
}

/** An input gate to open (a gate server's `requestInput`): the question, the answers allowed, and how long to wait. */
export interface InputGate extends StepCoordinates {
  readonly question: string;
  /** The answers allowed; at least one (an empty list is refused). Omit it for free text. */
  readonly choices?: string[];
  readonly timeoutMs?: number;
}

/** The decision on a permission gate: the effect (approve or deny), the control chosen, and why. */
export interface PermissionAnswer {
  readonly effect: PermissionEffect;
  /** The control chosen, e.g. "Approve always for this workspace"; "Deny" for a timeout; "Approve" when a workspace rule covered the request. */
  readonly action: PermissionAction;
  readonly reason?: string | undefined;
  /** The gate that asked; undefined when workspace rules covered every requirement and no gate opened. */
  readonly gateId: string | undefined;
  /** Journal sequence of the PermissionDecided. */
  readonly journalSeq: number;
  /** False when the gate timed out and was denied without an answer, or when no gate was needed (`byRule`). */
  readonly answered: boolean;
  /** True when workspace rules covered every requirement: approved without asking (reason `access_evaluated`, as the Go runtime journals it). */
  readonly byRule: boolean;
}

/** The answer to an input gate: the text chosen or typed, or none when the gate timed out. */
export interface InputAnswer {
  readonly answer: string | undefined;
  readonly gateId: string;
  readonly answered: boolean;
}

export type { ServeGatesOptions };

interface Settled {
  readonly resolution: Resolution;
  readonly journalSeq: number;
}

interface OpenGate extends GateState {
  readonly settle: (s: Settled) => void;
  readonly fail: (e: Error) => void;
  /**
   * Settles once the gate's own records (the request, GateOpened) are written, or rejects
   * with what failed. Whoever claims the gate waits for it before writing a resolution, so
   * a GateResolved never precedes its GateOpened in the journal.
   */
  readonly opened: Promise<void>;
  /** When its timeout fires (epoch ms), if it has one. */
  readonly deadline?: number | undefined;
  timer?: NodeJS.Timeout;
}

/** A loop's gate server (`bus.serveGates(sessionId, loopId)`): the loop actor's side of the answer path. */
export interface GateServer {
  /**
   * Publishes PermissionRequested and opens a permission gate; resolves with the decision.
   * Both records are built (and so checked) before the gate exists; if either cannot be
   * written the gate never became answerable and the call rejects with what failed.
   */
  requestPermission(gate: PermissionGate): Promise<PermissionAnswer>;
  /** Publishes UserInputRequested and opens an ask-user gate; resolves with the answer. Checked and written as requestPermission. */
  requestInput(gate: InputGate): Promise<InputAnswer>;
  /**
   * Stops serving and settles every pending request as the Go runtime settles a gate whose
   * owner goes away: its GateResolved `owner_closed` is journaled (no action, so no
   * decision) and the loop's `requestPermission`/`requestInput` rejects with
   * GateClosedError (`journaled` says whether the record was written). Resolutions already
   * being written finish first. Idempotent; `bus.close()` calls it.
   */
  close(): Promise<void>;
  /** The gates `closeOrphans` closed when this server started (their ids, in the order opened). */
  readonly orphansClosed: readonly string[];
}

/** Starts serving answers for one loop (`bus.serveGates`): resolves once its command subscription is on the server. */
export function serveGates(bus: CommandsContext<JetloopEvent>, sessionId: string, loopId: string, options: ServeGatesOptions = {}): Promise<GateServer> {
  return new GateServerImpl(bus, sessionId, loopId).serve(parseServeGatesOptions(options));
}

/** An event's coordinates on this server's loop. */
interface Coords {
  readonly sessionId: string;
  readonly loopId: string;
  readonly turnId: string;
  readonly stepId: string;
}

/** The Go runtime's reason for a decision made without a prompt (rules covered the request). */
const ACCESS_EVALUATED = "access_evaluated";

/** How often a decision whose GateResolved is written is tried again before the loop fails closed. */
const DECISION_ATTEMPTS = 3;
/** How soon a timeout whose write failed is tried again. */
const TIMEOUT_RETRY_MS = 1000;

/** How long a probe for a live actor waits for a reply (none at all is answered at once: no responders). */
const PROBE_TIMEOUT_MS = 2000;
/** How long successors starting at once wait, after the first reply, for each other's. */
const SUCCESSOR_STALL_MS = 250;
/** The reply header naming the actor that answered: its key (actorKey). */
const ACTOR_HEADER = "Jetloop-Gate-Actor";

/** An actor's key: when it subscribed (ms, fixed width), then its id; earlier keys sort first. */
function actorKey(subscribedAtMs: number, actorId: string): string {
  return `${String(subscribedAtMs).padStart(16, "0")}-${actorId}`;
}

class GateServerImpl implements GateServer {
  readonly #bus: CommandsContext<JetloopEvent>;
  readonly #sessionId: string;
  readonly #loopId: string;
  readonly #gates = new GateBook<OpenGate>();
  /** Replies of accepted commands still being resolved: repeats of their id wait on these. */
  readonly #inflight = new Map<string, Promise<Reply>>();
  /** Resolutions being written (answers, timeouts): close() waits for them. */
  readonly #writing = new Set<Promise<unknown>>();
  #sub: Subscription | undefined;
  #unregister: (() => void) | undefined;
  #closing: Promise<void> | undefined;
  #orphansClosed: readonly string[] = [];
  /** This actor's id, in its key on every reply (ACTOR_HEADER). */
  readonly #actorId = newId();
  /** The reply headers naming this actor (ACTOR_HEADER), once its key is taken. */
  readonly #named: Promise<MsgHdrs>;
  #name!: (h: MsgHdrs) => void;
  /**
   * Answers only probes (empty commands): until started (it has no gate yet), and from a
   * disconnect until, reconnected, it finds no other actor.
   */
  #probesOnly = true;
  #status: { stop?: () => void } | undefined;

  constructor(bus: CommandsContext<JetloopEvent>, sessionId: string, loopId: string) {
    this.#bus = bus;
    this.#sessionId = sessionId;
    this.#loopId = loopId;
    this.#named = new Promise((resolve) => (this.#name = resolve));
  }

  /**
   * Refuses a loop another actor serves, closes orphans if asked, then subscribes;
   * `serveGates` awaits this before handing the server out. Two actors on one loop would
   * both get every answer, and the one that does not know the gate could reply
   * GATE_UNKNOWN first while the other applied it.
   */
  async serve(options: ServeGatesOptions): Promise<this> {
    // Registered first: on a closed bus this throws before anything is set up.
    this.#unregister = this.#bus.onClose(() => this.close());
    try {
      await this.#requireNoOtherActor();
      this.#sub = this.#bus.nc.subscribe(this.#subject, { callback: (err, msg) => (err ? undefined : this.#onCommand(msg)) });
      await this.#bus.nc.flush();
      // The key is taken once the subscription is on the server, so whoever takes a later
      // key asks after it and is answered by it. Taken before, a successor whose subscription
      // was slow to arrive could sort first though one subscribed before it never saw it.
      const named = headers();
      named.set(ACTOR_HEADER, actorKey(Date.now(), this.#actorId));
      this.#name(named);
      if (options.closeOrphans) {
        await this.#standDownForAnEarlierSuccessor();
        this.#orphansClosed = await this.#closeOrphans();
      }
      if (this.#closing) throw new ConnectionClosedError("the bus closed while its gate server was starting");
      this.#probesOnly = false;
      this.#watchConnection();
    } catch (e) {
      // Closed under it (bus.close()): whatever step failed, the reason is the closed bus.
      const closedUnder = this.#closing !== undefined;
      await this.close();
      if (closedUnder && !isJetloopError(e, "CONNECTION_CLOSED")) throw new ConnectionClosedError("the bus closed while its gate server was starting", { cause: e });
      throw e;
    }
    return this;
  }

  async requestPermission(gate: PermissionGate): Promise<PermissionAnswer> {
    this.#checkOpen("controls", gate.controls, "permission", gate.timeoutMs);
    const coords = this.#coords(gate);
    // The Go evaluator's order: stored allow rules first; a request they cover entirely is
    // approved without a gate; otherwise the gate displays only the requirements left.
    // The request is checked whatever covers it: one the journal would refuse is refused here too.
    this.#check(createEvent("PermissionRequested", { ...coords, toolExecutionId: gate.toolExecutionId, request: gate.request }));
    const requirements = gate.request.requirements ?? [];
    const covered = requirements.length === 0 ? [] : await this.#covered(requirements);
    if (requirements.length > 0 && covered.every(Boolean)) return this.#approvedByRule(gate, coords);
    const request = covered.some(Boolean) ? { ...gate.request, requirements: requirements.filter((_, i) => !covered[i]) } : gate.request;
    const gateId = newId();
    const asked = createEvent("PermissionRequested", { ...coords, toolExecutionId: gate.toolExecutionId, request });
    const opened = createEvent("GateOpened", { ...coords, gate: openedGate(gateId, "permission", gate, permissionPrompt(request, gate.title, gate.controls)) });
    const descriptions = request.requirements?.map((r) => r.description);
    const candidates = request.requirements?.flatMap((r) => r.candidates ?? []);
    const { resolution: r, journalSeq } = await this.#open(gateId, "permission", gate, { controls: gate.controls, requirementDescriptions: descriptions, candidates }, [asked, opened]);
    if (r.reason === "answered" && r.answer.kind === "permission") {
      return { effect: effectOf(r.action!), action: r.action!, reason: r.answer.reason, gateId, journalSeq, answered: true, byRule: false };
    }
    return { effect: "deny", action: "Deny", reason: NO_ANSWER, gateId, journalSeq, answered: false, byRule: false };
  }

  /** Which requirements a workspace rule covers; a rules read that fails covers none (the gate asks: fail closed). */
  async #covered(requirements: readonly { kind: string; match: string }[]): Promise<boolean[]> {
    try {
      return await this.#bus.rules.covers(requirements);
    } catch (e) {
      this.#bus.log.warn({ code: (e as { code?: string }).code, err: e }, "could not read the workspace rules; asking");
      return requirements.map(() => false);
    }
  }

  /**
   * A request workspace rules cover entirely: approved without asking, journaled as the Go
   * runtime journals a decision no prompt made (`emitAccessDecided`): one PermissionDecided,
   * effect approve, reason `access_evaluated`, the tool's name as its subject, the request's
   * summary (else the tool's name) as its audit; no PermissionRequested, no gate.
   */
  async #approvedByRule(gate: PermissionGate, coords: Coords): Promise<PermissionAnswer> {
    const { toolName, summary } = gate.request;
    const decided = createEvent("PermissionDecided", { ...coords, toolExecutionId: gate.toolExecutionId, effect: "approve", reason: ACCESS_EVALUATED, subject: toolName, audit: summary ?? toolName });
    this.#check(decided);
    const { journalSeq } = await this.#bus.publish(decided);
    return { effect: "approve", action: "Approve", reason: ACCESS_EVALUATED, gateId: undefined, journalSeq, answered: false, byRule: true };
  }

  async requestInput(gate: InputGate): Promise<InputAnswer> {
    this.#checkOpen("choices", gate.choices, "input", gate.timeoutMs);
    const gateId = newId();
    const coords = this.#coords(gate);
    const asked = createEvent("UserInputRequested", { ...coords, toolExecutionId: gate.toolExecutionId, question: gate.question, choices: gate.choices });
    const opened = createEvent("GateOpened", { ...coords, gate: openedGate(gateId, "input", gate, inputPrompt(gate.question, gate.choices)) });
    const { resolution: r } = await this.#open(gateId, "input", gate, { choices: gate.choices }, [asked, opened]);
    const answer = r.reason === "answered" && r.answer.kind === "input" ? r.answer.answer : undefined;
    return { answer, gateId, answered: r.reason === "answered" };
  }

  /** Opens the gate in the book, writes its records in order, and waits for its resolution; a gate whose records fail is discarded. */
  async #open(
    gateId: string,
    kind: OpenGate["kind"],
    c: StepCoordinates & { timeoutMs?: number },
    extra: Pick<GateState, "controls" | "choices" | "requirementDescriptions" | "candidates">,
    records: JetloopEvent[],
  ): Promise<Settled> {
    for (const e of records) this.#check(e);
    let gate: OpenGate | undefined;
    let markOpened!: (failure?: Error) => void;
    const opened = new Promise<void>((resolve, reject) => {
      markOpened = (failure) => (failure === undefined ? resolve() : reject(failure));
    });
    opened.catch(() => undefined);
    const settled = new Promise<Settled>((resolve, reject) => {
      gate = {
        opened,
        gateId,
        kind,
        ...extra,
        turnId: c.turnId,
        stepId: c.stepId,
        toolExecutionId: c.toolExecutionId,
        settle: resolve,
        fail: reject,
        deadline: c.timeoutMs === undefined ? undefined : Date.now() + c.timeoutMs,
      };
    });
    // A close() may settle it before it is returned, and this call reports a write's failure instead.
    settled.catch(() => undefined);
    // Open before GateOpened is written: an answer that follows it at once finds the gate
    // (and waits for `opened` before resolving it).
    this.#gates.open(gate!);
    try {
      for (const e of records) await this.#bus.publish(e);
    } catch (e) {
      this.#gates.discard(gate!);
      markOpened(e instanceof Error ? e : new Error(String(e)));
      throw e;
    }
    markOpened();
    this.#arm(gate!);
    return settled;
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    const sub = this.#stopWatching();
    if (sub !== undefined) {
      // Closed once the server has dropped the subscription: until then a successor's probe
      // still reaches it, is not answered, and the successor is refused after its timeout.
      // Bounded: a connection that is down answers no flush (and nothing reaches it either).
      await bounded(this.#bus.nc.flush(), PROBE_TIMEOUT_MS);
    }
    await Promise.allSettled([...this.#writing]);
    await Promise.allSettled(
      this.#gates.closeAll().map(async (gate) => {
        clearTimeout(gate.timer);
        // A gate whose records failed was never public: its request already rejected with that.
        if (!(await this.#opened(gate))) return;
        const resolution: Resolution = { reason: "owner_closed" };
        let journaled = false;
        try {
          const seq = await this.#write(gate, resolution);
          this.#gates.settle(gate, resolution, seq);
          journaled = true;
          gate.fail(new GateClosedError(gate.gateId, "owner_closed", true));
        } catch (e) {
          this.#bus.log.warn({ gateId: gate.gateId, code: (e as { code?: string }).code }, "could not journal a gate closed by its owner");
          gate.fail(new GateClosedError(gate.gateId, "owner_closed", journaled, { cause: e }));
        }
      }),
    );
  }

  get orphansClosed(): readonly string[] {
    return this.#orphansClosed;
  }

  /**
   * Before this server subscribes: closes, as `abandoned`, every gate of this loop whose
   * GateOpened is in the journal with no GateResolved from this loop (a dead actor's);
   * returns their ids. Refused with CommandError COMMAND_FAILED when an actor answers on
   * the loop's command subject (it is alive: its gates are its own).
   */
  async #closeOrphans(): Promise<string[]> {
    const ledger = new GateLedger();
    const filter = { sessions: [this.#sessionId], enduring: { loops: [this.#loopId] }, types: ["GateOpened", "GateResolved"] };
    for await (const d of replay(this.#bus, filter)) ledger.apply(d.event);
    const closed: string[] = [];
    for (const g of ledger.open({ loopId: this.#loopId })) {
      if (g.turnId === undefined || g.stepId === undefined) continue;
      // One id per closed orphan: a second successor closing it at once is the same message, stored once.
      const eventId = derivedId(this.#bus.settings.namespace, this.#sessionId, g.gateId, "abandoned");
      const close = (id: string) => this.#bus.publish(createEvent("GateResolved", { eventId: id, sessionId: this.#sessionId, loopId: this.#loopId, turnId: g.turnId!, stepId: g.stepId!, ...abandoned(g) }));
      try {
        await close(eventId);
      } catch (e) {
        if (!(e instanceof PublishIdClaimedError)) throw e;
        // The derived id is predictable (from the session and a gate id any viewer sees), so
        // another session's writer can hold it in the stream-wide duplicate window, and the
        // close would never be stored. A fresh id cannot be claimed ahead; the price is that
        // two successors racing on such a gate may both journal its close (a second close of
        // a resolved gate changes nothing).
        this.#bus.log.warn({ gateId: g.gateId, eventId, heldAtSeq: e.heldAtSeq, heldBySubject: e.heldBySubject }, "the orphan close's id is held by another message; closing under a new id");
        await close(newId());
      }
      closed.push(g.gateId);
    }
    return closed;
  }

  get #subject(): string {
    return commandSubject(this.#bus.settings.namespace, this.#sessionId, this.#loopId, ANSWER_COMMAND);
  }

  async #requireNoOtherActor(): Promise<void> {
    try {
      // Any reply (an empty command is refused as invalid) means an actor is alive.
      await this.#bus.nc.request(this.#subject, new Uint8Array(), { timeout: PROBE_TIMEOUT_MS });
    } catch (e) {
      const failure = requestFailure(e, this.#sessionId, this.#loopId, PROBE_TIMEOUT_MS);
      if (failure.code === "COMMAND_NO_LISTENER") return;
      throw failure;
    }
    throw new CommandError("COMMAND_FAILED", `an actor already serves session ${this.#sessionId} loop ${this.#loopId}: its gates are its own (one actor per loop)`);
  }

  /**
   * Successors started at once can all find no live actor before they subscribe. Once
   * subscribed, each asks who answers on the loop (every reply carries its actor's key: when
   * it subscribed, then its id) and stands down if one subscribed before it: the first
   * subscribed is seen by every later one's question, so one serves. Not seen: a reply later
   * than SUCCESSOR_STALL_MS after the first, or hosts whose clocks differ by more than the
   * successors' start times do.
   */
  async #standDownForAnEarlierSuccessor(): Promise<void> {
    const mine = (await this.#named).get(ACTOR_HEADER);
    const actors = await this.#actorsAnswering();
    if (actors.some((a) => a < mine)) {
      throw new CommandError("COMMAND_FAILED", `another successor started serving session ${this.#sessionId} loop ${this.#loopId} at the same time; this one stood down (one actor per loop)`);
    }
  }

  /** The keys of every actor answering on the loop's subject (this one's too), waiting SUCCESSOR_STALL_MS after the last. */
  async #actorsAnswering(): Promise<string[]> {
    const actors: string[] = [];
    try {
      const replies = await this.#bus.nc.requestMany(this.#subject, new Uint8Array(), { strategy: "stall", stall: SUCCESSOR_STALL_MS, maxWait: PROBE_TIMEOUT_MS });
      for await (const m of replies) {
        const actor = m.headers?.get(ACTOR_HEADER);
        if (actor) actors.push(actor);
      }
    } catch (e) {
      throw requestFailure(e, this.#sessionId, this.#loopId, PROBE_TIMEOUT_MS);
    }
    return actors;
  }

  /**
   * While its connection is down a successor may find no actor and serve (closing this one's
   * gates as abandoned); NATS.js subscribes this one again when it reconnects. So from a
   * disconnect it answers only probes, and once reconnected asks who answers: alone, it
   * serves again; else it was replaced and stops.
   */
  #watchConnection(): void {
    const status = this.#bus.nc.status() as AsyncIterable<{ type: string }> & { stop?: () => void };
    this.#status = status;
    void (async () => {
      for await (const s of status) {
        if (s.type === "disconnect") this.#probesOnly = true;
        else if (s.type === "reconnect" && this.#probesOnly) await this.#resumeOrStop();
      }
    })().catch(() => undefined);
  }

  async #resumeOrStop(): Promise<void> {
    if (this.#closing) return;
    const mine = (await this.#named).get(ACTOR_HEADER);
    let others: string[];
    try {
      others = (await this.#actorsAnswering()).filter((a) => a !== mine);
    } catch {
      return; // cannot tell (down again): stays suspended until the next reconnect
    }
    if (others.length === 0) {
      this.#probesOnly = false;
      return;
    }
    // Replaced: stop answering and fail the loop's pending requests closed, writing nothing
    // (a successor that closed orphans journaled them abandoned; this one no longer serves).
    this.#bus.log.warn({ sessionId: this.#sessionId, loopId: this.#loopId }, "another gate actor serves the loop since this one's connection was down; this one stopped");
    this.#closing ??= Promise.resolve();
    this.#stopWatching();
    const replaced = `another actor serves session ${this.#sessionId} loop ${this.#loopId} since this one's connection was down (one actor per loop)`;
    for (const gate of this.#gates.closeAll()) {
      clearTimeout(gate.timer);
      gate.fail(new CommandError("COMMAND_FAILED", `${replaced}: gate ${gate.gateId} is no longer answered here`));
    }
  }

  /** Unsubscribes and stops watching the connection. */
  #stopWatching(): Subscription | undefined {
    const sub = this.#sub;
    this.#sub = undefined;
    sub?.unsubscribe();
    this.#status?.stop?.();
    this.#status = undefined;
    this.#unregister?.();
    return sub;
  }

  #checkOpen(option: "controls" | "choices", list: readonly string[] | undefined, kind: GateState["kind"], timeoutMs: number | undefined): void {
    if (this.#closing) throw new ConnectionClosedError("the gate server is closed");
    const problem = gateOptionsProblem(kind, list);
    if (problem) throw new OptionsError(option, problem.message);
    if (timeoutMs !== undefined && (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0)) throw new OptionsError("timeoutMs", "must be a non-negative integer");
  }

  #coords(c: StepCoordinates): Coords {
    return { sessionId: this.#sessionId, loopId: this.#loopId, turnId: c.turnId, stepId: c.stepId };
  }

  /**
   * (Re)starts a gate's timeout for the time it has left. Not once close() began: it took
   * the gate while its records were being written, and a timer armed after that would hold
   * the process (and the closed gate) until the deadline.
   */
  #arm(gate: OpenGate): void {
    if (gate.deadline === undefined || this.#closing !== undefined) return;
    gate.timer = setTimeout(() => this.#expire(gate), Math.max(0, gate.deadline - Date.now()));
  }

  #expire(gate: OpenGate): void {
    if (this.#gates.expire(gate)) void this.#track(this.#resolveTimeout(gate));
  }

  async #resolveTimeout(gate: OpenGate): Promise<void> {
    const resolution: Resolution = { reason: "policy_response" };
    try {
      const seq = await this.#write(gate, resolution);
      this.#gates.settle(gate, resolution, seq);
      gate.settle({ resolution, journalSeq: seq });
    } catch (e) {
      if (e instanceof ResolutionIncompleteError) {
        this.#gates.settle(gate, resolution, e.resolvedSeq, e.message);
        gate.fail(e);
        return;
      }
      if (isJetloopError(e, "CONNECTION_CLOSED")) {
        // Nothing can be written any more: the loop fails closed; the gate stays claimed.
        gate.fail(e);
        return;
      }
      // Nothing written: the gate is open again and its timeout tries again, unless closing.
      this.#gates.reopen(gate);
      this.#bus.log.warn({ gateId: gate.gateId, code: (e as { code?: string }).code }, "could not journal a gate's timeout; retrying");
      if (!this.#closing) gate.timer = setTimeout(() => this.#expire(gate), TIMEOUT_RETRY_MS);
    }
  }

  #track<T>(p: Promise<T>): Promise<T> {
    this.#writing.add(p);
    void p.finally(() => this.#writing.delete(p)).catch(() => undefined);
    return p;
  }

  /**
   * Writes a claimed gate's resolution, all or nothing: both records are built and checked
   * first; a failure before GateResolved is written throws what failed (nothing written),
   * one after throws ResolutionIncompleteError. Returns the sequence that settles the gate.
   */
  async #write(gate: OpenGate, r: Resolution): Promise<number> {
    const coords = this.#coords(gate);
    const { resolved, decided } = resolutionOf(gate, r);
    const closing = createEvent("GateResolved", { ...coords, ...resolved });
    const decision = decided && createEvent("PermissionDecided", { ...coords, ...decided });
    this.#check(closing);
    if (decision) this.#check(decision);
    const closed = await this.#bus.publish(closing);
    if (!decision) return closed.journalSeq;
    let last: unknown;
    for (let attempt = 0; attempt < DECISION_ATTEMPTS; attempt++) {
      try {
        return (await this.#bus.publish(decision)).journalSeq;
      } catch (e) {
        last = e;
        if (isJetloopError(e, "CONNECTION_CLOSED")) break;
      }
    }
    this.#bus.log.error({ gateId: gate.gateId, code: (last as { code?: string }).code }, "gate resolved but its decision could not be journaled; failing closed");
    throw new ResolutionIncompleteError(gate.gateId, closed.journalSeq, { cause: last });
  }

  /** Waits for a claimed gate's own records: true once written; false when they failed (the gate is gone from the book). */
  async #opened(gate: OpenGate): Promise<boolean> {
    try {
      await gate.opened;
      return true;
    } catch {
      return false;
    }
  }

  /** Throws what publishing `event` would throw for its content (invalid, too large), before anything is written. */
  #check(event: JetloopEvent): void {
    // The journal writer's own rule (publisher.ts): maxEventBytes, lowered by the room its headers take.
    encodeValidated(event, { registry: this.#bus.registry, maxBytes: this.#bus.eventCap() });
  }

  #onCommand(msg: Msg): void {
    // Until serve() returns this server has no gate: it answers only probes (empty), so that
    // a successor standing down never replies GATE_UNKNOWN to an answer the other applies.
    if (this.#probesOnly && msg.data.length > 0) return;
    const replied = tracedServe("gate.answer", msg, () => this.#handle(msg)).then(encodeReply, (e: unknown) => {
      this.#bus.log.warn({ code: (e as { code?: string }).code }, "answer command failed");
      return encodeReply(failureReply(e));
    });
    // Every reply names this actor (successors starting at once tell each other apart by it):
    // a probe that comes before the key is taken is answered once it is.
    void Promise.all([replied, this.#named]).then(([data, named]) => msg.respond(data, { headers: named }));
  }

  async #handle(msg: Msg): Promise<Reply> {
    const verdict = this.#gates.judge(msg.data);
    if ("reply" in verdict) return verdict.reply;
    if ("wait" in verdict) {
      const first = await this.#inflight.get(verdict.wait)!;
      return first.status === "ok" ? { ...first, duplicate: true } : first;
    }
    const replying = this.#track(this.#answer(verdict.resolve, verdict.resolution));
    const id = verdict.resolution.answer.commandId;
    this.#inflight.set(id, replying);
    void replying.finally(() => this.#inflight.delete(id)).catch(() => undefined);
    return replying;
  }

  async #answer(gate: OpenGate, resolution: Extract<Resolution, { reason: "answered" }>): Promise<Reply> {
    clearTimeout(gate.timer);
    if (!(await this.#opened(gate))) {
      this.#gates.forgetCommand(resolution.answer.commandId);
      return failureReply(new Error(`gate ${gate.gateId} could not be opened: nothing was written`));
    }
    let journalSeq: number;
    try {
      // "Always": the rules persisted before the approval is journaled (Go's Resolve writes
      // them before any grant); if they cannot be, nothing is journaled and the gate stays open.
      if (resolution.action === APPROVE_ALWAYS) await this.#bus.rules.write(gate.candidates ?? [], { sessionId: this.#sessionId, loopId: this.#loopId, gateId: gate.gateId });
      journalSeq = await this.#write(gate, resolution);
    } catch (e) {
      if (e instanceof ResolutionIncompleteError) {
        const reply = this.#gates.settle(gate, resolution, e.resolvedSeq, e.message);
        gate.fail(e);
        return reply;
      }
      // Nothing written: the gate is answerable again, its timeout running for the time left.
      this.#gates.reopen(gate, resolution.answer.commandId);
      if (!this.#closing) this.#arm(gate); // else close() claims it next
      return failureReply(e);
    }
    const reply = this.#gates.settle(gate, resolution, journalSeq);
    gate.settle({ resolution, journalSeq });
    return reply;
  }
}

/** Waits for `p` (its failure ignored) at most `ms`. */
async function bounded(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p.catch(() => undefined), new Promise((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}

/** The GateResolved fields that close a dead actor's gate: `abandoned`, no action (the Go runtime's CloseGate). */
function abandoned(g: LedgerGate) {
  const cause = g.toolExecutionId === undefined ? undefined : { toolExecutionId: g.toolExecutionId };
  return { cause, gateId: g.gateId, resolver: "loop", reason: "abandoned" };
}
