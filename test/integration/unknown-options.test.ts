// Every entry point reaches the one options path before it sends anything: an option key
// it does not know is refused by name (OptionsError), and the call had no effect (the
// unit test options-unknown-keys.test.ts generates the keys; this one proves the wiring
// against a real nats-server).
import type { JetStreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { connect, createEvent, createGatewayHandler, fromConnection, type Jetloop, newId, OptionsError, startGateway } from "../../src/index.js";
import { natsServers, provisionedBus } from "../harness/context.js";

let bus: Jetloop;
let jsm: JetStreamManager;
provisionedBus((b, m) => {
  bus = b;
  jsm = m;
});

async function refusal(call: () => unknown): Promise<OptionsError> {
  let e: unknown;
  try {
    await call();
  } catch (x) {
    e = x;
  }
  expect(e).toBeInstanceOf(OptionsError);
  return e as OptionsError;
}

describe("an unknown option key at each entry point", () => {
  it("connect refuses it before dialing; fromConnection before the bus exists", async () => {
    expect((await refusal(() => connect({ servers: "nats://127.0.0.1:1", namepsace: "x" } as never))).option).toBe("namepsace");
    expect((await refusal(() => connect({ servers: natsServers(), tls: { cafile: "ca.pem" } } as never))).option).toBe("tls.cafile");
    expect((await refusal(() => fromConnection(bus.nc, { servers: natsServers() } as never))).option).toBe("servers");
  });

  it("subscribeEvents: { durabel } is refused, not a feed subscription, and creates no consumer", async () => {
    const before = (await jsm.consumers.list(bus.stream).next()).length;
    expect((await refusal(() => bus.subscribeEvents({ enduring: "all" }, { durabel: "billing" } as never))).option).toBe("durabel");
    expect((await refusal(() => bus.session(newId()).subscribeEvents({ enduring: "all" }, { start: { sqe: 1 } } as never))).option).toBe("start.sqe");
    expect((await refusal(() => bus.subscribeEvents({ enduring: "all" }, { maxDeliver: 2 } as never))).message).toBe("maxDeliver: applies to durable subscriptions only");
    expect((await jsm.consumers.list(bus.stream).next()).length).toBe(before);
  });

  it("replay, publish, publishAll, storedEvents, provision, consumers", async () => {
    const event = createEvent("SessionStarted", { sessionId: newId() });
    expect((await refusal(() => bus.replay({ enduring: "all" }, { formSeq: 1 } as never))).option).toBe("formSeq");
    expect((await refusal(() => bus.publish(event, { expectedLastSeg: 0 } as never))).option).toBe("expectedLastSeg");
    expect((await refusal(() => bus.publishAll([event], { resume: { since: new Date(), untill: 1 } } as never))).option).toBe("resume.untill");
    expect((await refusal(() => bus.storedEvents([event], { since: new Date(), constructor: 1 } as never))).option).toBe("constructor");
    expect((await refusal(() => bus.provision({ replica: 3 } as never))).option).toBe("replica");
    expect((await refusal(() => bus.consumers({ monitors: [] } as never))).option).toBe("monitors");
    // Nothing was published by the refused calls.
    expect((await jsm.streams.info(bus.stream)).state.messages).toBe(0);
  });

  it("the session's commands and serveGates", async () => {
    const session = bus.session(newId());
    expect((await refusal(() => session.answer(newId(), { kind: "permission", toolExecutionId: newId(), effect: "approve" }, { timeout: 1 } as never))).option).toBe("timeout");
    expect((await refusal(() => session.submitInput([{ type: "text", text: "hi" }], { commandID: "x" } as never))).option).toBe("commandID");
    expect((await refusal(() => session.interrupt({ fingerprint: "f" } as never))).option).toBe("fingerprint");
    expect((await refusal(() => bus.serveGates(newId(), newId(), { closeOrphan: true } as never))).option).toBe("closeOrphan");
  });

  it("the gateway's handler and its server", async () => {
    expect((await refusal(() => createGatewayHandler(bus, { tokens: "t" } as never))).option).toBe("tokens");
    expect((await refusal(() => startGateway(bus, { listen: "127.0.0.1:0", insecurePublicbind: true } as never))).option).toBe("insecurePublicbind");
  });
});
