// Provisioning the events stream against a real nats-server: idempotent, drift reported
// and (when the live stream can take it) corrected, incompatible streams left alone.
import { DiscardPolicy, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager, type StreamConfig } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  connect,
  createEvent,
  declaredStreamConfig,
  diffStreamConfig,
  fromConnection,
  type Jetloop,
  JetloopError,
  newId,
  ProvisionDriftError,
} from "../../src/index.js";
import { connectTest, natsServers, uniqueNamespace } from "../harness/context.js";
import { rejection } from "../harness/async.js";
import { journalMaxMsgSize } from "../../src/streams/declared.js";

const HOUR = 3600e9;

let nc: NatsConnection;
let jsm: JetStreamManager;
const created: string[] = [];

beforeAll(async () => {
  nc = await connectTest();
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  for (const s of created) await jsm.streams.delete(s).catch(() => undefined);
});

/** A bus on a namespace of its own; its stream is deleted after the file. */
function freshBus(options: { maxEventBytes?: number } = {}): Jetloop {
  const bus = fromConnection(nc, { namespace: uniqueNamespace(), ...options });
  created.push(bus.stream, bus.parked.stream);
  return bus;
}

async function liveConfig(stream: string): Promise<StreamConfig> {
  return (await jsm.streams.info(stream)).config;
}

function declared(bus: Jetloop): Record<string, unknown> {
  return declaredStreamConfig({ namespace: bus.namespace, stream: bus.stream, maxEventBytes: bus.settings.maxEventBytes, replicas: 1 });
}

