// Reopening an existing durable with other options, against a real server: every option ×
// (the same value, another value — generated —, absent). A shared-behaviour option that
// differs (maxDeliver, backoffMs, ackWaitMs) is refused with OPTIONS_INVALID naming it and
// the live value, the consumer untouched; maxAckPending is updated on the server; an absent
// option takes the live value; `start` never moves an existing durable's position.
import type { ConsumerInfo, JetStreamManager } from "@nats-io/jetstream";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { connect, createEvent, type Jetloop, newId, OptionsError, type DurableSubscribeOptions } from "../../src/index.js";
import { natsServers, provisionedBus } from "../harness/context.js";
import { Reader } from "../harness/reader.js";
import { propertyRuns, propertyTimeout } from "../harness/property.js";

let bus: Jetloop;
let jsm: JetStreamManager;
const cleanup = provisionedBus((b, j) => void ([bus, jsm] = [b, j]));

type Durable = Omit<DurableSubscribeOptions, "durable" | "onReport">;
type Option = "maxDeliver" | "backoffMs" | "ackWaitMs" | "maxAckPending" | "start";

/** What each durable is created with: backoffMs and ackWaitMs exclude each other. */
const CREATED: Record<"backoff" | "fixed", Durable> = {
  backoff: { maxDeliver: 3, backoffMs: [400, 800], maxAckPending: 50, start: "all" },
  fixed: { maxDeliver: 3, ackWaitMs: 700, maxAckPending: 50, start: "all" },
};
const base = (o: Option) => CREATED[o === "ackWaitMs" ? "fixed" : "backoff"];

/** Another value of `o` than the created one. */
const differentArb: Record<Option, fc.Arbitrary<unknown>> = {
  maxDeliver: fc.integer({ min: 1, max: 20 }).filter((n) => n !== 3),
  backoffMs: fc.array(fc.integer({ min: 100, max: 5000 }), { minLength: 1, maxLength: 3 }).filter((b) => JSON.stringify(b) !== "[400,800]"),
  ackWaitMs: fc.integer({ min: 100, max: 5000 }).filter((n) => n !== 700),
  maxAckPending: fc.integer({ min: 1, max: 5000 }).filter((n) => n !== 50),
  start: fc.oneof(fc.constant("new"), fc.record({ seq: fc.integer({ min: 1, max: 5 }) }), fc.constant({ time: new Date(0) })),
};
/** The live value as the refusal names it. */
const LIVE_TEXT: Partial<Record<Option, string>> = { maxDeliver: "maxDeliver 3", backoffMs: "backoff [400, 800] ms", ackWaitMs: "a fixed ack wait of 700 ms" };

const session = newId();
const step = () => createEvent("StepDone", { sessionId: session, loopId: newId(), turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: "x" }] }] });

/** A new durable created with `created`, one event delivered and acknowledged, then closed. */
async function createdDurable(created: Durable): Promise<{ name: string; before: ConsumerInfo }> {
  const name = `drift-${newId().slice(-12)}`;
  cleanup.push(() => jsm.consumers.delete(bus.stream, name), () => jsm.consumers.delete(bus.parked.stream, name));
  const sub = await bus.subscribeEvents({ sessions: [session], enduring: "all" }, { ...created, durable: name });
  await bus.publish(step());
  const [d] = await new Reader(sub).take(1);
  await d!.ack();
  await sub.close();
  return { name, before: await jsm.consumers.info(bus.stream, name) };
}

async function reopen(name: string, options: Durable): Promise<{ ok: true } | { ok: false; error: unknown }> {
  try {
    const sub = await bus.subscribeEvents({ sessions: [session], enduring: "all" }, { ...options, durable: name });
    await sub.close();
    return { ok: true };
  } catch (error) {
    return { ok: false, error };
  }
}

const SHARED = ["ack_wait", "backoff", "metadata", "max_deliver", "deliver_policy", "opt_start_seq", "opt_start_time"] as const;
const shared = (ci: ConsumerInfo) => Object.fromEntries(SHARED.map((k) => [k, ci.config[k]]));

