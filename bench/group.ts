/**
 * 11. Partitioned durable groups: events/s handled by a group of 1, 2 and 4 members (each
 * its own connection) with a 1 ms handler, against raw NATS.js with one consumer per
 * partition on the same partitioned stream (max_ack_pending 1; pinned client on
 * nats-server >= 2.11), and against one plain durable handled in order (one at a time:
 * what keeping a session's order costs without partitions). The journal holds the events
 * before each contender starts; each contender has its own durable names.
 */
import { AckPolicy, DeliverPolicy, type JetStreamManager, jetstream } from "@nats-io/jetstream";
import { connect, createEvent, type DurableDelivery, type Jetloop, type JetloopEvent, newId } from "../src/index.js";
import { compareVersions } from "../src/subjects/server-features.js";
import { defaultMembersStreamName, defaultPartitionedStreamName } from "../src/streams/declared.js";
import { partitionFilter } from "../src/subjects/subjects.js";
import { type BenchContext, type Row, compareRow } from "./lib/context.js";
import { nowMs } from "./lib/stats.js";

const PARTITIONS = 16;
const HANDLER_MS = 1;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function step(sessionId: string): JetloopEvent {
  return createEvent("StepDone", { sessionId, loopId: newId(), turnId: newId(), stepId: newId(), messages: [{ role: "assistant", blocks: [{ type: "text", text: "x" }] }] });
}

async function waitPartitioned(jsm: JetStreamManager, stream: string, n: number): Promise<void> {
  while ((await jsm.streams.info(stream)).state.messages < n) await sleep(20);
}

export async function runGroup(ctx: BenchContext): Promise<Row[]> {
  const n = ctx.options.quick ? 1000 : 4000;
  const s = await ctx.setup("group");
  const partitioned = defaultPartitionedStreamName(s.ns);
  const members: Jetloop[] = [];
  const samples: Record<string, number[]> = { g1: [], g2: [], g4: [], plain: [], raw: [] };
  const pinned = compareVersions(ctx.server.version, "2.11.0") >= 0;
  try {
    await s.bus.provision({ partitions: PARTITIONS });
    const sessions = Array.from({ length: 200 }, () => newId());
    for (let i = 0; i < n; i += sessions.length) await s.bus.publishAll(sessions.slice(0, Math.min(sessions.length, n - i)).map(step));
    await waitPartitioned(s.jsm, partitioned, n);
    for (let i = 0; i < 4; i++) members.push(await connect({ servers: ctx.server.url, namespace: s.ns, name: `jetloop-group-${i}` }));
    let rep = 0;

    const group = async (k: number): Promise<number> => {
      const name = `g${k}r${rep}`;
      let done = 0;
      const t0 = nowMs();
      const subs = await Promise.all(members.slice(0, k).map((b, i) => b.subscribeEvents({ enduring: "all" }, { durable: name, group: { leaseMs: 2000, member: `m${i}` }, start: "all" })));
      const handle = async (d: DurableDelivery<JetloopEvent>) => {
        await sleep(HANDLER_MS);
        await d.ack();
        done++;
      };
      const loops = subs.map(async (sub) => {
        for await (const d of sub) void handle(d);
      });
      while (done < n) await sleep(5);
      const rate = (n / (nowMs() - t0)) * 1000;
      await Promise.all(subs.map((x) => x.close()));
      await Promise.all(loops);
      for (let p = 0; p < PARTITIONS; p++) await s.jsm.consumers.delete(partitioned, `${name}_p${p}`).catch(() => undefined);
      return rate;
    };

    const plain = async (): Promise<number> => {
      const name = `plain${rep}`;
      let done = 0;
      const t0 = nowMs();
      const sub = await s.bus.subscribeEvents({ enduring: "all" }, { durable: name, start: "all" });
      for await (const d of sub) {
        await sleep(HANDLER_MS);
        await d.ack();
        if (++done === n) break;
      }
      const rate = (n / (nowMs() - t0)) * 1000;
      await sub.close();
      await s.jsm.consumers.delete(s.stream, name).catch(() => undefined);
      return rate;
    };

    const raw = async (): Promise<number> => {
      const js = jetstream(s.nc);
      let done = 0;
      const t0 = nowMs();
      const names = Array.from({ length: PARTITIONS }, (_, p) => `raw${rep}_p${p}`);
      await Promise.all(
        names.map((durable, p) =>
          s.jsm.consumers.add(partitioned, {
            durable_name: durable,
            ack_policy: AckPolicy.Explicit,
            deliver_policy: DeliverPolicy.All,
            filter_subject: partitionFilter(s.ns, p),
            max_ack_pending: 1,
            ...(pinned ? { priority_groups: ["g"], priority_policy: "pinned_client" as const, priority_timeout: 2e9 } : {}),
          }),
        ),
      );
      const running = await Promise.all(
        names.map(async (durable) => {
          const c = await js.consumers.get(partitioned, durable);
          const messages = await c.consume({ max_messages: 1, ...(pinned ? { group: "g", priority: 0 } : {}) });
          const loop = (async () => {
            for await (const m of messages) {
              await sleep(HANDLER_MS);
              await m.ackAck();
              done++;
            }
          })();
          return { messages, loop };
        }),
      );
      while (done < n) await sleep(5);
      const rate = (n / (nowMs() - t0)) * 1000;
      for (const r of running) r.messages.stop();
      await Promise.all(running.map((r) => r.loop));
      for (const d of names) await s.jsm.consumers.delete(partitioned, d).catch(() => undefined);
      return rate;
    };

    const contenders: Record<string, () => Promise<number>> = { g1: () => group(1), g2: () => group(2), g4: () => group(4), plain, raw };
    const names = Object.keys(contenders);
    for (rep = 0; rep < ctx.options.reps; rep++) {
      const order = names.map((_, i) => names[(i + rep) % names.length]!);
      for (const name of order) samples[name]!.push(await contenders[name]!());
      ctx.log(`group rep ${rep + 1}: ${names.map((x) => `${x} ${Math.round(samples[x]!.at(-1)!)}/s`).join(", ")}`);
    }
  } finally {
    for (const b of members) await b.close();
    for (const st of [partitioned, defaultMembersStreamName(s.ns), s.bus.parked.stream]) await s.jsm.streams.delete(st).catch(() => undefined);
    await s.close();
  }
  const label = { bench: "11 group", unit: "events/s" };
  const raw = `raw NATS.js: a consumer per partition, max_ack_pending 1${pinned ? ", pinned client" : ""}`;
  return [
    compareRow({ ...label, metric: `1 member, ${PARTITIONS} partitions, ${HANDLER_MS} ms handler`, raw }, samples.g1!, samples.raw!),
    compareRow({ ...label, metric: `2 members, ${PARTITIONS} partitions, ${HANDLER_MS} ms handler`, raw }, samples.g2!, samples.raw!),
    compareRow({ ...label, metric: `4 members, ${PARTITIONS} partitions, ${HANDLER_MS} ms handler`, raw }, samples.g4!, samples.raw!),
    compareRow({ ...label, metric: `1 member vs one plain durable handled in order, ${HANDLER_MS} ms handler`, raw: "jetloop plain durable, one at a time" }, samples.g1!, samples.plain!),
  ];
}
