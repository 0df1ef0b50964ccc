// Durables made by hand (nats CLI-shaped configs: no jetloop metadata, the server's own
// max_deliver) reopened by jetloop processes with other options: the second process that
// disagrees with the first is refused, never left to park by a limit of its own.
import { AckPolicy, DeliverPolicy, type JetStreamManager } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { connect, isJetloopError, newId, type Jetloop } from "../../src/index.js";
import { natsServers, provisionedBus } from "../harness/context.js";

let bus: Jetloop;
let jsm: JetStreamManager;
const cleanup = provisionedBus((b, j) => void ([bus, jsm] = [b, j]));

/** Hand-made pull consumers as `nats consumer add` writes them: no metadata of jetloop's. */
const handMade = [
  { name: "unlimited, fixed ack wait", config: { max_deliver: -1, ack_wait: nanos(30_000) } },
  { name: "unlimited, backoff", config: { max_deliver: -1, backoff: [nanos(1000), nanos(5000)] } },
  { name: "no max_deliver field", config: {} },
];

describe("a hand-made durable reopened with maxDeliver", () => {
  for (const h of handMade) {
    it(`${h.name}: the first maxDeliver given is recorded, another is refused naming it`, async () => {
      const durable = `h-${newId().slice(-12)}`;
      await jsm.consumers.add(bus.stream, { durable_name: durable, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, ...h.config });
      cleanup.push(() => jsm.consumers.delete(bus.stream, durable), () => jsm.consumers.delete(bus.parked.stream, durable));
      const other = await connect({ servers: natsServers(), namespace: bus.namespace });
      cleanup.push(() => other.close());
      const first = await bus.subscribeEvents({ enduring: "all" }, { durable, maxDeliver: 2 });
      cleanup.push(() => first.close());
      const refused = await other.subscribeEvents({ enduring: "all" }, { durable, maxDeliver: 7 }).then(
        (s) => s.close().then(() => undefined),
        (e: unknown) => e,
      );
      expect(isJetloopError(refused, "OPTIONS_INVALID")).toBe(true);
      expect((refused as Error).message).toMatch(/maxDeliver 2/);
      // The same value, or none, is accepted.
      for (const o of [{ maxDeliver: 2 }, {}]) {
        const again = await other.subscribeEvents({ enduring: "all" }, { durable, ...o });
        await again.close();
      }
    });
  }
});

/** A hand-made consumer's live values, and what reopening it with each option must do. */
interface Shape {
  readonly name: string;
  readonly config: Record<string, unknown>;
  readonly ackWaitMs: number;
  readonly backoffMs: readonly number[];
  readonly maxDeliver: number;
}
const shapes: Shape[] = [
  { name: "server max_deliver 3, fixed ack wait 2s", config: { max_deliver: 3, ack_wait: nanos(2000) }, ackWaitMs: 2000, backoffMs: [], maxDeliver: 3 },
  { name: "server max_deliver 4, backoff 1s 5s", config: { max_deliver: 4, backoff: [nanos(1000), nanos(5000)] }, ackWaitMs: 1000, backoffMs: [1000, 5000], maxDeliver: 4 },
  { name: "jetloop metadata 6, unlimited server", config: { max_deliver: -1, ack_wait: nanos(3000), metadata: { jetloop_max_deliver: "6" } }, ackWaitMs: 3000, backoffMs: [], maxDeliver: 6 },
];
const show = (e: unknown): string => (e instanceof Error ? e.message : JSON.stringify(e));
type Variant = "same" | "different" | "absent";
const cases = shapes.flatMap((s) =>
  (["maxDeliver", "backoffMs", "ackWaitMs", "maxAckPending"] as const).flatMap((option) => (["same", "different", "absent"] as Variant[]).map((variant) => ({ s, option, variant }))),
);

/** The value to open with; undefined: no such value can be "the same" (a backoff on a fixed clock). */
function valueFor(s: Shape, option: (typeof cases)[number]["option"], variant: Variant, liveMaxAckPending: number): unknown {
  if (variant === "absent") return undefined;
  const same = { maxDeliver: s.maxDeliver, backoffMs: s.backoffMs.length > 0 ? s.backoffMs : undefined, ackWaitMs: s.backoffMs.length > 0 ? undefined : s.ackWaitMs, maxAckPending: liveMaxAckPending }[option];
  if (variant === "same") return same;
  return { maxDeliver: s.maxDeliver + 1, backoffMs: [...s.backoffMs, 9000], ackWaitMs: s.ackWaitMs + 500, maxAckPending: liveMaxAckPending + 7 }[option];
}

