/**
 * The public option and event types are interfaces a person reads (src/index.ts); the zod
 * schemas beside them check values at run time. This file keeps the two the same: for
 * each pair, the interface and the schema's inferred type are equal both ways, field by
 * field, optional alike, so neither can change without the other. The
 * checks are types: `tsc -p tsconfig.json --noEmit` (the static checks) fails on a drift;
 * the one run-time case only keeps the file in the unit project.
 */
import { describe, expect, it } from "vitest";
import { builtInTypes } from "../../src/events/catalogue.js";
import type { z } from "zod";
import type { RawJson } from "../../src/wire/raw-json.js";
import type * as publish from "../../src/publish/options.js";
import type * as commands from "../../src/commands/options.js";
import type * as connection from "../../src/connection/options.js";
import type * as subscribe from "../../src/sources/options.js";
import type * as gateway from "../../src/gateway/options.js";
import type * as provision from "../../src/streams/provision-options.js";
import type * as policy from "../../src/policy/policy-service.js";
import type * as attachOptions from "../../src/attach/options.js";
import type * as header from "../../src/events/header.js";
import type * as gate from "../../src/events/gate.js";
import type * as request from "../../src/events/request.js";
import type * as catalogue from "../../src/events/catalogue.js";
import type { EventOf } from "../../src/events/registry.js";
import type * as content from "../../src/events/content.js";
import type * as runtime from "../../src/events/runtime.js";
import type * as capture from "../../src/events/capture.js";
import type * as protocol from "../../src/commands/protocol.js";

/** A type with interfaces, intersections and aliases flattened to plain object types, deeply. */
type Flat<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends Date | RawJson | RegExp
    ? T
    : T extends object
      ? { -readonly [K in keyof T]: Flat<T[K]> }
      : T;
/**
 * True when A and B are the same type: each assignable to the other, and no field differs in
 * being optional. Readonly is not compared (zod's nested input types are not readonly; an
 * interface may promise a caller more).
 */
type Same<A, B> = (<T>() => T extends Flat<A> ? 1 : 2) extends <T>() => T extends Flat<B> ? 1 : 2 ? true : false;
/** Compiles only when A and B are the same type. */
function agree<A, B>(..._: Same<A, B> extends true ? [] : [never]): void {}

// Options: the interface is what a caller gives, the shape's input type what it accepts.
agree<publish.PublishOptions, Readonly<z.input<typeof publish.publishShape>>>();
agree<publish.ReconcileOptions, Readonly<z.input<typeof publish.reconcileShape>>>();
agree<publish.PublishAllOptions, Readonly<z.input<typeof publish.publishAllShape>>>();
agree<commands.AnswerOptions, Readonly<z.input<typeof commands.answerShape>>>();
agree<commands.InterruptOptions, Readonly<z.input<typeof commands.interruptShape>>>();
agree<commands.ControlOptions, Readonly<z.input<typeof commands.controlShape>>>();
agree<commands.ServeGatesOptions, Readonly<z.input<typeof commands.serveGatesShape>>>();
agree<connection.ConnectionSettings, z.input<typeof connection.connectionShape>>();
agree<connection.BusOptions<unknown>, z.input<typeof connection.busShape>>();
agree<subscribe.FeedSubscribeOptions, subscribe.FeedInput>();
agree<subscribe.DurableSubscribeOptions, subscribe.DurableInput>();
agree<subscribe.ReplayOptions, z.input<typeof subscribe.replayShape>>();
agree<gateway.GatewayOptions, z.input<typeof gateway.gatewayShape>>();
agree<gateway.ServerOptions, z.input<typeof gateway.serverShape>>();
agree<gateway.ListenOptions, z.input<typeof gateway.listenShape>>();
agree<attachOptions.AttachOptions, Readonly<z.input<typeof attachOptions.attachShape>>>();
agree<provision.ProvisionRequest, z.input<typeof provision.provisionShape>>();
agree<Omit<policy.PolicyOptions, "decide" | "subscription">, Omit<z.input<typeof policy.policyShape>, "subscription">>();

