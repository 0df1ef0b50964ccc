// A durable consumer whose handler fails some events, run as its own process by the
// parking scenario (scenarios/parking.ts):
//
//   node --import tsx test/harness/reliability/parking-child.ts
//
// Environment: JETLOOP_SERVERS (comma-separated), JETLOOP_NS, JETLOOP_DURABLE, JETLOOP_OUT
// (file), JETLOOP_FAIL_EVERY (fail every event whose journal sequence is a multiple of
// it; 0: the bug is fixed, fail nothing), JETLOOP_MAX_DELIVER, JETLOOP_BACKOFF_MS,
// JETLOOP_KILL_ON_PARK=1 (SIGKILL itself once its first parked entry is stored, as the
// original's term is about to be sent).
//
// Records, one line each, written synchronously before the action they describe:
//   H <seq> <eventId> <deliveryCount> <replayed>   handed to the handler
//   A <seq> <eventId> <replayed>                   about to be acknowledged
//   P <seq> <reason> <code>                        parked (reported by the subscription)
import { appendFileSync } from "node:fs";
import { connect } from "../../../src/index.js";

const env = (k: string): string => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};

const out = env("JETLOOP_OUT");
const durable = env("JETLOOP_DURABLE");
const failEvery = Number(process.env.JETLOOP_FAIL_EVERY ?? 0);
const bus = await connect({ servers: env("JETLOOP_SERVERS").split(","), namespace: env("JETLOOP_NS"), natsOptions: { name: "parking-child" } });
if (process.env.JETLOOP_KILL_ON_PARK === "1") {
  // Dies as the original's +TERM is about to leave, after the parked entry was stored and
  // acknowledged: exactly between parking and terminating. (A core subscriber on the parked
  // subjects raced: on 2.15.1 under load the store's ack could arrive a read before the
  // copy, and the term and the report went out first.)
  const protocol = (bus.nc as unknown as { protocol: { publish(subject: string, payload?: Uint8Array, options?: unknown): void } }).protocol;
  const publish = protocol.publish.bind(protocol);
  const term = new TextEncoder().encode("+TERM");
  protocol.publish = (subject, payload, options) => {
    if (subject.startsWith("$JS.ACK.") && payload !== undefined && term.every((b, i) => payload[i] === b)) process.kill(process.pid, "SIGKILL");
    publish(subject, payload, options);
  };
}
const sub = await bus.subscribeEvents(
  { enduring: "all" },
  {
    durable,
    maxDeliver: Number(process.env.JETLOOP_MAX_DELIVER ?? 3),
    backoffMs: [Number(process.env.JETLOOP_BACKOFF_MS ?? 200)],
    batch: 4,
    onReport: (r) => {
      if (r.kind === "parked") appendFileSync(out, `P ${r.journalSeq} ${r.reason} ${r.code}\n`);
    },
  },
);
process.stdout.write("ready\n");

const stop = (): void => {
  void sub.close().then(() => bus.close()).then(() => process.exit(0));
};
process.on("SIGTERM", stop);

for await (const d of sub) {
  const id = (d.event as { eventId: string }).eventId;
  appendFileSync(out, `H ${d.journalSeq} ${id} ${d.deliveryCount} ${d.replayed}\n`);
  if (failEvery > 0 && d.journalSeq % failEvery === 0) {
    await d.fail(new Error("downstream rejects it (bug 42)"));
  } else {
    appendFileSync(out, `A ${d.journalSeq} ${id} ${d.replayed}\n`);
    await d.ack();
  }
}