describe("every option × same, different, absent over hand-made shapes", () => {
  it(`${cases.length} cases: refused naming the option and live value, updated (maxAckPending), or accepted with the live value kept`, async () => {
    const failures: string[] = [];
    for (const { s, option, variant } of cases) {
      const durable = `t-${newId().slice(-12)}`;
      const made = await jsm.consumers.add(bus.stream, { durable_name: durable, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, ...s.config });
      const value = valueFor(s, option, variant, made.config.max_ack_pending ?? 1000);
      const label = `${s.name} / ${option} ${variant} (${JSON.stringify(value)})`;
      try {
        if (variant === "same" && value === undefined) continue;
        const opened = await bus.subscribeEvents({ enduring: "all" }, { durable, ...(value === undefined ? {} : { [option]: value }) }).then(
          async (sub) => (await sub.close(), undefined),
          (e: unknown) => e,
        );
        const live = (await jsm.consumers.info(bus.stream, durable)).config;
        const refusedExpected = variant === "different" && option !== "maxAckPending";
        if (refusedExpected) {
          if (!isJetloopError(opened, "OPTIONS_INVALID") || !(opened as Error).message.startsWith(`${option}:`)) failures.push(`${label}: expected OPTIONS_INVALID for ${option}, got ${show(opened)}`);
        } else if (opened !== undefined) {
          failures.push(`${label}: refused: ${show(opened)}`);
        }
        // What the server holds: the old values, unless maxAckPending was asked to change.
        if (live.max_deliver !== made.config.max_deliver) failures.push(`${label}: server max_deliver changed to ${live.max_deliver}`);
        if (JSON.stringify(live.backoff ?? []) !== JSON.stringify(made.config.backoff ?? [])) failures.push(`${label}: backoff changed`);
        if (live.ack_wait !== made.config.ack_wait) failures.push(`${label}: ack_wait changed`);
        const mapWanted = option === "maxAckPending" && variant === "different" ? value : made.config.max_ack_pending;
        if (live.max_ack_pending !== mapWanted) failures.push(`${label}: max_ack_pending ${live.max_ack_pending}, wanted ${String(mapWanted)}`);
      } finally {
        await jsm.consumers.delete(bus.stream, durable).catch(() => undefined);
        await jsm.consumers.delete(bus.parked.stream, durable).catch(() => undefined);
      }
    }
    expect(failures).toEqual([]);
  }, 60_000);
});

describe("two processes creating one durable at once with other options", () => {
  const pairs: [Record<string, unknown>, Record<string, unknown>][] = [
    [{ maxDeliver: 2 }, { maxDeliver: 3 }],
    [{ backoffMs: [1000] }, { backoffMs: [2000] }],
    [{ ackWaitMs: 1000 }, { backoffMs: [1000] }],
    [{ ackWaitMs: 1000 }, { ackWaitMs: 2000 }],
  ];
  it(`${pairs.length} pairs × 4 races: exactly one opens, the other is refused with OPTIONS_INVALID; equal options both open`, async () => {
    const other = await connect({ servers: natsServers(), namespace: bus.namespace });
    cleanup.push(() => other.close());
    const failures: string[] = [];
    for (const [a, b] of pairs) {
      for (let round = 0; round < 4; round++) {
        const durable = `r-${newId().slice(-12)}`;
        const [ra, rb] = await Promise.allSettled([bus.subscribeEvents({ enduring: "all" }, { durable, ...a }), other.subscribeEvents({ enduring: "all" }, { durable, ...b })]);
        const ok = [ra, rb].filter((r) => r.status === "fulfilled").length;
        const refused = [ra, rb].filter((r) => r.status === "rejected" && isJetloopError(r.reason, "OPTIONS_INVALID")).length;
        if (ok !== 1 || refused !== 1) failures.push(`${JSON.stringify(a)} vs ${JSON.stringify(b)}: ${ok} opened, ${refused} refused (${[ra, rb].map((r) => (r.status === "rejected" ? show(r.reason) : "ok")).join("; ")})`);
        for (const r of [ra, rb]) if (r.status === "fulfilled") await r.value.close();
        await jsm.consumers.delete(bus.stream, durable).catch(() => undefined);
        await jsm.consumers.delete(bus.parked.stream, durable).catch(() => undefined);
      }
      const durable = `r-${newId().slice(-12)}`;
      const same = await Promise.allSettled([bus.subscribeEvents({ enduring: "all" }, { durable, ...a }), other.subscribeEvents({ enduring: "all" }, { durable, ...a })]);
      if (same.some((r) => r.status === "rejected")) failures.push(`${JSON.stringify(a)} twice: refused`);
      for (const r of same) if (r.status === "fulfilled") await r.value.close();
      await jsm.consumers.delete(bus.stream, durable).catch(() => undefined);
      await jsm.consumers.delete(bus.parked.stream, durable).catch(() => undefined);
    }
    expect(failures).toEqual([]);
  }, 60_000);
});
