// Loads what the Go runtime's session store wrote into a real nats-server
// (test/conformance/data/natsstore/, recorded with looprig/natsstore) into the server at
// $NATS_URL (or --server URL), exactly as recorded: its three sessions' streams, the
// catalog KV natsstore_kv, the leases and the object store. For docs/go-interop.md: a Go
// runtime's sessions to attach without running one. Refuses a server that already has
// them (a stream of that name exists).
import { connect } from "@nats-io/transport-node";
import { loadRecording, readRecording } from "../test/harness/natsstore.js";

const i = process.argv.indexOf("--server");
const servers = i >= 0 ? process.argv[i + 1] : (process.env.NATS_URL ?? "nats://127.0.0.1:4222");
const nc = await connect({ servers });
try {
  await loadRecording(nc);
  const sessions = readRecording().streams.filter((s) => s.config.name.startsWith("sessions_s"));
  process.stdout.write(`loaded the Go runtime's recorded store: ${sessions.length} sessions (${sessions.map((s) => s.config.name).join(", ")}), the catalog, the leases and the object store\n`);
} finally {
  await nc.close();
}
