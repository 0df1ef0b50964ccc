/**
 * The policy service: every permission gate of the namespace, decided by a user function
 * and answered once. Built on the public SDK only (a durable subscription, a journal
 * replay, the answer path), so it is what a user would write, written once. README.md in
 * this folder has the rules.
 */
import { z } from "zod";
import { CommandError, isJetloopError, OptionsError, PolicyTimeoutError } from "../errors.js";
import type { JetloopEvent } from "../events/catalogue.js";
import type { Gate } from "../events/gate.js";
import { derivedId } from "../events/ids.js";
import type { PermissionRequest } from "../events/request.js";
import type { DurableDelivery } from "../sources/delivery.js";
import { parseOptions } from "../options.js";
import { durableNameSchema } from "../subjects/subjects.js";
import type { DurableSubscribeOptions } from "../sources/options.js";
import type { DurableSubscription } from "../subscribe/subscription.js";
import type { EventFilter } from "../sources/filter.js";
import type { Delivery } from "../sources/delivery.js";
import type { ReplayOptions } from "../subscribe/replay.js";
import type { AnswerInput, AnswerOutcome } from "../commands/protocol.js";
import type { AnswerOptions } from "../commands/answer.js";

/** What the service uses of a bus (a `Jetloop` is one): the public SDK, nothing more. */
export interface PolicyBus {
  /** The durable subscription the service reads permission gates from. */
  subscribeEvents(filter: EventFilter, options: DurableSubscribeOptions): Promise<DurableSubscription<JetloopEvent>>;
  /** A session's handle: its journal replayed (to see a gate's outcome) and the answer path. */
  session(sessionId: string): {
    /** The session's journal events, read once. */
    replay(filter: Omit<EventFilter, "sessions">, options?: ReplayOptions): AsyncIterable<Delivery<JetloopEvent>>;
    /** Answers a gate of the loop. */
    answer(loopId: string, answer: AnswerInput, options?: AnswerOptions): Promise<AnswerOutcome>;
  };
}

/** The gate kind the Go runtime opens for a permission request. */
const PERMISSION_GATE = "harness.permission";

/** One permission request and the gate that waits on it, as the policy decides it. */
export interface PermissionCase {
  readonly sessionId: string;
  readonly loopId: string;
  readonly turnId: string;
  readonly stepId: string;
  readonly toolExecutionId: string;
  readonly gateId: string;
  /** The PermissionRequested's typed request: tool name, summary, requirements. */
  readonly request: PermissionRequest;
  /** The GateOpened's gate: prompt, controls, response policy. */
  readonly gate: Gate;
  /** Journal sequences of the PermissionRequested and the GateOpened. */
  readonly requestSeq: number;
  readonly gateSeq: number;
}

/** What the policy decided: journaled as the PermissionDecided's reason. */
export interface PolicyDecision {
  readonly effect: "approve" | "deny";
  readonly reason: string;
  /** The control to answer with (one the gate offers, e.g. "Approve always for this workspace"); default the first with `effect`. */
  readonly action?: string | undefined;
}

/** A policy service's decision function: given a permission case, approve or deny it with a reason (journaled). */
export type PolicyDecide = (c: PermissionCase) => PolicyDecision | Promise<PolicyDecision>;

const decisionSchema = z.strictObject({
  effect: z.enum(["approve", "deny"]),
  reason: z.string().min(1, "must say why (it is journaled)"),
  action: z.string().min(1).max(256).optional(),
});

/** `servePolicy`'s options: how it decides, and the durable it reads the gates with. */
export interface PolicyOptions {
  /** Decides one case: sync or async. A throw is a failure: the gate comes again (the durable's backoff), parked after the last attempt. */
  readonly decide: PolicyDecide;
  /** The durable consumer's name; processes sharing it split the gates. Default `policy`. */
  readonly durable?: string | undefined;
  /** Gates decided at once by one process. Default 8. */
  readonly concurrency?: number | undefined;
  /**
   * How long one decide() call may take. Past it the call is abandoned (its late result
   * answers nothing) and the gate comes again with the durable's backoff, so a hung policy
   * neither holds a concurrency slot nor close() forever. Default 60000 ms.
   */
  readonly decideTimeoutMs?: number | undefined;
  /** How long to wait for the loop actor's reply to an answer. Default 5000 ms. */
  readonly answerTimeoutMs?: number | undefined;
  /**
   * The durable subscription's own options (start, maxDeliver, backoffMs, batch, a group
   * option…), passed through as they are and checked by `subscribeEvents`; not `durable`
   * (the option above) nor `autoExtendMs` (the service extends a gate while it holds it).
   */
  readonly subscription?: Omit<DurableSubscribeOptions, "durable" | "autoExtendMs"> | undefined;
}

