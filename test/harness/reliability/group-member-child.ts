// One member of a partitioned durable group, run as its own process by the group scenario
// (scenarios/group.ts) so that it can be killed with SIGKILL mid-run:
//
//   node --import tsx test/harness/reliability/group-member-child.ts
//
// Environment: JETLOOP_SERVERS (comma-separated), JETLOOP_NS, JETLOOP_GROUP, JETLOOP_MEMBER,
// JETLOOP_OUT (file), JETLOOP_MAX_DELAY_MS (random work per event, 0..max),
// JETLOOP_LEASE_MS, JETLOOP_ACK_WAIT_MS; JETLOOP_JOIN_ON_SIGNAL=1: connect, say "ready",
// and join the group only on SIGUSR2 (a process starts in seconds; joining is the event).
//
// Every delivery is handed to its handler at once (the group keeps one outstanding per
// partition, so handlers of different partitions run side by side). A handler records
// `S <journalSeq> <sessionId> <eventId> <deliveryCount> <time>` when it starts and
// `E …` when its work is done, just before it acknowledges (synchronous writes: a SIGKILL
// loses nothing recorded). Every 100 ms, when they changed, the partitions it owns:
// `O <time> <p,p,…>`. Times are this machine's wall clock in fractional ms, comparable
// between the processes.
import { appendFileSync } from "node:fs";
import { connect } from "../../../src/index.js";
import { sleep } from "../async.js";

const env = (k: string): string => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const now = () => (performance.timeOrigin + performance.now()).toFixed(3);

const bus = await connect({ servers: env("JETLOOP_SERVERS").split(","), namespace: env("JETLOOP_NS"), natsOptions: { name: "reliability-group-member" } });
if (process.env.JETLOOP_JOIN_ON_SIGNAL === "1") {
  process.stdout.write("ready\n");
  await new Promise((r) => process.once("SIGUSR2", r));
}
const sub = await bus.subscribeEvents(
  { enduring: "all" },
  { durable: env("JETLOOP_GROUP"), group: { member: env("JETLOOP_MEMBER"), leaseMs: Number(env("JETLOOP_LEASE_MS")) }, ackWaitMs: Number(env("JETLOOP_ACK_WAIT_MS")), start: "all" },
);
const out = env("JETLOOP_OUT");
const maxDelay = Number(process.env.JETLOOP_MAX_DELAY_MS ?? 0);
let owned = "";
const watch = setInterval(() => {
  const now_ = sub.group()!.owned.join(",");
  if (now_ !== owned) appendFileSync(out, `O ${now()} ${(owned = now_) || "-"}\n`);
}, 100);
if (process.env.JETLOOP_JOIN_ON_SIGNAL !== "1") process.stdout.write("ready\n");

process.on("SIGTERM", () => {
  clearInterval(watch);
  void sub.close().then(() => bus.close()).then(() => process.exit(0));
});

for await (const d of sub) {
  void (async () => {
    const line = `${d.journalSeq} ${d.event.sessionId} ${d.event.eventId} ${d.deliveryCount}`;
    appendFileSync(out, `S ${line} ${now()}\n`);
    if (maxDelay > 0) await sleep(Math.random() * maxDelay);
    appendFileSync(out, `E ${line} ${now()}\n`);
    await d.ack();
  })();
}
