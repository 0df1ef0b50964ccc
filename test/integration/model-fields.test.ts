// MODEL.md's Go-form events through a real nats-server: every field the inventory lists
// (captures, the full manifest, a prompt's origin, a model-facing error…) is published,
// stored byte for byte as the Go runtime writes it, and read back by a replay as it went in.
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type Jetloop, type JetloopEvent, unmarshalEvent } from "../../src/index.js";
import { defaultRegistry } from "../../src/events/catalogue.js";
import { connectTest, natsServers, uniqueNamespace } from "../harness/context.js";
import { CARRIERS } from "../unit/model-carriers.js";

const ns = uniqueNamespace();
let bus: Jetloop;
let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  bus = await connect({ servers: natsServers(), namespace: ns });
  await bus.provision();
  nc = await connectTest();
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  await jsm?.streams.delete(bus.stream).catch(() => undefined);
  await nc?.close();
  await bus?.close();
});

const journal = Object.entries(CARRIERS).filter(([, text]) => defaultRegistry.get((JSON.parse(text) as { type: string }).type)!.class === "enduring");

describe("the inventory's Go-form events on a real server", () => {
  it("stores each as the Go runtime writes it, and a replay reads each back as published", async () => {
    const published: JetloopEvent[] = [];
    for (const [name, text] of journal) {
      const event = unmarshalEvent(text);
      const r = await bus.publish(event);
      const stored = await jsm.streams.getMessage(bus.stream, { seq: r.journalSeq });
      expect(new TextDecoder().decode(stored!.data), name).toBe(text);
      published.push(event);
    }
    const sessions = [...new Set(published.map((e) => e.sessionId))];
    const got: JetloopEvent[] = [];
    for await (const d of bus.replay({ enduring: "all", sessions, includeInternal: true })) got.push(d.event);
    expect(got).toEqual(published);
  });
});