// The checking side of PolicyOptions (documented there; test/unit/public-types.test.ts keeps
// the two the same but for `decide`, checked on its own, and `subscription`, checked by
// subscribeEvents).
export const policyShape = z.strictObject({
  durable: durableNameSchema.default("policy"),
  concurrency: z.number().int().min(1).max(1024).default(8),
  decideTimeoutMs: z.number().int().min(10).max(24 * 3600_000).default(60_000),
  answerTimeoutMs: z.number().int().min(100).default(5000),
  subscription: z.record(z.string(), z.unknown()).default({}),
});

/** A policy service's figures since it started. */
export interface PolicyStats {
  /** Permission gates received (redeliveries included). */
  readonly received: number;
  readonly approved: number;
  readonly denied: number;
  /** Already resolved in the journal (or by another answer first): not decided again. */
  readonly alreadyResolved: number;
  /** Decisions or answers that failed and will come again. */
  readonly retried: number;
  /** Cases that cannot be answered (no request in the journal, a gate its loop does not know, an invalid decision), parked with the reason. */
  readonly parked: number;
}

/** A running policy service (`servePolicy`): its figures, and how to stop it. */
export interface PolicyService {
  /** The service's figures since it started. */
  stats(): PolicyStats;
  /** Stops taking gates, waits for those in hand, closes the subscription. */
  close(): Promise<void>;
  /** Settles when the service ends: resolves after close(), rejects with the subscription's error. */
  readonly done: Promise<void>;
}

type GateOpened = Extract<JetloopEvent, { type: "GateOpened" }>;

/** How much longer than decide's and the answer's timeouts a gate's ack is extended (the join, the settlement, a slot). */
const HOLD_MARGIN_MS = 15 * 60_000;
type Counters = { -readonly [K in keyof PolicyStats]: PolicyStats[K] };

/**
 * Serves the namespace's permission gates: for each GateOpened of kind
 * `harness.permission`, joins its PermissionRequested from the journal (same session and
 * loop, the gate's `subject.toolExecutionId`), skips it if the journal already holds its
 * GateResolved, asks `decide`, and answers the gate with a command id derived from the gate
 * (a repeat gets the first outcome, never a second resolution).
 */
export async function servePolicy(bus: PolicyBus, options: PolicyOptions): Promise<PolicyService> {
  const { decide, ...rest } = options;
  if (typeof decide !== "function") throw new OptionsError("decide", "must be a function");
  const o = parseOptions(policyShape, rest);
  const sub = await bus.subscribeEvents({ enduring: "all", types: ["GateOpened"], includeInternal: true }, { ...outstandingBound(o.subscription, o.concurrency, o.decideTimeoutMs + o.answerTimeoutMs + HOLD_MARGIN_MS), durable: o.durable });
  const counts: Counters = { received: 0, approved: 0, denied: 0, alreadyResolved: 0, retried: 0, parked: 0 };
  const inHand = new Set<Promise<void>>();
  let wake: (() => void) | undefined;
  // Aborted by close(): a decide() still running is abandoned, its delivery left unsettled
  // (it comes again after the ack wait, to this durable's next process).
  const closing = new AbortController();

  const handle = async (d: DurableDelivery<JetloopEvent>): Promise<void> => {
    const e = d.event as GateOpened;
    if (e.gate.kind !== PERMISSION_GATE) return d.ack();
    counts.received++;
    const outcome = await settleCase(bus, o, decide, e, d.journalSeq, closing.signal).catch((error: unknown) => ({ kind: "retry" as const, error }));
    switch (outcome.kind) {
      case "answered":
        counts[outcome.effect === "approve" ? "approved" : "denied"]++;
        return d.ack();
      case "resolved":
        counts.alreadyResolved++;
        return d.ack();
      case "park":
        counts.parked++;
        return d.term(outcome.reason);
      case "retry":
        counts.retried++;
        return d.fail(outcome.error);
      case "abandoned":
        return;
    }
  };

  const run = async (): Promise<void> => {
    for await (const d of sub) {
      while (inHand.size >= o.concurrency) await new Promise<void>((r) => (wake = r));
      const p: Promise<void> = handle(d)
        .catch(() => undefined) // a settlement that failed: the delivery comes again
        .finally(() => {
          inHand.delete(p);
          wake?.();
        });
      inHand.add(p);
    }
    await Promise.all(inHand);
  };
  const done = run();
  done.catch(() => undefined); // observed by whoever reads `done`
  return {
    stats: () => ({ ...counts }),
    async close() {
      closing.abort();
      await sub.close();
      await done.catch(() => undefined);
    },
    done,
  };
}

