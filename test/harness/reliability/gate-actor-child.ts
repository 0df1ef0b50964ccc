// A loop actor with one permission gate open, run as its own process by the answer-path
// scenario (scenarios/answer-path.ts) so that it can be killed with SIGKILL while it waits:
//
//   node --import tsx test/harness/reliability/gate-actor-child.ts
//
// Environment: JETLOOP_SERVERS (comma-separated), JETLOOP_NS, JETLOOP_SESSION, JETLOOP_LOOP,
// JETLOOP_TURN, JETLOOP_STEP, JETLOOP_TOOL. It prints "ready" once its gate is open.
import { connect } from "../../../src/index.js";

const env = (k: string): string => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};

const bus = await connect({ servers: env("JETLOOP_SERVERS").split(","), namespace: env("JETLOOP_NS"), natsOptions: { name: "gate-actor-child" } });
const gates = await bus.serveGates(env("JETLOOP_SESSION"), env("JETLOOP_LOOP"));
const request = { toolName: "bash", summary: "rm -rf build", requirements: [{ kind: "fs.write", match: "build/**", description: "write build/" }] };
void gates.requestPermission({ turnId: env("JETLOOP_TURN"), stepId: env("JETLOOP_STEP"), toolExecutionId: env("JETLOOP_TOOL"), request });
// The gate is open once its GateOpened is in the journal: wait for it, then say so.
for (;;) {
  let open = false;
  for await (const d of bus.session(env("JETLOOP_SESSION")).replay({ enduring: { loops: [env("JETLOOP_LOOP")] }, types: ["GateOpened"] })) open ||= d.event.type === "GateOpened";
  if (open) break;
  await new Promise((r) => setTimeout(r, 20));
}
process.stdout.write("ready\n");
// Waits to be killed.
setInterval(() => undefined, 1 << 30);
