// The durability profile on single servers: what `provision --durability strict` refuses
// (no cluster: it cannot have 3 replicas), and the sync setting read back from /varz —
// `provision --verify` and `jetloop consumers` warn on a server that acknowledges before
// syncing, not on one with `sync_interval: always`. The three-node half is in
// cluster.test.ts. The commands run in this process (jetloopIn): the entry point is cli.test.ts's.
import { dirname } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, type Jetloop, newId, OptionsError } from "../../src/index.js";
import { jetloopIn } from "../harness/cli.js";
import { rejection } from "../harness/async.js";
import { uniqueNamespace } from "../harness/context.js";
import { removeTempDir, startServer, type NatsServer } from "../harness/server.js";
import { singleConfWithJetstream } from "../harness/reliability/scenarios/durability.js";

let plain: NatsServer;
let strict: NatsServer;
let strictConf: string;

beforeAll(async () => {
  strictConf = singleConfWithJetstream("sync_interval: always");
  [plain, strict] = await Promise.all([startServer(), startServer({ configFile: strictConf })]);
}, 60_000);

afterAll(async () => {
  await Promise.all([plain?.close(), strict?.close()]);
  if (strictConf) removeTempDir(dirname(strictConf));
});

async function withBus<T>(server: NatsServer, use: (bus: Jetloop) => Promise<T>): Promise<T> {
  const bus = await connect({ servers: server.url, namespace: uniqueNamespace() });
  try {
    return await use(bus);
  } finally {
    await bus.close();
  }
}

describe("the sync setting, read from /varz", () => {
  it("provision warns of a server that acknowledges before syncing, and not of one that syncs always", async () => {
    const onPlain = await withBus(plain, (bus) => bus.provision({ monitor: [plain.monitorUrl] }));
    expect(onPlain.durability.settings).toEqual([{ monitorUrl: plain.monitorUrl, serverName: expect.any(String) as string, syncAlways: false, syncIntervalNs: 120e9 }]);
    expect(onPlain.durability.warnings).toHaveLength(1);
    expect(onPlain.durability.warnings[0]!.message).toMatch(/acknowledges appends before syncing them to disk \(sync_interval 120s, not always\)/);

    const onStrict = await withBus(strict, (bus) => bus.provision({ monitor: [strict.monitorUrl] }));
    expect(onStrict.durability).toMatchObject({ profile: "default", warnings: [], settings: [{ syncAlways: true }] });
  });

  it("jetloop provision --verify and jetloop consumers warn on the default server only", async () => {
    for (const [server, warns] of [[plain, true], [strict, false]] as const) {
      const base = ["--server", server.url, "--namespace", uniqueNamespace(), "--monitor", server.monitorUrl];
      expect((await jetloopIn(["provision", ...base])).code).toBe(0);
      const verify = await jetloopIn(["provision", "--verify", ...base]);
      expect(verify.code).toBe(0);
      const consumers = await jetloopIn(["consumers", ...base]);
      expect(consumers.code).toBe(0);
      for (const run of [verify, consumers]) {
        expect(run.stderr.includes("acknowledges appends before syncing"), `${server.monitorUrl}: ${run.stderr}`).toBe(warns);
      }
      expect(verify.stdout).toContain(warns ? "syncs every 120s" : "syncs before every ack");
    }
  }, 120_000);

  it("a monitoring URL that does not answer is a warning naming it, never silence", async () => {
    const report = await withBus(plain, (bus) => bus.provision({ monitor: ["http://127.0.0.1:1"] }));
    expect(report.durability.warnings.map((w) => w.message)).toEqual([expect.stringContaining("the sync setting of http://127.0.0.1:1 could not be read") as string]);
  });

  it("refuses what it cannot read: a monitor that is not an http(s) URL, an unknown profile (OptionsError, nothing provisioned)", async () => {
    await withBus(plain, async (bus) => {
      for (const request of [{ monitor: ["nats://127.0.0.1:4222"] }, { monitor: ["not a url"] }, { monitor: "http://x" }, { durability: "paranoid" }]) {
        expect(await rejection(bus.provision(request as never)), JSON.stringify(request)).toBeInstanceOf(OptionsError);
      }
      expect(await rejection(bus.publish(createEvent("SessionStarted", { sessionId: newId() })))).toMatchObject({ code: "NOT_PROVISIONED" });
    });
  });
});

describe("the strict profile on a single server", () => {
  it("is refused: strict needs a cluster for 3 replicas (OptionsError; nothing provisioned)", async () => {
    await withBus(strict, async (bus) => {
      expect(await rejection(bus.provision({ durability: "strict", monitor: [strict.monitorUrl] }))).toMatchObject({ code: "OPTIONS_INVALID", option: "durability" });
      expect(await rejection(bus.publish(createEvent("SessionStarted", { sessionId: newId() })))).toMatchObject({ code: "NOT_PROVISIONED" });
    });
    const cli = await jetloopIn(["provision", "--durability", "strict", "--server", strict.url, "--namespace", uniqueNamespace()]);
    expect(cli.code).not.toBe(0);
    expect(cli.stderr).toContain("strict needs a cluster");
  });
});
