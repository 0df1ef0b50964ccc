/**
 * A child process that appends for the fan-out benchmark: the realistic deployment, where
 * the runtime that appends is not the process that hosts the viewers. It reads one JSON
 * command per line on stdin, `{ "perLoop": n }`, publishes `perLoop` events to every loop
 * (as the in-process rounds do) and answers `{ "ms": elapsed }`; stdin closing ends it.
 *
 *   node --import tsx bench/lib/appender.ts <server url> <namespace> <loops JSON file>
 */
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { connect, newId } from "../../src/index.js";
import { enduringEvent, publishInChunks, type Coordinates } from "./events.js";
import { nowMs } from "./stats.js";

const [url, namespace, loopsFile] = process.argv.slice(2) as [string, string, string];
const loops = JSON.parse(readFileSync(loopsFile, "utf8")) as Coordinates[];
const bus = await connect({ servers: url, namespace, name: "jetloop-fanout-appender" });
for await (const line of createInterface({ input: process.stdin })) {
  const { perLoop } = JSON.parse(line) as { perLoop: number };
  const events = [];
  // Fresh ids of its own: the template's counter restarts in every process, and the stream
  // would take the parent's ids again as duplicates (Nats-Msg-Id) and store nothing.
  for (let k = 0; k < perLoop; k++) for (const c of loops) events.push({ ...enduringEvent(c), eventId: newId() });
  const t0 = nowMs();
  await publishInChunks(bus, events);
  process.stdout.write(`${JSON.stringify({ ms: nowMs() - t0 })}\n`);
}
await bus.close();