describe("provision", () => {
  it("creates the declared stream, then changes nothing however often it runs", async () => {
    const bus = freshBus();
    expect(await bus.provision()).toEqual({
      stream: bus.stream,
      action: "created",
      drift: [],
      parked: { stream: bus.parked.stream, action: "created", drift: [] },
      warnings: [],
      durability: { profile: "default", settings: [], warnings: [] },
    });
    const live = await liveConfig(bus.stream);
    expect(diffStreamConfig(live as unknown as Record<string, unknown>, declared(bus))).toEqual([]);
    expect(live).toMatchObject({
      name: bus.stream,
      subjects: [`${bus.namespace}.journal.>`],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      num_replicas: 1,
      duplicate_window: 2 * 60e9,
      max_msg_size: journalMaxMsgSize(bus.settings),
      // No retention unless asked for: the journal is kept.
      max_age: 0,
      max_bytes: -1,
      allow_direct: true,
      deny_delete: true,
    });
    expect(await liveConfig(bus.parked.stream)).toMatchObject({
      subjects: [`${bus.namespace}.parked.>`],
      storage: StorageType.File,
      discard: DiscardPolicy.New,
      max_msgs_per_subject: 1,
      max_age: 0,
    });
    await bus.publish(createEvent("SessionStarted", { sessionId: newId() }));
    const before = await jsm.streams.info(bus.stream);

    const unchanged = { stream: bus.stream, action: "unchanged", drift: [], parked: { stream: bus.parked.stream, action: "unchanged", drift: [] }, warnings: [], durability: { profile: "default", settings: [], warnings: [] } };
    for (let i = 0; i < 3; i++) expect(await bus.provision()).toEqual(unchanged);
    expect(await bus.provision({ mode: "verify" })).toEqual(unchanged);
    // Another process (its own connection) sees the same.
    const other = await connect({ servers: natsServers(), namespace: bus.namespace });
    try {
      expect((await other.provision()).action).toBe("unchanged");
    } finally {
      await other.close();
    }
    const after = await jsm.streams.info(bus.stream);
    expect(after.config).toEqual(before.config);
    expect(after.created).toBe(before.created);
    expect(after.state.messages).toBe(1);
  });

  it("in verify mode reports a missing stream and creates nothing", async () => {
    const bus = freshBus();
    expect(await bus.provision({ mode: "verify" })).toEqual({
      stream: bus.stream,
      action: "drifted",
      drift: [{ field: "name", live: undefined, desired: bus.stream, updatable: true }],
      parked: { stream: bus.parked.stream, action: "drifted", drift: [{ field: "name", live: undefined, desired: bus.parked.stream, updatable: true }] },
      warnings: [],
      durability: { profile: "default", settings: [], warnings: [] },
    });
    expect(await rejection(jsm.streams.info(bus.stream))).toBeTruthy();
    expect(await rejection(jsm.streams.info(bus.parked.stream))).toBeTruthy();
  });

  it("reports a hand-changed mutable field as drift: verify leaves it, apply corrects it and keeps the messages", async () => {
    const bus = freshBus();
    await bus.provision();
    const r = await bus.publish(createEvent("SessionStarted", { sessionId: newId() }));
    await jsm.streams.update(bus.stream, { ...(await liveConfig(bus.stream)), max_age: HOUR, duplicate_window: 30e9 });

    const drift = [
      { field: "duplicate_window", live: 30e9, desired: 2 * 60e9, updatable: true },
      { field: "max_age", live: HOUR, desired: 0, updatable: true },
    ];
    const verified = await bus.provision({ mode: "verify" });
    expect(verified.action).toBe("drifted");
    expect(verified.drift).toEqual(expect.arrayContaining(drift));
    expect(verified.drift).toHaveLength(2);
    expect(await liveConfig(bus.stream)).toMatchObject({ max_age: HOUR, duplicate_window: 30e9 });

    const applied = await bus.provision();
    expect(applied.action).toBe("updated");
    expect(applied.drift).toEqual(verified.drift);
    expect(await liveConfig(bus.stream)).toMatchObject({ max_age: 0, duplicate_window: 2 * 60e9 });
    expect(await bus.provision()).toMatchObject({ action: "unchanged", drift: [] });
    // The update kept the journal.
    expect((await jsm.streams.getMessage(bus.stream, { seq: r.journalSeq }))?.seq).toBe(r.journalSeq);
  });

  it("reports a bus with another maxEventBytes as max_msg_size drift", async () => {
    const bus = freshBus();
    await bus.provision();
    const bigger = fromConnection(nc, { namespace: bus.namespace, maxEventBytes: 4 * 1024 * 1024 });
    expect(await bigger.provision({ mode: "verify" })).toMatchObject({
      stream: bus.stream,
      action: "drifted",
      drift: [{ field: "max_msg_size", live: journalMaxMsgSize(bus.settings), desired: journalMaxMsgSize(bigger.settings), updatable: true }],
      parked: { action: "unchanged" },
    });
    expect((await liveConfig(bus.stream)).max_msg_size).toBe(journalMaxMsgSize(bus.settings));
  });

  it("refuses an incompatible live stream (memory storage, work-queue retention) with ProvisionDriftError and leaves it untouched", async () => {
    const cases: [Partial<StreamConfig>, string, unknown, unknown][] = [
      [{ storage: StorageType.Memory }, "storage", "memory", "file"],
      [{ retention: RetentionPolicy.Workqueue }, "retention", "workqueue", "limits"],
    ];
    for (const [override, field, live, desired] of cases) {
      const bus = freshBus();
      await jsm.streams.add({ name: bus.stream, subjects: [`${bus.namespace}.journal.>`], ...override });
      await nc.request(`${bus.namespace}.journal.kept`, "by hand", { timeout: 5000 });
      const before = await jsm.streams.info(bus.stream);

      for (const mode of ["apply", "verify"] as const) {
        const err = await rejection(bus.provision({ mode }));
        expect(err, `${field} ${mode}`).toBeInstanceOf(ProvisionDriftError);
        expect(err).toMatchObject({ code: "PROVISION_DRIFT", stream: bus.stream });
        expect((err as ProvisionDriftError).drift).toContainEqual(expect.objectContaining({ field, live, desired }));
        // Only the fields the stream cannot take are named.
        expect((err as ProvisionDriftError).drift.every((d) => ["name", "storage", "retention"].includes(d.field))).toBe(true);
      }
      const after = await jsm.streams.info(bus.stream);
      expect(after.config).toEqual(before.config);
      expect(after.created).toBe(before.created);
      expect(after.state.messages).toBe(1);
    }
  });

  it("reports an update the server refuses (deny_purge set by hand cannot be cancelled) as PROVISION_DRIFT, unchanged", async () => {
    const bus = freshBus();
    await bus.provision();
    await jsm.streams.update(bus.stream, { ...(await liveConfig(bus.stream)), deny_purge: true });
    const before = await liveConfig(bus.stream);
    expect((await bus.provision({ mode: "verify" })).drift).toEqual([{ field: "deny_purge", live: true, desired: false, updatable: true }]);
    const err = await rejection(bus.provision());
    expect(err).toBeInstanceOf(JetloopError);
    expect(err).toMatchObject({ code: "PROVISION_DRIFT" });
    expect(await liveConfig(bus.stream)).toEqual(before);
  });

  it("reports a stream it cannot create (another stream captures the journal subjects) as PROVISION_DRIFT", async () => {
    const bus = freshBus();
    const squatter = `${bus.namespace}_everything`;
    created.push(squatter);
    await jsm.streams.add({ name: squatter, subjects: [`${bus.namespace}.>`] });
    const err = await rejection(bus.provision());
    expect(err).toBeInstanceOf(JetloopError);
    expect(err).toMatchObject({ code: "PROVISION_DRIFT" });
    expect((err as Error).message).toContain(bus.stream);
    expect(await rejection(jsm.streams.info(bus.stream))).toBeTruthy();
  });

  it("makes retention an explicit choice, and warns when it can remove what a durable has not acknowledged", async () => {
    const bus = freshBus();
    await bus.provision();
    const sessionId = newId();
    for (let i = 0; i < 3; i++) await bus.publish(createEvent("SessionStarted", { sessionId }));
    // A durable that has acknowledged nothing: three events are its backlog.
    const sub = await bus.subscribeEvents({ sessions: [sessionId], enduring: "all" }, { durable: "billing", batch: 1, enduringBuffer: 1 });
    await sub.close();

    const limited = await bus.provision({ maxAge: "720h", maxBytes: 1 << 30 });
    expect(limited.action).toBe("updated");
    expect(limited.drift).toEqual(
      expect.arrayContaining([
        { field: "max_age", live: 0, desired: 720 * HOUR, updatable: true },
        { field: "max_bytes", live: -1, desired: 1 << 30, updatable: true },
      ]),
    );
    expect(await liveConfig(bus.stream)).toMatchObject({ max_age: 720 * HOUR, max_bytes: 1 << 30 });
    expect(limited.warnings).toEqual([
      {
        durable: "billing",
        unacknowledged: 3,
        limits: [
          { field: "max_age", value: 720 * HOUR },
          { field: "max_bytes", value: 1 << 30 },
        ],
        message: `stream ${bus.stream} has max_age 720h, max_bytes 1073741824: it can remove events durable billing has not acknowledged (3)`,
      },
    ]);
    // verify reports the limit in force, and drift back to the default, without changing it.
    const verified = await bus.provision({ mode: "verify" });
    expect(verified.warnings.map((w) => w.durable)).toEqual(["billing"]);
    expect(verified.drift.map((d) => d.field).sort()).toEqual(["max_age", "max_bytes"]);
    expect((await bus.consumers()).warnings).toEqual(limited.warnings);
    // Provisioning without the options removes the limits again: nothing to warn of.
    expect((await bus.provision()).warnings).toEqual([]);
    expect(await liveConfig(bus.stream)).toMatchObject({ max_age: 0, max_bytes: -1 });

    for (const bad of [{ maxAge: "soon" }, { maxAge: "0" }, { maxBytes: 0 }, { maxBytes: 1.5 }]) {
      expect(await rejection(bus.provision(bad)), JSON.stringify(bad)).toMatchObject({ code: "OPTIONS_INVALID" });
    }
  });
});
