// docs/go-interop.md's walkthrough run as written, line by line, against a private
// nats-server at $NATS_URL (`npx jetloop` is this clone's CLI, run from source): the
// recording loaded, the namespace provisioned, the Go sessions attached once and again
// (nothing appended the second time), listed and replayed.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, startServer, type NatsServer } from "../harness/server.js";

const doc = readFileSync(join(REPO_ROOT, "docs/go-interop.md"), "utf8");
const block = /<!-- go-interop walkthrough -->\n```sh\n([\s\S]*?)^```$/m.exec(doc)?.[1] ?? "";
const lines = block.split("\n").filter((l) => l.trim() !== "" && !l.startsWith("#"));

describe("docs/go-interop.md's walkthrough", () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startServer();
  }, 30_000);
  afterAll(async () => {
    await server?.close();
  });

  it("runs as written", () => {
    expect(lines).toHaveLength(6);
    const results = lines.map((line) => {
      const command = line.replace(/^npx jetloop /, `${JSON.stringify(process.execPath)} --import tsx src/cli/main.ts `);
      const r = spawnSync("bash", ["-c", command], { cwd: REPO_ROOT, env: { ...process.env, NATS_URL: server.url }, encoding: "utf8", timeout: 60_000 });
      expect(r.status, `${line}\n${r.stderr}`).toBe(0);
      return { out: r.stdout, err: r.stderr };
    });
    expect(results[0]!.out).toContain("loaded the Go runtime's recorded store: 3 sessions");
    expect(results[2]!.err).toContain("caught up: 3 Go sessions, 58 events appended, 0 records parked");
    const sessions = results[3]!.out;
    for (const id of ["6f1c2a3b-4d5e-4f60-8a7b-000000000101", "01936d2e-7a10-7c3d-9e4f-000000000102", "6f1c2a3b-4d5e-4f60-8a7b-000000000103"]) expect(sessions).toContain(id);
    const replayed = results[4]!.out.split("\n").filter((l) => l !== "");
    expect(replayed.length).toBeGreaterThan(0);
    for (const l of replayed) expect(l).toContain('"type":"TurnStarted"');
    expect(results[5]!.err).toContain("caught up: 3 Go sessions, 0 events appended, 0 records parked");
  }, 180_000);
});