async function check(option: Option, c: "same" | "different" | "absent", value: unknown): Promise<void> {
  const created = base(option);
  const { name, before } = await createdDurable(created);
  const options: Durable = { ...created };
  if (c === "absent") delete options[option];
  else Object.assign(options, { [option]: value });
  const out = await reopen(name, options);
  const after = await jsm.consumers.info(bus.stream, name);
  expect(shared(after)).toEqual(shared(before)); // never changed by a reopen
  expect(after.ack_floor.stream_seq).toBe(before.ack_floor.stream_seq); // the position stays
  const refused = c === "different" && option in LIVE_TEXT;
  if (refused) {
    expect(out.ok).toBe(false);
    const error = (out as { error: unknown }).error;
    expect(error).toBeInstanceOf(OptionsError);
    expect((error as OptionsError).code).toBe("OPTIONS_INVALID");
    expect((error as OptionsError).option).toBe(option);
    expect((error as Error).message).toContain(LIVE_TEXT[option]!);
  } else {
    expect(out).toEqual({ ok: true });
  }
  const wantPending = option === "maxAckPending" && c === "different" ? value : created.maxAckPending;
  expect(after.config.max_ack_pending).toBe(wantPending);
}

const OPTIONS: Option[] = ["maxDeliver", "backoffMs", "ackWaitMs", "maxAckPending", "start"];

describe.concurrent("durable options drift", () => {
  for (const option of OPTIONS) {
    it(`${option}: the same value opens and changes nothing`, async () => {
      await check(option, "same", base(option)[option]);
    });
    it(`${option}: absent opens with the live value`, async () => {
      await check(option, "absent", undefined);
    });
    it(`${option}: another value is ${option in LIVE_TEXT ? "refused, naming the live value" : option === "start" ? "ignored: the durable resumes from its ack floor" : "updated on the server"}`, async () => {
      // 3 values in CI, 60 in the deep profile.
      await fc.assert(fc.asyncProperty(differentArb[option], (value) => check(option, "different", value)), { numRuns: propertyRuns(3, 60) });
    }, propertyTimeout(30_000, 3, 60));
  }

  it("the issue's case: a default durable reopened with maxDeliver 2, backoffMs [500] is refused, not silently kept", async () => {
    const { name } = await createdDurable({});
    const out = await reopen(name, { maxDeliver: 2, backoffMs: [500] });
    expect(out.ok).toBe(false);
    expect((out as { error: Error }).error.message).toMatch(/^maxDeliver: durable drift-\w+ exists with maxDeliver 5;/);
  });

  it("two processes creating one durable at once with different limits: one opens it, the other is refused", async () => {
    const ns = bus.namespace;
    const other = await connect({ servers: natsServers(), namespace: ns });
    cleanup.push(() => other.close());
    const name = `drift-${newId().slice(-12)}`;
    cleanup.push(() => jsm.consumers.delete(bus.stream, name), () => jsm.consumers.delete(bus.parked.stream, name));
    const results = await Promise.allSettled([bus, other].map((b, i) => b.subscribeEvents({ sessions: [session], enduring: "all" }, { durable: name, maxDeliver: 2 + i })));
    const opened = results.filter((r) => r.status === "fulfilled");
    const refused = results.filter((r) => r.status === "rejected");
    expect(opened).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(((refused[0] as PromiseRejectedResult).reason as OptionsError).option).toBe("maxDeliver");
    for (const r of opened) await r.value.close();
  });

  it("ackWaitMs with backoffMs is refused before anything is created", async () => {
    const name = `drift-${newId().slice(-12)}`;
    const out = await reopen(name, { ackWaitMs: 1000, backoffMs: [1000] });
    expect(out.ok).toBe(false);
    expect(((out as { error: OptionsError }).error).option).toBe("ackWaitMs");
    await expect(jsm.consumers.info(bus.stream, name)).rejects.toThrow(/consumer not found/i);
  });
});


