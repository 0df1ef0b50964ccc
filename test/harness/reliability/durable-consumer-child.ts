// A small durable consumer, run as its own process by the consumer-crash scenario
// (scenarios/consumer-crash.ts) so that it can be killed with SIGKILL mid-batch:
//
//   node --import tsx test/harness/reliability/durable-consumer-child.ts
//
// Environment: JETLOOP_SERVERS (comma-separated), JETLOOP_NS, JETLOOP_DURABLE,
// JETLOOP_OUT (file), JETLOOP_DELAY_MS (work per event), JETLOOP_ACK_WAIT_MS.
//
// For each delivery it does its "work" (a short sleep), records it — appends
// `<journalSeq> <eventId> <deliveryCount>` to JETLOOP_OUT with a synchronous write — and
// only then acknowledges it. That is at-least-once processing: a kill between the record
// and the ack leaves a recorded event unacknowledged, so it is delivered again.
import { appendFileSync } from "node:fs";
import { connect } from "../../../src/index.js";
import { sleep } from "../async.js";

const env = (k: string): string => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};

const bus = await connect({ servers: env("JETLOOP_SERVERS").split(","), namespace: env("JETLOOP_NS"), natsOptions: { name: "reliability-child" } });
const sub = await bus.subscribeEvents(
  { enduring: "all" },
  { durable: env("JETLOOP_DURABLE"), ackWaitMs: Number(process.env.JETLOOP_ACK_WAIT_MS ?? 2000), batch: 16 },
);
const out = env("JETLOOP_OUT");
const delay = Number(process.env.JETLOOP_DELAY_MS ?? 0);
process.stdout.write("ready\n");

const stop = (): void => {
  void sub.close().then(() => bus.close()).then(() => process.exit(0));
};
process.on("SIGTERM", stop);

for await (const d of sub) {
  if (delay > 0) await sleep(delay);
  appendFileSync(out, `${d.journalSeq} ${(d.event as { eventId: string }).eventId} ${d.deliveryCount}\n`);
  await d.ack();
}
