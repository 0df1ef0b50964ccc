// A preview (ephemeral event) published without permission: core NATS does not answer a
// publish, so jetloop waits for a round trip and rejects with PermissionDeniedError;
// fire-and-forget resolves at once and says it is unconfirmed.
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, createEvent, newId, OptionsError, PermissionDeniedError, type Jetloop } from "../../src/index.js";
import { startServer, type NatsServer } from "../harness/server.js";

let server: NatsServer;
let runtime: Jetloop;
let muted: Jetloop;

const ids = () => ({ sessionId: newId(), loopId: newId(), turnId: newId(), stepId: newId(), toolExecutionId: newId() });
const preview = () => createEvent("ToolCallStarted", { ...ids(), toolName: "bash" });

beforeAll(async () => {
  server = await startServer({
    configText: `authorization { users: [
      { user: runtime, password: rt }
      { user: muted, password: mu, permissions: { publish: { deny: ["pv.live.>"] } } }
    ] }`,
  });
  runtime = await connect({ servers: server.url, namespace: "pv", user: "runtime", pass: "rt" });
  // The refusals are logged as warnings too; keep the test output quiet.
  muted = await connect({ servers: server.url, namespace: "pv", user: "muted", pass: "mu", logger: pino({ level: "silent" }) });
});

afterAll(async () => {
  await muted?.close();
  await runtime?.close();
  await server?.close();
});

describe("previews and permissions", () => {
  it("a refused preview rejects with PermissionDeniedError naming the subject; an allowed one resolves", async () => {
    const e = preview();
    const err = await muted.publish(e).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(err).toBeInstanceOf(PermissionDeniedError);
    expect(err).toMatchObject({ code: "PERMISSION_DENIED", operation: "publish" });
    expect((err as PermissionDeniedError).subject).toMatch(/^pv\.live\./);
    expect(await runtime.publish(preview())).toMatchObject({ journalSeq: 0, duplicate: false });
  });

  it("many refused previews at once each reject; the connection stays usable", async () => {
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => muted.publish(preview())));
    expect(results.every((r) => r.status === "rejected" && r.reason instanceof PermissionDeniedError)).toBe(true);
    expect(muted.nc.isClosed()).toBe(false);
  });

  it("fire-and-forget resolves at once and says the preview is unconfirmed; it is refused for enduring events", async () => {
    expect(await muted.publish(preview(), { fireAndForget: true })).toMatchObject({ journalSeq: 0, unconfirmed: true });
    const decided = createEvent("PermissionDecided", { ...ids(), effect: "approve" });
    await expect(runtime.publish(decided, { fireAndForget: true })).rejects.toBeInstanceOf(OptionsError);
  });
});
