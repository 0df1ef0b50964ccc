/**
 * The public option and event types are interfaces a person reads (src/index.ts); the zod
 * schemas beside them check values at run time. This file keeps the two the same: for
 * each pair, the interface and the schema's inferred type are equal both ways, field by
 * field, optional alike, so neither can change without the other. The
 * checks are types: `tsc -p tsconfig.json --noEmit` (the static checks) fails on a drift;
 * the one run-time case only keeps the file in the unit project.
 */
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import type { RawJson } from "../../src/wire/raw-json.js";
import type * as publish from "../../src/publish/options.js";
import type * as commands from "../../src/commands/options.js";
import type * as connection from "../../src/connection/options.js";
import type * as subscribe from "../../src/subscribe/options.js";
import type * as gateway from "../../src/gateway/options.js";
import type * as provision from "../../src/streams/provision-options.js";
import type * as policy from "../../src/policy/policy-service.js";

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
agree<provision.ProvisionRequest, z.input<typeof provision.provisionShape>>();
agree<Omit<policy.PolicyOptions, "decide" | "subscription">, Omit<z.input<typeof policy.policyShape>, "subscription">>();

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
});