/**
 * The subscription's options with what the server may hand out bounded by the slots. A
 * delivery yielded to the service is kept alive (its ack extended) while it waits for a
 * slot, but one the server sent that still sits in the client's pull buffer is not: under a
 * short ack wait it would come again while its first copy waits, and be decided twice
 * (answered once). With at most `concurrency` outstanding (the durable's `maxAckPending`)
 * nothing waits in that buffer while a slot is free, so every copy is one held, extended
 * delivery. A group already has one outstanding per partition, each held and extended at
 * once (its partition's sources read one message at a time). The extension limit is the
 * service's: one shorter than the join plus decide plus the answer let the gate come again
 * while it was decided, and a free slot decide it a second time.
 */
function outstandingBound(subscription: Record<string, unknown>, concurrency: number, holdMs: number): Omit<DurableSubscribeOptions, "durable"> {
  if (subscription.durable !== undefined) throw new OptionsError("subscription.durable", "is the service's own `durable` option");
  if (subscription.autoExtendMs !== undefined) {
    throw new OptionsError("subscription.autoExtendMs", "is not taken: the service extends a gate's ack past decideTimeoutMs + answerTimeoutMs; a shorter limit lets the gate come again while it is decided, and be decided twice");
  }
  // Extended through the join, decide and the answer, with room to spare: only a case stuck
  // far past its own timeouts (a join hung in an outage) lets the gate go to another process.
  // (In a group a copy that comes again waits behind the first and finds it resolved.)
  const s = { ...(subscription as Omit<DurableSubscribeOptions, "durable">), autoExtendMs: holdMs };
  if (s.group !== undefined) return s;
  if (s.maxAckPending !== undefined && (typeof s.maxAckPending !== "number" || s.maxAckPending > concurrency)) {
    throw new OptionsError("subscription.maxAckPending", `must be at most concurrency (${concurrency}): a gate the server sent beyond the service's slots waits unextended and can be decided twice`);
  }
  const maxAckPending = s.maxAckPending ?? concurrency;
  return { ...s, maxAckPending, ...(s.batch === undefined || s.batch > maxAckPending ? { batch: maxAckPending } : {}) };
}

type CaseOutcome =
  | { readonly kind: "answered"; readonly effect: "approve" | "deny" }
  | { readonly kind: "resolved" }
  | { readonly kind: "park"; readonly reason: string }
  | { readonly kind: "retry"; readonly error: unknown }
  | { readonly kind: "abandoned" };

/** decide(c), bounded by the timeout and by close(): a late result is ignored. */
function decideBounded(decide: PolicyDecide, c: PermissionCase, timeoutMs: number, closing: AbortSignal): Promise<{ raw: unknown } | { thrown: unknown } | "timeout" | "closed"> {
  if (closing.aborted) return Promise.resolve("closed");
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      closing.removeEventListener("abort", onClose);
    };
    const onClose = () => (done(), resolve("closed"));
    const timer = setTimeout(() => (done(), resolve("timeout")), timeoutMs);
    closing.addEventListener("abort", onClose, { once: true });
    Promise.resolve()
      .then(() => decide(c))
      .then(
        (raw) => (done(), resolve({ raw })),
        (thrown: unknown) => (done(), resolve({ thrown })),
      );
  });
}

