/**
 * 14. Attach throughput: a Go runtime's natsstore sessions followed into a jetloop journal
 * (`attach()`, src/attach/), against reading the same session streams with an ordered
 * consumer that decodes each envelope, base64-decodes its body and runs JSON.parse on it:
 * the floor of any reader of the Go layout. Both read SESSIONS sessions, 16 at a time (the
 * attach's default); each session holds the recorded mix of Go events (the recording's
 * three sessions' 58 events, renamed to the session) behind its fence, written as natsstore
 * writes them (test/harness/natsstore.ts). The attach also appends every event to the
 * journal, fenced, one at a time per session: that is its work, and it is timed.
 * Each jetloop round attaches a fresh namespace (an attach resumes from the journal, so a
 * second round on the same namespace would append nothing).
 */
import { DeliverPolicy, type StreamConfig } from "@nats-io/jetstream";
import { headers } from "@nats-io/transport-node";
import { attach, connect } from "../src/index.js";
import { goEnvelope, readRecording, recordedGoEvents } from "../test/harness/natsstore.js";
import { uniqueNamespace } from "../test/harness/namespace.js";
import { type BenchContext, type Row, compareRow } from "./lib/context.js";
import { nowMs, rotatedRounds } from "./lib/stats.js";

const READERS = 16;
const S103 = "6f1c2a3b-4d5e-4f60-8a7b-000000000103";

export async function runAttach(ctx: BenchContext): Promise<Row[]> {
  const recorded = [...recordedGoEvents().entries()].flatMap(([sid, events]) => events.map((e) => ({ sid, ...e })));
  // The recording's mix is one event of 675 KB (the one Go offloaded to the object store)
  // and 57 of about 500 B: measured as it is, and without the large one.
  return [
    ...(await measureMix(ctx, "the recorded mix", recorded, 0xd00000000000)),
    ...(await measureMix(ctx, "the recorded mix without its 675 KB event", recorded.filter((e) => e.bytes.length < 64 * 1024), 0xe00000000000)),
  ];
}

async function measureMix(ctx: BenchContext, what: string, mix: readonly { sid: string; id: string; bytes: Buffer }[], idBase: number): Promise<Row[]> {
  const sessions = ctx.options.quick ? 40 : 200;
  const s = await ctx.setup("attach");
  const ids = Array.from({ length: sessions }, (_, i) => `6f1c2a3b-4d5e-4f60-8a7b-${(idBase + i).toString(16)}`);
  const perSession = mix.length;
  const total = sessions * perSession;
  const { metadata: _m, ...config } = readRecording().streams.find((x) => x.config.name === `sessions_s${S103}`)!.config;
  const streams = ids.map((sid) => `sessions_s${sid}`);
  const bytes = { go: 0 };
  let samples: Record<"jetloop" | "raw", number[]>;
  try {
    // The Go side: a stream per session, a fence, then the mix, each record fenced on the
    // stream's last sequence as natsstore writes it.
    const t0 = nowMs();
    await pool(ids, READERS, async (sid) => {
      await s.jsm.streams.add({ ...(config as unknown as StreamConfig), name: `sessions_s${sid}`, subjects: [`sessions.${sid}`] });
      // Each event its own id (ids are unique per Go session, and the journal's duplicate
      // window is stream-wide: shared ids would cost every session after the first a read-back).
      const n = ids.indexOf(sid);
      const records = [
        goEnvelope("fence", "1", Buffer.from('{"epoch":1}')),
        ...mix.map((e, k) => {
          const id = `${e.id.slice(0, 24)}${(n * perSession + k).toString(16).padStart(12, "0")}`;
          return goEnvelope("event", id, Buffer.from(e.bytes.toString().split(e.sid).join(sid).split(e.id).join(id)));
        }),
      ];
      await Promise.all(
        records.map((data, k) => {
          bytes.go += data.length;
          const h = headers();
          h.set("Nats-Expected-Last-Sequence", String(k));
          return s.js.publish(`sessions.${sid}`, data, { headers: h });
        }),
      );
    });
    ctx.log(`attach, ${what}: ${sessions} Go sessions of ${perSession} events (${total} events, ${Math.round(bytes.go / total)} B a record) written in ${Math.round(nowMs() - t0)} ms`);

    const contenders = {
      jetloop: async (): Promise<number> => {
        const bus = await connect({ servers: ctx.server.url, namespace: uniqueNamespace("benchattach"), name: "jetloop-attach" });
        try {
          await bus.provision();
          const started = nowMs();
          const a = await attach(bus, { readers: READERS, onReport: () => undefined });
          await a.caughtUp();
          const ms = nowMs() - started;
          const appended = a.sessions().reduce((n, x) => n + (ids.includes(x.sessionId) ? x.appended : 0), 0);
          await a.close();
          if (appended !== total) throw new Error(`attach appended ${appended} of ${total}`);
          for (const j of bus.journals()) await s.jsm.streams.delete(j.stream).catch(() => undefined);
          return (total / ms) * 1000;
        } finally {
          await bus.close();
        }
      },
      raw: async (): Promise<number> => {
        const decoder = new TextDecoder();
        let events = 0;
        const started = nowMs();
        await pool(streams, READERS, async (stream) => {
          const consumer = await s.js.consumers.get(stream, { deliver_policy: DeliverPolicy.All });
          const messages = await consumer.consume({ max_messages: 512 });
          for await (const m of messages) {
            const env = JSON.parse(decoder.decode(m.data)) as { kind: string; body: string };
            if (env.kind === "event") {
              JSON.parse(decoder.decode(Buffer.from(env.body, "base64")));
              events++;
            }
            if (m.info.pending === 0) break;
          }
          messages.stop();
          await messages.close().catch(() => undefined);
        });
        const ms = nowMs() - started;
        if (events !== total) throw new Error(`the raw reader read ${events} of ${total}`);
        return (total / ms) * 1000;
      },
    };
    samples = await rotatedRounds(`attach, ${what}`, ctx.options.reps, (m) => ctx.log(m), contenders);
  } finally {
    for (const st of streams) await s.jsm.streams.delete(st).catch(() => undefined);
    await s.close();
  }
  return [
    compareRow(
      { bench: "14 attach", metric: `throughput, ${what}: ${sessions} Go sessions × ${perSession} events`, unit: "events/s", raw: "ordered consumer + envelope JSON.parse + base64 + JSON.parse, no append" },
      samples.jetloop,
      samples.raw,
    ),
  ];
}

/** Runs `task` over `items`, at most `width` at a time. */
async function pool<T>(items: readonly T[], width: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) await task(items[next++]!);
    }),
  );
}
