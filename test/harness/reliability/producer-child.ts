// A producer run as its own process by the producer-crash scenario
// (scenarios/producer-crash.ts), so that it can be killed with SIGKILL mid-publish:
//
//   node --import tsx test/harness/reliability/producer-child.ts
//
// Environment: JETLOOP_SERVERS (comma-separated), JETLOOP_NS, JETLOOP_EVENTS (a JSON file
// of events), JETLOOP_MODE (`unfenced`: one publishAll; `fenced`: one session, each event
// fenced on the one before), JETLOOP_SINCE (ISO time: with it, the run resumes — publishAll
// with resume.since, or the fenced chain from its start), JETLOOP_OUT (file: one line per
// settled event, `<eventId> <journalSeq> <duplicate>`, written synchronously).
import { appendFileSync, readFileSync } from "node:fs";
import { connect, type JetloopEvent } from "../../../src/index.js";

const env = (k: string): string => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};

const events = JSON.parse(readFileSync(env("JETLOOP_EVENTS"), "utf8")) as JetloopEvent[];
const out = env("JETLOOP_OUT");
const since = process.env.JETLOOP_SINCE ? new Date(process.env.JETLOOP_SINCE) : undefined;
// The deadline fits in the scenario's short duplicate window (provisioning checks it).
const bus = await connect({ servers: env("JETLOOP_SERVERS").split(","), namespace: env("JETLOOP_NS"), publishDeadlineMs: 2000, ackTimeoutMs: 500, maxInFlight: 64, natsOptions: { name: "reliability-producer" } });
process.stdout.write("ready\n");
const write = (r: { eventId: string; journalSeq: number; duplicate: boolean }) => appendFileSync(out, `${r.eventId} ${r.journalSeq} ${r.duplicate}\n`);

if (env("JETLOOP_MODE") === "fenced") {
  // One writer per session: a restart walks the chain again; each stored event answers
  // duplicate with its sequence, which fences the next.
  let last = 0;
  for (const e of events) {
    const r = await bus.publish(e, { expectedLastSeq: last });
    write(r);
    last = r.journalSeq;
  }
} else {
  const results = await bus.publishAll(events, since ? { resume: { since } } : {});
  for (const r of results) write(r);
}
process.stdout.write("done\n");
await bus.close();
