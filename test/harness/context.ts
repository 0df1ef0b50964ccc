// Helpers for integration test files: the shared server's URL, a per-file namespace,
// and connections that are closed after the file's tests.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type ConnectionOptions, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, inject } from "vitest";
import { connect as connectBus, type Jetloop } from "../../src/index.js";
import { uniqueNamespace } from "./namespace.js";

/** Client URL of the server that the globalSetup provided (or NATS_URL). */
export function natsUrl(): string {
  return inject("natsUrl");
}

/** natsUrl() split into a list of server URLs. */
export function natsServers(): string[] {
  return natsUrl()
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** "oldest" | "newest" | "external". */
export function natsServerFlavor(): string {
  return inject("natsServerFlavor");
}

/** "processes" | "containers" | "external": what the harness starts servers as. */
export function natsServerBackend(): string {
  return inject("natsServerBackend");
}

/** The shared server's version, e.g. "2.10.27" ("unknown" when external). */
export function natsServerVersion(): string {
  return inject("natsServerVersion");
}

export { uniqueNamespace };

const open = new Set<NatsConnection>();

/**
 * Connects to the shared server (or to opts.servers). The connection is closed after
 * the calling file's tests (afterAll), or earlier by the test itself.
 */
export async function connectTest(opts: ConnectionOptions = {}): Promise<NatsConnection> {
  const nc = await connect({ servers: natsServers(), name: "jetloop-test", ...opts });
  open.add(nc);
  void nc.closed().then(() => open.delete(nc));
  return nc;
}

/** Closes every connection connectTest opened (runs after each file: file-hooks.ts). */
export async function closeTestConnections(): Promise<void> {
  const all = [...open];
  open.clear();
  await Promise.all(all.map((nc) => (nc.isClosed() ? Promise.resolve() : nc.close())));
}

/**
 * A bus of the file's own: connected and provisioned before its tests, handed to `use`;
 * afterwards the cleanups pushed on the returned list run (last first), the events stream
 * and parked store are deleted and the bus is closed.
 */
export function provisionedBus(use: (bus: Jetloop, jsm: JetStreamManager) => void): (() => Promise<unknown>)[] {
  const cleanup: (() => Promise<unknown>)[] = [];
  let bus: Jetloop | undefined;
  let jsm: JetStreamManager | undefined;
  beforeAll(async () => {
    bus = await connectBus({ servers: natsServers(), namespace: uniqueNamespace() });
    await bus.provision();
    jsm = await jetstreamManager(bus.nc);
    use(bus, jsm);
  });
  afterAll(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined);
    for (const s of bus ? [bus.stream, bus.parked.stream] : []) await jsm?.streams.delete(s).catch(() => undefined);
    await bus?.close();
  });
  return cleanup;
}
