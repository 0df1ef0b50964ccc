// bus.close() with a replay suspended mid-way: the process must be free to exit (NATS.js's
// heartbeat timer of the read outlived the bus before), and the replay, resumed, must say
// the bus closed — not end as if the journal ended there. Each read mode, in a child process.
import { execFile } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type Jetloop } from "../../src/index.js";
import { natsServers } from "../harness/context.js";
import { uniqueNamespace } from "../harness/namespace.js";

let bus: Jetloop;
beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: uniqueNamespace("rc") });
  await bus.provision();
});
afterAll(async () => {
  await bus.jetstreamManager().then((m) => m.streams.delete(bus.stream)).catch(() => undefined);
  await bus.close();
});

function child(mode: string): Promise<{ exited: boolean; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const args = ["--import", "tsx", "test/fixtures/suspended-replay.ts", natsServers().join(","), bus.namespace, mode];
    // Killed at 25 s: a process still alive then was kept alive by the closed bus (a read's
    // heartbeat timer recurs: such a process never exits). Starting one takes ~3 s alone,
    // over 12 s beside a full run's other files on 2 cores.
    execFile(process.execPath, args, { timeout: 25_000 }, (error, stdout, stderr) => resolve({ exited: error === null, stdout, stderr }));
  });
}

describe.concurrent("a replay suspended when the bus closes", () => {
  for (const mode of ["pull", "push", "pool"]) {
    it(`${mode} reads: the process exits by itself, and the resumed replay fails CONNECTION_CLOSED`, async () => {
      const r = await child(mode);
      expect(r.stderr).toBe("");
      expect(r.exited, "exited within 25 s").toBe(true);
      const out = JSON.parse(r.stdout) as { seqs: number[]; code: string };
      expect(out.seqs).toHaveLength(2);
      expect(out.code).toBe("CONNECTION_CLOSED");
    }, 40_000);
  }
});
