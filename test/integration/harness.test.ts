// Proves the test harness: the shared server and a private restartable server (the
// three-node cluster: harness-cluster.test.ts).
import { spawnSync } from "node:child_process";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import { connectTest, natsServerBackend, natsServerFlavor, natsServerVersion, natsUrl, uniqueNamespace } from "../harness/context.js";
import { findServerBinary, serverVersion, startServer, type NatsServer } from "../harness/server.js";
import { messageCount } from "../harness/stream-state.js";

const ns = uniqueNamespace();

describe("harness", () => {
  it("gives each file a short lowercase namespace", () => {
    expect(ns).toMatch(/^t[0-9a-z]{10}$/);
    expect(uniqueNamespace()).not.toBe(ns);
  });

  it("provides a JetStream server of the project's flavor", async () => {
    expect(natsUrl()).toMatch(/^nats:\/\//);
    const flavor = natsServerFlavor();
    if (flavor !== "external") {
      expect(flavor).toBe(process.env.JETLOOP_NATS_SERVER);
      // Containers may run an official image rather than the local binary's version.
      if (natsServerBackend() === "processes") expect(natsServerVersion()).toBe(serverVersion(findServerBinary()));
      if (flavor === "oldest") expect(natsServerVersion()).toMatch(/^2\.10\./);
    }
    const nc = await connectTest();
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: ns, subjects: [`${ns}.>`] });
    const ack = await jetstream(nc).publish(`${ns}.hello`, "world");
    expect(ack.seq).toBe(1);
    const msg = await jsm.streams.getMessage(ns, { seq: 1 });
    expect(msg?.string()).toBe("world");
    await jsm.streams.delete(ns);
  });
});

/** Whether a testcontainers container publishes this host port (false without an engine). */
function publishedByContainer(port: number): boolean {
  const r = spawnSync("docker", ["ps", "--filter", "label=org.testcontainers=true", "--format", "{{.Ports}}"], { encoding: "utf8" });
  return r.status === 0 && r.stdout.includes(`:${port}->4222/tcp`);
}

describe("the backend", () => {
  // An external server (NATS_URL) was started by no backend of the harness: nothing to check.
  it.skipIf(natsServerBackend() === "external")("runs the shared server as the backend says: in a container or as a process", () => {
    const backend = natsServerBackend();
    expect(["processes", "containers"]).toContain(backend);
    expect(publishedByContainer(Number(new URL(natsUrl()).port))).toBe(backend === "containers");
  });
});

describe("a private server", () => {
  let server: NatsServer | undefined;
  afterAll(async () => {
    await server?.close();
  });

  it("keeps its stream across a restart and a crash", async () => {
    server = await startServer();
    const stream = `${ns}_own`;
    const subject = `${ns}.own`;

    let nc = await connect({ servers: server.url });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: stream, subjects: [subject] });
    await jetstream(nc).publish(subject, "one");
    await nc.close();

    await server.restart();
    nc = await connect({ servers: server.url });
    await jetstream(nc).publish(subject, "two");
    expect((await (await jetstreamManager(nc)).streams.getMessage(stream, { seq: 1 }))?.string()).toBe("one");
    await nc.close();

    await server.kill(); // SIGKILL: a crash
    expect(server.running).toBe(false);
    await server.restart();
    nc = await connect({ servers: server.url });
    expect(await messageCount(await jetstreamManager(nc), stream)).toBe(2);
    await nc.close();
  });

  it("can be paused and resumed", async () => {
    server ??= await startServer();
    const nc = await connect({ servers: server.url });
    nc.subscribe(`${ns}.echo`, {
      callback: (_err, m) => {
        m.respond(m.data);
      },
    });
    await nc.flush();
    // Repeated: a pause() that returned before every thread had stopped let ~3% of
    // requests through.
    for (let i = 0; i < 10; i++) {
      server.pause();
      await expect(nc.request(`${ns}.echo`, "ping", { timeout: 200 })).rejects.toThrow();
      server.resume();
      expect((await nc.request(`${ns}.echo`, "ping", { timeout: 5_000 })).string()).toBe("ping");
    }
    await nc.close();
  });

  it("accepts extra configuration (users and permissions)", async () => {
    const locked = await startServer({
      configText: `authorization { users: [ { user: alice, password: secret, permissions: { publish: "${ns}.alice.>", subscribe: "_INBOX.>" } } ] }`,
    });
    try {
      await expect(connect({ servers: locked.url, reconnect: false })).rejects.toThrow(/authorization/i);
      const nc = await connect({ servers: locked.url, user: "alice", pass: "secret" });
      await nc.flush();
      await nc.close();
    } finally {
      await locked.close();
    }
  });
});