// The event model: the interface is what a subscriber reads, the schema's output what
// validation returns (a writer's input types where named so).
agree<header.Cause, z.output<typeof header.causeSchema>>();
agree<header.EventHeader, z.output<z.ZodObject<typeof header.headerShape>>>();
agree<gate.Gate, z.output<typeof gate.gateSchema>>();
agree<gate.GatePrompt, z.output<typeof gate.gatePromptSchema>>();
agree<gate.GateField, z.output<typeof gate.gateFieldSchema>>();
agree<gate.GateResponsePolicy, z.output<typeof gate.gateResponsePolicySchema>>();
agree<gate.GateAudit, z.output<typeof gate.gateAuditSchema>>();
agree<gate.GateSource, z.output<typeof gate.gateSourceSchema>>();
agree<request.PermissionCandidate, z.output<typeof request.candidateSchema>>();
agree<request.PermissionRequirement, z.output<typeof request.requirementSchema>>();
agree<request.PermissionRequest, z.output<typeof request.permissionRequestSchema>>();
agree<request.PermissionRequestInput, z.input<typeof request.permissionRequestSchema>>();

// The built-in events: each interface is its schema's output with the coordinates its
// identity profile rules (validation refuses an event without a required one or with a
// forbidden one); the profiles below are checked against the definitions at run time.
type Ids = "loopId" | "turnId" | "stepId";
type Profile = Readonly<Record<Ids, "required" | "forbidden" | "optional">>;
type Profiled<E, P extends Profile> = Omit<E, Ids> & { [K in Ids as P[K] extends "required" ? K : never]: string } & {
  [K in Ids as P[K] extends "forbidden" ? K : never]?: undefined;
} & { [K in Ids as P[K] extends "optional" ? K : never]?: string | undefined };
const STEP = { loopId: "required", turnId: "required", stepId: "required" } as const;
const TURN = { loopId: "required", turnId: "required", stepId: "forbidden" } as const;
const LOOP = { loopId: "required", turnId: "forbidden", stepId: "forbidden" } as const;
const SESSION = { loopId: "forbidden", turnId: "forbidden", stepId: "forbidden" } as const;
const GATE = { loopId: "optional", turnId: "optional", stepId: "optional" } as const;
const PROFILES: Record<catalogue.EventType, Profile> = {
  PermissionRequested: STEP,
  PermissionDecided: STEP,
  UserInputRequested: STEP,
  ToolCallStarted: STEP,
  ToolCallCompleted: STEP,
  GateOpened: GATE,
  GateResolved: GATE,
  StepDone: STEP,
  TurnStarted: TURN,
  TurnDone: TURN,
  TurnFailed: TURN,
  TurnInterrupted: TURN,
  LoopStarted: LOOP,
  LoopIdle: LOOP,
  SessionStarted: SESSION,
  SessionIdle: SESSION,
  SessionStopped: SESSION,
};
agree<catalogue.PermissionRequested, Profiled<EventOf<typeof catalogue.PermissionRequested>, typeof STEP>>();
agree<catalogue.PermissionDecided, Profiled<EventOf<typeof catalogue.PermissionDecided>, typeof STEP>>();
agree<catalogue.UserInputRequested, Profiled<EventOf<typeof catalogue.UserInputRequested>, typeof STEP>>();
agree<catalogue.ToolCallStarted, Profiled<EventOf<typeof catalogue.ToolCallStarted>, typeof STEP>>();
agree<catalogue.ToolCallCompleted, Profiled<EventOf<typeof catalogue.ToolCallCompleted>, typeof STEP>>();
agree<catalogue.GateOpened, Profiled<EventOf<typeof catalogue.GateOpened>, typeof GATE>>();
agree<catalogue.GateResolved, Profiled<EventOf<typeof catalogue.GateResolved>, typeof GATE>>();
agree<catalogue.StepDone, Profiled<EventOf<typeof catalogue.StepDone>, typeof STEP>>();
agree<catalogue.TurnStarted, Profiled<EventOf<typeof catalogue.TurnStarted>, typeof TURN>>();
agree<catalogue.TurnDone, Profiled<EventOf<typeof catalogue.TurnDone>, typeof TURN>>();
agree<catalogue.TurnFailed, Profiled<EventOf<typeof catalogue.TurnFailed>, typeof TURN>>();
agree<catalogue.TurnInterrupted, Profiled<EventOf<typeof catalogue.TurnInterrupted>, typeof TURN>>();
agree<catalogue.LoopStarted, Profiled<EventOf<typeof catalogue.LoopStarted>, typeof LOOP>>();
agree<catalogue.LoopIdle, Profiled<EventOf<typeof catalogue.LoopIdle>, typeof LOOP>>();
agree<catalogue.SessionStarted, Profiled<EventOf<typeof catalogue.SessionStarted>, typeof SESSION>>();
agree<catalogue.SessionIdle, Profiled<EventOf<typeof catalogue.SessionIdle>, typeof SESSION>>();
agree<catalogue.SessionStopped, Profiled<EventOf<typeof catalogue.SessionStopped>, typeof SESSION>>();
agree<catalogue.TurnError, z.output<typeof catalogue.turnErrorSchema>>();
agree<catalogue.PermissionEffect, z.output<typeof catalogue.permissionEffectSchema>>();
agree<subscribe.FeedMode, z.output<typeof subscribe.feedModeSchema>>();
agree<content.Usage, z.output<typeof content.turnUsageSchema>>();
agree<content.Usage, z.output<typeof content.messageUsageSchema>>();
agree<content.UserMessage, z.output<typeof content.userMessageSchema>>();
agree<content.AIMessage, z.output<typeof content.aiMessageSchema>>();
agree<content.StepMessage, z.output<typeof content.stepMessageSchema>>();
agree<runtime.ModelRuntime, z.output<typeof runtime.modelRuntimeSchema>>();
agree<runtime.AgentRuntime, z.output<typeof runtime.agentRuntimeSchema>>();
agree<runtime.ConfigFingerprint, z.output<typeof runtime.configFingerprintSchema>>();
agree<runtime.ConfigManifest, z.output<typeof runtime.configManifestSchema>>();
agree<capture.ToolResultCapture, z.output<typeof capture.toolResultCaptureSchema>>();
agree<protocol.Answer, z.output<typeof protocol.answerSchema>>();
agree<protocol.AnswerOutcome, z.output<typeof protocol.outcomeSchema>>();
agree<connection.BusSettings, Omit<z.output<typeof connection.busShape>, "registry" | "logger"> & { stream: string; shards: number }>();

// The check bites: a field made required, dropped, added or retyped is refused.
// @ts-expect-error -- required here, optional in the shape
agree<{ readonly timeoutMs: number }, Readonly<z.input<typeof commands.answerShape>>>();
// @ts-expect-error -- a field the shape does not have
agree<commands.AnswerOptions & { readonly retries?: number | undefined }, Readonly<z.input<typeof commands.answerShape>>>();
// @ts-expect-error -- missing a field the shape has
agree<Omit<commands.ControlOptions, "fingerprint">, Readonly<z.input<typeof commands.controlShape>>>();
// @ts-expect-error -- nested: a Date where the shape has a number
agree<{ readonly resume?: { readonly since: number } | undefined }, Pick<publish.PublishAllOptions, "resume">>();

describe("public types", () => {
  it("agree with their schemas (checked by the compiler)", () => {
    expect(agree).toBeTypeOf("function");
  });

  it("each built-in event's interface has the coordinates its definition's identity profile rules", () => {
    expect(Object.fromEntries(builtInTypes.map((d) => [d.type, d.identity]))).toEqual(PROFILES);
  });
});