/** One gate, from the journal to the answer. */
async function settleCase(bus: PolicyBus, o: z.output<typeof policyShape>, decide: PolicyDecide, e: GateOpened, gateSeq: number, closing: AbortSignal): Promise<CaseOutcome> {
  const gate = e.gate;
  // The runtime's link from a gate to its call: the gate's subject, else its cause.
  const toolExecutionId = gate.subject?.toolExecutionId ?? e.cause?.toolExecutionId;
  const { loopId, turnId, stepId } = e;
  if (gate.id === undefined || toolExecutionId === undefined || loopId === undefined || turnId === undefined || stepId === undefined) {
    return { kind: "park", reason: "a permission gate without its id, tool execution or step cannot be answered" };
  }
  const joined = await joinFromJournal(bus, e.sessionId, loopId, gate.id, toolExecutionId, gateSeq);
  if (joined.resolved) return { kind: "resolved" };
  if (!joined.request) return { kind: "park", reason: `no PermissionRequested for tool execution ${toolExecutionId} before its gate` };
  const c: PermissionCase = { sessionId: e.sessionId, loopId, turnId, stepId, toolExecutionId, gateId: gate.id, request: joined.request.request, gate, requestSeq: joined.request.seq, gateSeq };
  const decided = await decideBounded(decide, c, o.decideTimeoutMs, closing);
  if (decided === "closed") return { kind: "abandoned" };
  if (decided === "timeout") return { kind: "retry", error: new PolicyTimeoutError(gate.id, o.decideTimeoutMs) };
  if ("thrown" in decided) return { kind: "retry", error: decided.thrown };
  const checked = decisionSchema.safeParse(decided.raw);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    return { kind: "park", reason: `the policy's decision is invalid: ${issue.path.join(".") || "decision"}: ${issue.message}` };
  }
  const decision = checked.data;
  try {
    await bus.session(e.sessionId).answer(
      loopId,
      { kind: "permission", gateId: gate.id, toolExecutionId, effect: decision.effect, reason: decision.reason, commandId: derivedId("jetloop policy", o.durable, gate.id), ...(decision.action ? { action: decision.action } : {}) },
      { timeoutMs: o.answerTimeoutMs },
    );
    return { kind: "answered", effect: decision.effect };
  } catch (error) {
    if (!(error instanceof CommandError)) throw error;
    if (isJetloopError(error, "GATE_RESOLVED")) return { kind: "resolved" };
    // Nobody listens or replied in time: the loop actor may come back; try again later.
    if (isJetloopError(error, "COMMAND_NO_LISTENER") || isJetloopError(error, "COMMAND_FAILED")) return { kind: "retry", error };
    // GATE_UNKNOWN (its actor does not know it), COMMAND_INVALID (an action the gate does not offer).
    return { kind: "park", reason: `${error.code}: ${error.message}` };
  }
}

interface Joined {
  readonly request: { readonly request: PermissionRequest; readonly seq: number } | undefined;
  readonly resolved: boolean;
}

/**
 * The gate's request and whether it is resolved, read from the loop's journal (not from
 * memory, so a restarted service knows what its predecessor acknowledged): the last
 * PermissionRequested of the tool execution before the gate, and any GateResolved of it.
 */
async function joinFromJournal(bus: PolicyBus, sessionId: string, loopId: string, gateId: string, toolExecutionId: string, gateSeq: number): Promise<Joined> {
  let request: Joined["request"];
  let resolved = false;
  for await (const d of bus.session(sessionId).replay({ enduring: { loops: [loopId] }, types: ["PermissionRequested", "GateResolved"], includeInternal: true })) {
    const e = d.event;
    if (e.type === "PermissionRequested" && e.toolExecutionId === toolExecutionId && d.journalSeq < gateSeq) request = { request: e.request, seq: d.journalSeq };
    else if (e.type === "GateResolved" && e.gateId === gateId) resolved = true;
  }
  return { request, resolved };
}
