// `jetloop provision` on a namespace split in 3 shards (one server): --verify without
// --shards verifies the count the namespace has, a line per shard; another count, or none
// when provisioning (which means one), is refused as a migration and creates nothing.
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type Jetloop } from "../../src/index.js";
import { jetloopIn } from "../harness/cli.js";
import { connectTest, natsServers, uniqueNamespace } from "../harness/context.js";

const S = 3;
let bus: Jetloop;
let namespace: string;
const server = () => ["--server", natsServers().join(","), "--namespace", namespace];

beforeAll(async () => {
  namespace = uniqueNamespace();
  bus = await connect({ servers: natsServers(), namespace, shards: S });
  await bus.provision();
});

afterAll(async () => {
  const jsm = await jetstreamManager(await connectTest());
  for (let k = 0; k < S; k++) await jsm.streams.delete(`${bus.stream}_${k}_of_${S}`).catch(() => undefined);
  await jsm.streams.delete(bus.parked.stream).catch(() => undefined);
  await bus?.close();
});

describe("provision on a namespace of 3 shards, from the command line", () => {
  it("--verify without --shards verifies every shard", async () => {
    const r = await jetloopIn(["provision", "--verify", ...server()]);
    expect(r).toMatchObject({ code: 0, stderr: "" });
    for (let k = 0; k < S; k++) expect(r.stdout).toContain(`stream ${bus.stream}_${k}_of_${S}: unchanged`);
    expect((await jetloopIn(["provision", "--verify", "--shards", String(S), ...server()])).stdout).toBe(r.stdout);
  });

  it("another count, or none when provisioning (one), is refused with SHARD_LAYOUT and creates nothing", async () => {
    for (const args of [["provision"], ["provision", "--shards", "2"], ["provision", "--verify", "--shards", "1"]]) {
      const r = await jetloopIn([...args, ...server()]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/provisioned in 3 shards.*a migration/s);
    }
    const jsm = await bus.jetstreamManager();
    await expect(jsm.streams.info(bus.stream)).rejects.toThrow();
    await expect(jsm.streams.info(`${bus.stream}_0_of_2`)).rejects.toThrow();
  });
});
